"""What cubinrun keeps between runs: where (`folders`: the cache root, atomic
writes, use and pruning), launcher entries checked by digest before they are
imported (`launcher_entry`), and listing, clearing and pruning by kind
(`entries`). Parsed cubin facts are cached by binary/cubin_cache.py.
"""
