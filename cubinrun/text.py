"""Small text helpers: formatting for the outputs, human and machine, and
reading a percentage from the command line."""
from __future__ import annotations

import itertools
import math
from typing import Any, Iterable, Iterator, Sequence

from .errors import UsageError, one_line


def human_bytes(n: float) -> str:
    """1536 -> "1.50 KiB"; below 1 KiB plain bytes."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError


def dims(values: Iterable) -> str:
    """(4, 1, 1) -> "4 x 1 x 1"."""
    return " x ".join(str(v) for v in values)


def parse_fraction(text: str | float, option: str) -> float:
    """`3%` or `0.03` (for `option`, named in the error) as a fraction in [0, 1)."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UsageError(f"{option} {text!r}: expected a percentage such as 3% or a "
                         "fraction such as 0.03") from None
    if not raw.endswith("%") and value >= 1:
        raise UsageError(f"{option} {text!r}: write {raw}% for a percentage")
    if not 0 <= value < 1:
        raise UsageError(f"{option} {text!r}: must be between 0% and 100%")
    return value


def plain_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Columns aligned with two spaces, no styling: for tables too long for rich
    (which spends about 2 ms measuring each row: minutes for a 100,000-point
    sweep)."""
    return "\n".join(plain_lines(header, rows))


def plain_lines(header: Sequence[str], rows: Iterable[Sequence[str]],
                rest: Iterable[Sequence[str]] = ()) -> Iterator[str]:
    """plain_table's lines, `rest` streamed after `rows` in columns as wide as
    `rows` made them (a wider cell there pushes its row's next cells right);
    each cell's control characters escaped (errors.one_line: a name from a results
    file may hold a terminal's escape sequences)."""
    rows = [[one_line(str(c)) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]

    # each cell left-justified to its width by one str.format a line (a
    # generator of ljusts costs twice as much: a million-line compare streams here)
    template = "  ".join(f"{{!s:<{w}}}" for w in widths)

    def line(cells) -> str:
        text = (template.format(*cells) if len(cells) == len(widths) else
                "  ".join(str(c).ljust(w) for c, w in zip(cells, widths))).rstrip()
        if text.isprintable():          # one test a line
            return text
        return "  ".join(one_line(str(c)).ljust(w) for c, w in zip(cells, widths)).rstrip()
    yield line(header)
    yield line(["-" * w for w in widths])
    for row in itertools.chain(rows, rest):
        yield line(row)


def finite(value: Any) -> Any:
    """`value` with NaN and infinities as None, so its JSON is valid (null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def counted(n: int, word: str) -> str:
    """3, "commit" -> "3 commits"; 1 -> "1 commit"."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# What GitHub-flavoured Markdown reads as markup (emphasis, code, links, a
# cell's end, `:emoji:`, `$math$`, `@mention`; `.` and `:` make autolinks); a
# backslash makes each literal (CommonMark: any ASCII punctuation may be escaped).
_MARKDOWN_PUNCTUATION = frozenset("\\`*_{}[]()#+-.!|~:$@")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def markdown_text(text: str) -> str:
    """`text` shown as written in GitHub-flavoured Markdown, in a table cell
    too: HTML's `<`, `>`, `&` as entities (`<img ...>` or `reduce<float>`
    are not tags), the rest of the punctuation escaped (no emphasis, link,
    autolink or cell break), control characters escaped as errors.one_line does."""
    return "".join(_HTML.get(c) or ("\\" + c if c in _MARKDOWN_PUNCTUATION else c)
                   for c in one_line(text))
