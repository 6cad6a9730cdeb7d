"""Many runs in one command: specs, folders, sweeps and `--axis` expanded into
runs (`expand`, `axes`), executed with CUDA started once and a kernel fault
confined to its own run (`executor`, `worker`), with a progress bar
(`progress`) and one exit code for them all (`outcome`).

Above the pipeline (one run on a device) and below the CLI; the result files,
`compare` and `plot` live in `cubinrun.results`.
"""
