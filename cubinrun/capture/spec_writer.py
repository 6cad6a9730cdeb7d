"""One spec per captured launch: the kernel (a copy of its Triton cache entry,
or the cubin CUPTI handed over), its arguments with every buffer's contents as
they were just before the launch (`init: {file: ...}`), the grid as launched,
and a check for each buffer the launch changed (`check: {file: ...}`), exact
when a second launch from the same inputs gave the same bytes.

The module globals a CUPTI record saved (each `__constant__` and
`__device__` variable of the kernel's module, as it was at the launch) are the
spec's `globals:`, set before the replay's launch, and checked like a buffer
when the launch changed them.

A header comment names the program and the launch the spec came from, so a
spec in a CI job says where it was captured.
"""
from __future__ import annotations

import functools
import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..dtypes import ELEMENT_TYPES
from .params import NotExpressible, Params, PointerUse, cuda_params, triton_params
from .records import Record, Region

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
MAX_NAME = 48                       # characters of a kernel's name in a spec's file name


@dataclass(frozen=True)
class Written:
    spec: str                       # the spec's file name in the capture folder
    checks: tuple[str, ...]         # buffers it checks
    tolerance: tuple[str, ...]      # of those, the ones checked with a tolerance
    unchecked: tuple[str, ...]      # changed, but not deterministic and not checkable


def write_spec(record: Record, number: int, out: Path, program: str) -> Written:
    """Write the record's spec, its data files and its kernel into `out`."""
    stem = f"{number:04d}-{_SAFE.sub('_', record.kernel)[:MAX_NAME]}"
    if loaded := record.data.get("loaded"):
        # a replay would read the program's old addresses there: a fault, or wrong data
        raise NotExpressible(f"its memory holds {len(loaded)} pointer(s) into other allocations "
                             "(a pointer array the kernel may load): a spec cannot relocate "
                             "pointers inside a buffer yet")
    params = triton_params(record.data) if record.source == "triton" else cuda_params(record.data)
    kernel = _kernel(record, out)
    data_dir = out / "data" / stem
    data_dir.mkdir(parents=True)
    checks, tolerance, unchecked = {}, [], []

    def buffer_for(index: int, use: PointerUse) -> dict:
        region = record.regions[index]
        dtype = _dtype(use.dtype, region.size)
        elements = region.size // ELEMENT_TYPES[dtype].size
        shape = use.shape if use.shape and _product(use.shape) == elements else [elements]
        safe = _SAFE.sub("_", use.name)
        init = data_dir / f"{safe}.npy"
        _save(region.before, dtype, init, shape)
        if region.after is not None:
            check = _check(region, dtype, data_dir / f"{safe}.expected.npy", out, shape)
            if check is None:
                unchecked.append(use.name)
            else:
                checks[use.name] = check
                if not check.get("exact"):
                    tolerance.append(use.name)
        return {"shape": shape, "dtype": dtype, "init": {"file": _rel(init, out)}}

    module_globals = {}
    try:
        params.relocate(buffer_for)
        for index, region in enumerate(record.regions):
            if region.global_name is not None:   # the module's, as the launch found it
                module_globals[region.global_name] = buffer_for(
                    index, PointerUse(region.global_name, index, 0))
    except NotExpressible:
        shutil.rmtree(data_dir)                 # no spec, so none of its data
        raise
    raw = [name for name, ty in params.signature.items() if re.fullmatch(r"u(8|16|32|64)", ty)]
    if raw and "cubin" in kernel:
        # CUPTI hands over bytes, written as unsigned words of their width: the C++
        # type (int, float) may differ, and the bytes are what the program passed
        kernel["reinterpret"] = raw
    spec = {"kernel": kernel}
    if params.signature:
        spec["signature"] = params.signature
    if params.constants:
        spec["constants"] = params.constants
    if module_globals:
        spec["globals"] = module_globals
    spec["args"] = params.args
    spec.update(_geometry(record))
    if checks:
        spec["check"] = checks
    path = out / f"{stem}.yaml"
    with open(path, "x") as f:
        f.write(_header(record, program, unchecked))
        f.write(yaml.safe_dump(spec, sort_keys=False, default_flow_style=None, width=100))
    return Written(path.name, tuple(checks), tuple(tolerance), tuple(unchecked))


def _kernel(record: Record, out: Path) -> dict:
    process = record.folder.parent
    if record.source == "triton":
        entry = process / record.data["entry"]
        target = out / "kernels" / entry.parent.name
        if not target.exists():
            shutil.copytree(entry.parent, target)
        return {"triton": _rel(target / entry.name, out)}
    data = _module(record, process)
    target = out / "kernels" / f"{hashlib.sha256(data).hexdigest()[:20]}.cubin"
    if not target.exists():
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(data)
    return {"cubin": _rel(target, out), "name": record.kernel}


def _module(record: Record, process: Path) -> bytes:
    """The cubin that defines the kernel: from the module the library matched to
    the launch when it does, else its library's saved image, else the first
    module or library of the process that does (a runtime kernel whose module
    loaded lazily, before the launch, e.g. inside the runtime's
    cudaFuncGetAttributes). A fatbin's cubins count, compressed ones unpacked
    (module_images.py), the one for the device's arch (`arch`) when the record
    says it. Only a cubin that defines the kernel will do: on the H200 PyTorch's
    kernels were matched to modules that merely named them, and their specs
    failed with "it has none"."""
    data = record.data
    matched = process / data["module"] if data.get("module") else None
    library = process / data["library"] if data.get("library") else None
    candidates = [p for p in (matched, library) if p is not None and p.is_file()]
    candidates += sorted((process / "modules").glob("m*.cubin"))
    candidates += sorted((process / "libraries").glob("l*.bin"))
    symbol = record.kernel.encode() + b"\0"
    for path in dict.fromkeys(candidates):
        with open(path, "rb") as f:
            if f.read(4) == b"\x7fELF" and symbol not in path.read_bytes():
                continue            # a plain cubin that does not even name it: not parsed
        fitting = [(sm, cubin) for sm, variant, names, cubin in _cubins_of(path)
                   if record.kernel in names and _runs_on(sm, variant, data.get("arch"))]
        if fitting:
            return max(fitting, key=lambda found: found[0])[1]
    if matched is not None and not matched.is_file():
        raise NotExpressible("the module's cubin was not saved")
    raise NotExpressible("no module the process loaded defines this kernel")


@functools.lru_cache(maxsize=64)        # each record of a process looks through the same files
def _cubins_of(path: Path) -> tuple[tuple[int, str, frozenset, bytes], ...]:
    """(sm, variant, kernel names, cubin) of each cubin a saved image holds."""
    from ..binary.cubin import read_cubin
    from ..errors import CubinrunError
    from .module_images import cubins_in
    found = []
    for cubin in cubins_in(path.read_bytes()):
        try:
            info = read_cubin(cubin)
        except CubinrunError:
            continue                # PTX or a damaged image: no kernel's cubin
        found.append((info.sm, info.variant, frozenset(k.name for k in info.kernels), cubin))
    return tuple(found)


def _runs_on(sm: int, variant: str, arch: str | None) -> bool:
    if not arch:
        return True
    from ..binary.validate import arch_runs_on
    digits = "".join(ch for ch in arch.removeprefix("sm_") if ch.isdigit())
    return not digits or arch_runs_on(sm, variant, int(digits))


def _geometry(record: Record) -> dict:
    data = record.data
    geometry = {"grid": [int(g) for g in data["grid"]]}
    if record.source == "triton":
        return geometry                 # block, shared and the rest come from the entry
    geometry["block"] = [int(b) for b in data["block"]]
    launch = {}
    if int(data.get("shared", 0)):
        launch["shared"] = int(data["shared"])
    if data.get("cooperative"):
        launch["cooperative"] = True
    cluster = data.get("cluster")
    if cluster and any(int(c) > 1 for c in cluster):
        launch["cluster"] = [int(c) for c in cluster]
    if launch:
        geometry["launch"] = launch
    return geometry


def _check(region: Region, dtype: str, path: Path, out: Path, shape: list) -> dict | None:
    """Exact, unless a second launch differed: then a tolerance from how far the
    two launches' floats were apart, and no check for bytes that are not floats."""
    _save(region.after, dtype, path, shape)
    if region.again is None:
        return {"file": _rel(path, out), "exact": True}
    element = ELEMENT_TYPES[dtype]
    if not element.is_float:
        return None
    import numpy as np
    first, second = (_array(p, dtype).astype(np.float64) for p in (region.after, region.again))
    apart = np.abs(first - second)
    spread = float(np.nanmax(apart)) if apart.size and not np.all(np.isnan(apart)) else 0.0
    return {"file": _rel(path, out), "rtol": 1e-3, "atol": max(4 * spread, 1e-6)}


def _dtype(pointee: str, size: int) -> str:
    """The pointee's type when the region holds whole elements of it, else bytes."""
    element = ELEMENT_TYPES.get(pointee)
    return pointee if element is not None and size % element.size == 0 else "u8"


def _array(path: Path, dtype: str):
    import numpy as np
    return np.fromfile(path, dtype=np.uint8).view(ELEMENT_TYPES[dtype].numpy_dtype())


def _save(raw: Path, dtype: str, path: Path, shape: list) -> None:
    import numpy as np
    with open(path, "xb") as f:
        np.save(f, _array(raw, dtype).reshape(shape), allow_pickle=False)


def _product(values) -> int:
    result = 1
    for value in values:
        result *= int(value)
    return result


def _header(record: Record, program: str, unchecked: list[str]) -> str:
    data = record.data
    lines = [f"Captured by cubinrun capture from: {program}",
             f"Launch {data.get('program_launch', '?')} of process {data.get('pid', '?')} "
             f"({record.source}): {record.kernel}, grid {list(data['grid'])}"
             + (f", block {list(data['block'])}" if "block" in data else ""),
             "Its inputs are the buffers as they were just before that launch; each check is "
             "what the launch left."]
    if data.get("graph"):
        lines.append(f"A kernel node of a CUDA graph ({data['graph']}), captured as the graph "
                     "first ran")
    if data.get("extra"):
        lines.append("Its parameters came through `extra` (one buffer), split by the kernel's "
                     "parameter layout")
    if unchecked:
        lines.append(f"Not checked (a second launch gave other bytes): {', '.join(unchecked)}")
    return "".join(f"# {line}\n" for line in lines)


def _rel(path: Path, out: Path) -> str:
    return path.relative_to(out).as_posix()
