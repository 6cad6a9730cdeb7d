"""The files a run needs, carried to a worker that need not share this file
system (the Ray backend), and the run executed there as if it were here.

Here: `needed_files(task)` lists what the run reads: the spec, its binary (a
cubin, PTX, a `.cu` source and the local headers it includes, a Triton
entry's `.json`, `.cubin` and `.source`), and the `.npy` files of `init:
{file}` and `check: {file}` (globals' too), and the Python file of `check:
{reference}`. The spec is loaded at the task's point to know them (a
`{NAME}` in the kernel's path picks the binary per point); one that
names device values (`sm_count`, ...) is loaded with a known GPU's values
for this, since no GPU is at hand here and only the files matter. A spec
that does not load sends only its own file: the worker then fails the run
with the same error a local run gives.

There: a `Mirror` puts each file at its root + the path it has here, and the
run executes with the working directory at root + this process's working
directory, so the spec's relative paths (kernel, data, headers, `-I`
folders, `save:`) resolve inside the mirror exactly as they do here; an
absolute path in a spec must exist on the worker as it is. What the record
says about paths has the root taken out again, and the files the run saved
come back as bytes and are written here, at the paths a local run writes.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from ..files import outputs_inside
from .expand import RunTask
from .outcome import RunRecord


def needed_files(task: RunTask) -> list[Path]:
    """Absolute paths (not following links) of every file the run reads."""
    spec = _load(task)
    if spec is None:
        return [_absolute(Path(task.spec))] if Path(task.spec).is_file() else []
    files = [Path(task.spec)]
    kernel = spec.kernel
    files.append(kernel.path)
    if kernel.kind == "triton":
        files += [kernel.path.with_suffix(".cubin"), kernel.path.with_suffix(".source")]
    elif kernel.kind == "source":
        from ..binary.includes import include_dirs_in, local_headers
        try:
            files += local_headers(kernel.path.read_bytes(), kernel.path,
                                   [*map(str, kernel.include), *include_dirs_in(kernel.options)])
        except OSError:
            pass                            # the worker says it cannot read the source
    files += [b.init.path for b in (*spec.buffers.values(), *spec.globals.values())
              if b.init.path is not None]
    files += [c.file for c in spec.checks if c.file is not None]
    files += [c.reference.path for c in spec.checks if c.reference is not None]
    seen: dict[Path, None] = {}
    for path in files:
        if path.is_file():
            seen.setdefault(_absolute(path))
    return list(seen)


def _load(task: RunTask):
    """The spec at the task's point, or None if it does not load."""
    from ..errors import CubinrunError
    from ..specfile import load_spec
    from ..specfile.device_values import KNOWN_GPUS, for_arch
    for device in (None, *map(for_arch, KNOWN_GPUS)):
        try:
            return load_spec(task.spec, task.overrides, device=device)
        except CubinrunError:
            continue
    return None


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(path))


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()


class Mirror:
    """This machine's copy of the files runs need, under a private root."""

    def __init__(self, root: Path | None = None):
        # absolute and without links: a run changes the working directory,
        # and containment is judged against the folder itself
        self.root = Path(os.path.realpath(root or tempfile.mkdtemp(prefix="cubinrun-files-")))
        self._have: dict[str, str] = {}         # path here -> digest of what is there

    def local(self, path: str) -> Path:
        """Where the file at `path` (absolute, as the launch process sees it) lies
        here; UsageError for a path that could lead out of the root (`..`)."""
        from ..errors import UsageError, shorten
        p = Path(path)
        if not p.is_absolute() or ".." in p.parts:
            raise UsageError(f"{shorten(path, 600)}: not a plain absolute path, so it could "
                             "lead out of the worker's private folder; the files a run "
                             "carries stay inside")
        return self.root / p.relative_to(p.anchor)

    def relative(self, here: Path, path: str) -> str:
        """`path`, relative to `here` (a folder in the mirror), if it stays in
        the mirror. Here `../` above `/` stops there; in the mirror it would
        climb out of the root to this machine's own files: UsageError."""
        from ..errors import UsageError
        if not Path(os.path.normpath(here / path)).is_relative_to(self.root):
            raise UsageError("the path climbs above the top folder, so on a worker it would "
                             "lead out of its private folder; name the file without the extra "
                             "'../'")
        return path

    def missing(self, manifest: dict[str, str]) -> list[str]:
        """The paths of `manifest` ({path: digest}) whose content is not here yet."""
        return [path for path, d in manifest.items() if self._have.get(path) != d]

    def write(self, path: str, data: bytes) -> None:
        """`data` as the file at `path` in the mirror. The class keeps it inside
        whatever its callers checked: a path that climbs out (`..`) is refused
        (local), a folder on the way that is a link (a run may make one) is
        refused rather than followed, and the file is written as every output
        is (files.OutputFile: a new file that takes the name, never through a
        link), so nothing lands outside the root."""
        from ..errors import UsageError
        from ..files import OutputFile
        target = self.local(path)
        self.root.mkdir(parents=True, exist_ok=True)
        folder = self.root
        for part in target.parent.relative_to(self.root).parts:
            folder = folder / part
            if os.path.islink(folder):
                raise UsageError(f"{path}: {self.unmap(str(folder))} is a link in the worker's "
                                 "private folder; a carried file is never written through one")
            folder.mkdir(exist_ok=True)
        if not Path(os.path.realpath(target.parent)).is_relative_to(self.root):
            raise UsageError(f"{path}: it would lead out of the worker's private folder")
        with OutputFile(target) as out:
            out.file.write(data)
        self._have[path] = digest(data)

    def unmap(self, text: str) -> str:
        return text.replace(str(self.root), "")

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def run_mirrored(runner, mirror: Mirror, task: RunTask, cwd: str) -> tuple[RunRecord, dict]:
    """Run `task` from `mirror` with `runner` (worker.Runner) as if from `cwd`.
    Returns the record (paths as they are at the launch process) and the
    files the run saved, {path as the spec names it: bytes}."""
    from ..errors import CubinrunError
    here = mirror.local(cwd)
    try:                                # a spec path the mirror cannot hold fails its run only
        spec = (str(mirror.local(task.spec)) if os.path.isabs(task.spec)
                else mirror.relative(here, task.spec))
    except CubinrunError as error:
        return RunRecord.failed(task, error).portable(), {}
    here.mkdir(parents=True, exist_ok=True)
    previous = os.getcwd()
    os.chdir(here)
    try:
        with outputs_inside(mirror.root):          # `save:` stays in the mirror too
            record = runner.execute(replace(task, spec=spec))
        saved = {}
        for path in (record.result or {}).get("saved", []):
            try:
                saved[mirror.unmap(path)] = Path(path).read_bytes()
            except OSError:
                pass
    finally:
        os.chdir(previous)
    record.task = task
    record.portable()
    if record.result:
        record.result = _unmapped(record.result, mirror)
    record.error = mirror.unmap(record.error) if record.error else record.error
    record.log = mirror.unmap(record.log)
    return record, saved


def _unmapped(value, mirror: Mirror):
    if isinstance(value, str):
        return mirror.unmap(value)
    if isinstance(value, dict):
        return {k: _unmapped(v, mirror) for k, v in value.items()}
    if isinstance(value, list):
        return [_unmapped(v, mirror) for v in value]
    return value


def write_saved(saved: dict[str, bytes]) -> None:
    """The files a remote run saved, written where a local run writes them."""
    from ..files import write_output
    for path, data in saved.items():
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_output(target, data, force=True, option="save:")
