"""`cubinrun cache info|clear|prune`: what the cache holds and emptying it, as
`pip cache` and Triton's cache folder have taught people to expect."""
from __future__ import annotations

import sys

import click

from ..platform import WINDOWS
from .common import console, json_option

_NAMES = {"launchers": ("launcher", "launchers"), "nvrtc": ("NVRTC cubin", "NVRTC cubins"),
          "nvjitlink": ("nvJitLink cubin", "nvJitLink cubins"),
          "cubins": ("parsed cubin", "parsed cubins")}


@click.group("cache")
def cache() -> None:
    """Show, clear or prune what cubinrun caches: launchers, compiled cubins,
    parsed cubin facts (in $CUBINRUN_CACHE_DIR, else $XDG_CACHE_HOME/cubinrun,
    else ~/.cache/cubinrun)."""


@cache.command()
@json_option
def info(as_json: bool) -> None:
    """Where the cache is, its size and its entries of each kind."""
    from ..cache.folders import PRUNE_STAMP, PRUNE_UNUSED_DAYS, cache_root
    from ..cache.entries import iso_time, summarize
    root = cache_root()
    kinds = summarize(root)
    try:
        last_prune = iso_time((root / PRUNE_STAMP).stat().st_mtime)
    except OSError:
        last_prune = None
    total = sum(k.bytes for k in kinds)
    if as_json:
        from .report import print_json
        print_json({"root": str(root), "bytes": total,
                    "kinds": {k.kind.name: k.to_json() for k in kinds},
                    "prune": {"unused_days": PRUNE_UNUSED_DAYS, "last": last_prune}})
        return
    from rich.markup import escape
    from rich.table import Table

    from ..text import human_bytes
    out = console()
    out.print(escape(f"cache {root}" + ("" if root.is_dir() else " (not created yet)")))
    table = Table(show_edge=False, pad_edge=False)
    for column in ("kind", "entries", "size", "oldest last use", "holds"):
        table.add_column(column, justify="right" if column in ("entries", "size") else "left")
    for k in kinds:
        table.add_row(k.kind.name, str(k.entries), human_bytes(k.bytes),
                      (iso_time(k.oldest_use) or "").replace("T", " "),
                      k.kind.what + (f" (+{k.temporary_files} unfinished writes)"
                                     if k.temporary_files else ""))
    table.add_row("total", str(sum(k.entries for k in kinds)), human_bytes(total), "", "")
    out.print(table)
    out.print(f"entries unused for {PRUNE_UNUSED_DAYS} days are removed once a day, when "
              f"cubinrun next writes to the cache (last: {last_prune or 'never'})",
              markup=False)


@cache.command()
@click.option("--launchers", is_flag=True, help="Only the launchers.")
@click.option("--nvrtc", is_flag=True, help="Only the cubins NVRTC and nvJitLink compiled.")
@click.option("--cubins", is_flag=True, help="Only the parsed cubin facts.")
@json_option
def clear(launchers: bool, nvrtc: bool, cubins: bool, as_json: bool) -> None:
    """Remove cached entries (all of them, or the kinds named). Files that cannot
    be removed (a launcher a running process has loaded, on Windows) are kept
    and listed; that is not an error."""
    from ..cache.folders import cache_root
    from ..cache.entries import KIND_NAMES, clear as clear_entries
    chosen = (("launchers",) * launchers + ("nvrtc", "nvjitlink") * nvrtc
              + ("cubins",) * cubins) or KIND_NAMES
    root = cache_root()
    _report(root, clear_entries(root, chosen), as_json, "removed")


@cache.command()
@click.option("--days", type=click.IntRange(0, 100_000), default=None, metavar="N",
              help="Remove entries not used for N days (default: the automatic pruning's).")
@json_option
def prune(days: int | None, as_json: bool) -> None:
    """Remove the entries not used for a while now (cubinrun also does this by
    itself, once a day)."""
    from ..cache.folders import PRUNE_UNUSED_DAYS, cache_root
    from ..cache.entries import prune as prune_entries
    root = cache_root()
    days = PRUNE_UNUSED_DAYS if days is None else days
    _report(root, prune_entries(root, days * 24 * 3600), as_json, f"removed (unused {days} days)")


def _report(root, removal, as_json: bool, verb: str) -> None:
    from ..text import human_bytes
    if as_json:
        from .report import print_json
        print_json({"root": str(root), **removal.to_json()})
        return
    counts = ", ".join(f"{n} {_NAMES[kind][n != 1]}" for kind, n in removal.removed.items())
    sys.stderr.write(f"{verb} {counts} ({human_bytes(removal.bytes)}) from {root}\n")
    if removal.kept:
        path, why = removal.kept[0]
        more = f" and {len(removal.kept) - 1} more" if len(removal.kept) > 1 else ""
        hint = ("; a launcher that a running cubinrun has loaded stays until that process "
                "ends" if WINDOWS else "")
        sys.stderr.write(f"kept {len(removal.kept)} file{'s' * (len(removal.kept) > 1)} that "
                         f"could not be removed: {path} ({why}){more}{hint}\n")
