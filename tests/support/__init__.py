"""What several test folders share: paths, platform skips, the CLI in this
process, sample specs, and the helpers of the many-runs, tune, history and
repro tests. pyproject.toml puts tests/ on sys.path, so a test imports these
as `support.<module>` wherever its folder is; no test imports another test."""
