"""Loaded by the captured program's Python (`cubinrun capture` puts this folder
first on its PYTHONPATH): installs the Triton hook, then runs the
sitecustomize this one hides, so the program starts as it would without
capture. Only the standard library is imported here: the program's Python
need not be cubinrun's."""
import os
import sys


def _run_hidden_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in sys.path:
        if not folder or os.path.abspath(folder) == here:
            continue
        path = os.path.join(folder, "sitecustomize.py")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                code = compile(f.read(), path, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": path})
            return


if os.environ.get("CUBINRUN_CAPTURE_DIR"):
    try:
        import cubinrun_triton_hook
        cubinrun_triton_hook.install()
    except Exception as exc:        # the program must run even when the hook cannot
        sys.stderr.write(f"cubinrun capture: Triton hook not installed: {exc}\n")
_run_hidden_sitecustomize()
