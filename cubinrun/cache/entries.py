"""What the cache holds, by kind: listed (`cubinrun cache info`), cleared
(`cubinrun cache clear`) and pruned (entries unused for a month, see folders.py).

Only files cubinrun itself names are touched, in the kind folders of the cache
root (launchers/, nvrtc/, nvjitlink/, cubins/): the root may be any folder a
user pointed CUBINRUN_CACHE_DIR at, so nothing else there is listed or
removed, and links are removed as links, never followed. An entry is the files
that share a key (an NVRTC cubin and its JSON; a launcher, the .ref naming it
with its digest and, on Windows, the linker's files beside it); `.tmp` / `.partial` files are writes that a killed
process left behind. A file that cannot be removed (a launcher loaded by a
running process on Windows, a file without permission) is skipped and
reported, never an error: the cache is only ever a copy.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

_HEX_KEY = re.compile(r"[0-9a-f]{64}\.")


@dataclass(frozen=True)
class Kind:
    name: str                   # the folder, and the name `clear` options use
    what: str
    pattern: re.Pattern         # the files of this kind that cubinrun writes

    def key(self, file_name: str) -> str:
        """The entry a file belongs to: its name up to the key's end."""
        parts = file_name.lstrip(".").split(".")
        return ".".join(parts[:2] if self.name == "launchers" else parts[:1])


KINDS = (
    Kind("launchers", "C extensions that launch kernels",
         re.compile(r"\.?cubinrun_launcher_\w+\.")),
    Kind("nvrtc", "cubins compiled by NVRTC from .cu sources", _HEX_KEY),
    Kind("nvjitlink", "cubins linked by nvJitLink from PTX", _HEX_KEY),
    Kind("cubins", "parsed cubin facts", _HEX_KEY),
)
KIND_NAMES = tuple(kind.name for kind in KINDS)
_TEMPORARY = (".tmp", ".partial")


@dataclass
class Entry:
    key: str
    files: list[os.DirEntry] = field(default_factory=list)
    bytes: int = 0
    last_use: float = 0.0       # the latest access or change of any of its files
    temporary: bool = False


def entries(root: Path, kind: Kind) -> list[Entry]:
    """The entries of one kind (none when its folder is missing or unreadable)."""
    found: dict[str, Entry] = {}
    if os.path.islink(root / kind.name):
        return []                   # another folder: never listed or emptied through a link
    try:
        listing = list(os.scandir(root / kind.name))
    except OSError:
        return []
    for item in listing:
        if not kind.pattern.match(item.name):
            continue
        try:
            if not (item.is_file(follow_symlinks=False) or item.is_symlink()):
                continue
            st = item.stat(follow_symlinks=False)
        except OSError:
            continue
        temporary = item.name.endswith(_TEMPORARY)
        key = ("~" if temporary else "") + kind.key(item.name)
        entry = found.setdefault(key, Entry(key, temporary=temporary))
        entry.files.append(item)
        entry.bytes += st.st_size
        entry.last_use = max(entry.last_use, st.st_atime, st.st_mtime)
    return list(found.values())


@dataclass
class KindSummary:
    kind: Kind
    folder: Path
    entries: int = 0
    bytes: int = 0
    temporary_files: int = 0
    oldest_use: float | None = None

    def to_json(self) -> dict:
        return {"folder": str(self.folder), "what": self.kind.what, "entries": self.entries,
                "bytes": self.bytes, "temporary_files": self.temporary_files,
                "oldest_use": iso_time(self.oldest_use)}


def summarize(root: Path) -> list[KindSummary]:
    out = []
    for kind in KINDS:
        summary = KindSummary(kind, root / kind.name)
        for entry in entries(root, kind):
            summary.bytes += entry.bytes
            if entry.temporary:
                summary.temporary_files += len(entry.files)
                continue
            summary.entries += 1
            if summary.oldest_use is None or entry.last_use < summary.oldest_use:
                summary.oldest_use = entry.last_use
        out.append(summary)
    return out


@dataclass
class Removal:
    """What clear or prune did: entries and bytes removed per kind, and the
    files it had to leave."""
    removed: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    kept: list[tuple[str, str]] = field(default_factory=list)   # (path, why)

    def to_json(self) -> dict:
        return {"removed": self.removed, "bytes": self.bytes,
                "kept": [{"path": p, "reason": why} for p, why in self.kept]}


def clear(root: Path, kinds: tuple[str, ...] = KIND_NAMES) -> Removal:
    """Remove every entry of these kinds."""
    return _remove(root, kinds, lambda entry: True)


def prune(root: Path, unused_s: float, now: float | None = None) -> Removal:
    """Remove the entries not used for `unused_s` seconds, and writes left
    behind for more than a day."""
    now = time.time() if now is None else now
    return _remove(root, KIND_NAMES, lambda entry: now - entry.last_use > (
        min(unused_s, 24 * 3600) if entry.temporary else unused_s))


def _remove(root: Path, kinds, wanted) -> Removal:
    done = Removal()
    for kind in KINDS:
        if kind.name not in kinds:
            continue
        count = 0
        for entry in entries(root, kind):
            if not wanted(entry):
                continue
            left = 0
            for item in entry.files:
                try:
                    size = item.stat(follow_symlinks=False).st_size
                    os.unlink(item.path)
                    done.bytes += size
                except FileNotFoundError:
                    pass                # another process removed it first
                except OSError as exc:
                    left += 1
                    done.kept.append((item.path, exc.strerror or str(exc)))
            count += not left and not entry.temporary
        done.removed[kind.name] = count
    return done


def iso_time(stamp: float | None) -> str | None:
    if stamp is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(stamp))
