"""What `cubinrun capture` puts first on the captured program's PYTHONPATH.
Nothing imports this package: the folder itself goes on the path, so that the
program's Python finds `sitecustomize` here (program.py, hook_folder)."""
