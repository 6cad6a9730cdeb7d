"""A module cubinrun needs that is not installed, said as the package to
install (and the extra that brings it), not as a traceback or a CUDA error.

A broken or `--no-deps` environment lacks a dependency (pyelftools), a user
lacks an optional one (matplotlib for --plot). Python names the module
(`elftools`); pip needs the distribution (`pyelftools`), and where it is an
extra of cubinrun the extra is the thing to install, since it pins the
version cubinrun works with. The extras are read from cubinrun's installed
metadata, so pyproject.toml stays their one list.
"""
from __future__ import annotations

import re

from .errors import EXIT_USAGE, CubinrunError

# Import names whose distribution is named otherwise (the rest are the same).
DISTRIBUTIONS = {"elftools": "pyelftools", "yaml": "pyyaml", "cpp_demangle": "cpp-demangle",
                 "ml_dtypes": "ml-dtypes", "cuda": "cuda-python", "cupti": "cupti-python",
                 "pynvml": "nvidia-ml-py", "psycopg2": "psycopg2-binary"}


class MissingDependency(CubinrunError):
    """A module that is not installed (exit 2: the environment is the user's to fix)."""

    exit_code = EXIT_USAGE

    def __init__(self, module: str, fix: str):
        self.module = module
        super().__init__(f"no module named '{module}': {fix}")


def missing_dependency(error: ModuleNotFoundError,
                       command: str | None = None) -> MissingDependency | None:
    """The error to report for `error`, or None when the module missing is
    cubinrun's own (a bug, not an install to fix). `command`: the command that
    needed it, whose extra is named when several bring the module
    (SQLAlchemy: `history` for `cubinrun history`, `tune` for `cubinrun tune`)."""
    module = (error.name or str(error)).split(".")[0]
    if module == "cubinrun":
        return None
    distribution = DISTRIBUTIONS.get(module, module)
    extra = _extra_of(distribution, command)
    if extra is None:               # no dependency of ours: its package may be named otherwise
        fix = f"install the package that provides it (pip install {distribution}?)"
    elif extra == "":
        fix = f"pip install {distribution} (a dependency of cubinrun: its install is incomplete)"
    else:
        fix = f"pip install 'cubinrun[{extra}]' (which brings {distribution})"
    return MissingDependency(module, fix)


def _extra_of(distribution: str, command: str | None = None) -> str | None:
    """"" for a dependency of cubinrun itself, the extra that has it (not
    `test`; the one named `command` where several have it), or None for neither."""
    from importlib import metadata
    try:
        requirements = metadata.requires("cubinrun") or []
    except metadata.PackageNotFoundError:       # run from a source tree
        requirements = []
    wanted = _normal(distribution)
    extras = []
    for requirement in requirements:
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        if not name or _normal(name.group()) != wanted:
            continue
        extra = re.search(r"""extra\s*==\s*["']([\w.-]+)["']""", requirement)
        if extra is None:
            return ""
        extras.append(extra.group(1))
    if command in extras:
        return command
    return next((e for e in extras if e != "test"), None)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
