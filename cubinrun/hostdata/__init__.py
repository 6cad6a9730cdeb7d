"""The host's side of a launch's data: input arrays made from `init`
(`values`) block by block on worker threads (`threads`), random streams that
match NumPy's sequential draws (`pcgstream`), outputs compared with their
references (`check`) and the dry run's proof that both can be made
(`dry_checks`). No GPU is touched here.
"""
