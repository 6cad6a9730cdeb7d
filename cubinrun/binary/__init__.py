"""The kernel's binary: read (cubins, fatbins), compiled (NVRTC for `source:`,
nvJitLink for `ptx:`) or taken from a Triton cache entry, parsed into the
facts the spec is checked against (`load.load_binary`, `validate.validate`).

Nothing is imported here, so that `inspect` reads a cubin without loading
the spec machinery."""
