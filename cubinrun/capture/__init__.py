"""`cubinrun capture -o DIR -- CMD`: a program run unchanged, the kernels it
launches recorded (the Triton hook in hook/, the CUPTI injection library) and
turned into specs that replay and check themselves (docs/capture.md)."""
