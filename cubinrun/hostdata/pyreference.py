"""`check.OUT: {reference: FILE.py:FUNCTION}`: the user's Python reference, run.

Only a real launch runs it (the loader found the function by parsing the
file). It is called as `FUNCTION(inputs, vars)`: `inputs` maps every buffer
and global to its input as a whole NumPy array, upcast as `expect:` sees it
(float64; int64; uint64 for u64), made only when the function reads it;
`vars` maps vars and scalar args to numbers. It returns the expected array,
or a dict of arrays by output name when several checks name the same
function (it is called once for all of them). Anything it raises, at import
or during the call, is a spec error (exit 2) naming the file and the line
of the function's own code where it happened.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..errors import SpecError, shorten
from ..specfile.model import PythonReference

_modules: dict[tuple, Any] = {}


class RecordingInputs(Mapping):
    """The inputs by name, each made (by `make`) on first use; `read` lists the
    names the function looked at, for the reference cache."""

    def __init__(self, names: list[str], make: Callable[[str], Any]):
        self._names, self._make = names, make
        self._made: dict[str, Any] = {}
        self.read: list[str] = []

    def __getitem__(self, name: str) -> Any:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._made:
            self.read.append(name)
            self._made[name] = self._make(name)
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class RecordingVars(dict):
    """The vars as a plain dict that notes which ones were read."""

    def __init__(self, values: Mapping[str, Any]):
        super().__init__(values)
        self.read: list[str] = []

    def __getitem__(self, name: str) -> Any:
        if name not in self.read:
            self.read.append(name)
        return super().__getitem__(name)

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def _all(self) -> None:                 # iterated: every value may matter
        self.read = list(dict.keys(self))

    def items(self):
        self._all()
        return super().items()

    def values(self):
        self._all()
        return super().values()

    def __iter__(self):
        self._all()
        return super().__iter__()

    def copy(self):
        self._all()
        return dict(self)


def call(reference: PythonReference, inputs: Mapping[str, Any], variables: Mapping[str, Any],
         field: str) -> Any:
    """The function's result (an array or a dict of them), as NumPy arrays."""
    import numpy as np
    function = _function(reference, field)
    try:
        result = function(inputs, variables)
    except Exception as exc:               # the user's code: any exception is theirs
        raise _raised(reference, exc, field) from None
    if isinstance(result, Mapping):
        return {str(k): np.asarray(v) for k, v in result.items()}
    return np.asarray(result)


def _function(reference: PythonReference, field: str) -> Callable:
    path = reference.path
    try:
        stat = path.stat()
    except OSError as exc:
        raise SpecError(f"{path}: cannot read ({exc.strerror})", field=field) from None
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    module = _modules.get(key)
    if module is None:
        digest = hashlib.blake2b(str(path).encode(), digest_size=8).hexdigest()
        spec = importlib.util.spec_from_file_location(f"cubinrun_reference_{digest}", path)
        if spec is None or spec.loader is None:
            raise SpecError(f"{path} cannot be loaded as Python", field=field)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise _raised(reference, exc, field, importing=True) from None
        _modules[key] = module
    function = getattr(module, reference.function, None)
    if not callable(function):
        raise SpecError(f"{path} defines no function {reference.function!r}", field=field)
    return function


def _raised(reference: PythonReference, exc: BaseException, field: str,
            importing: bool = False) -> SpecError:
    """One line: the reference file's line where it raised (its innermost frame
    in that file; the def's line when none is), the exception and its message."""
    line = reference.line
    if isinstance(exc, SyntaxError) and exc.lineno:
        line = exc.lineno
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename) == reference.path and frame.lineno:
            line = frame.lineno
    what = "importing it" if importing else f"{reference.function}()"
    message = shorten(str(exc), 200)
    return SpecError(f"{reference.path}:{line}: {what} raised {type(exc).__name__}"
                     f"{': ' + message if message else ''}", field=field)


def forget_modules() -> None:
    """Drop loaded reference modules (tests that rewrite a file in place)."""
    for module in _modules.values():
        sys.modules.pop(module.__name__, None)
    _modules.clear()
