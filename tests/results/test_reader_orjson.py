"""The JSON lines of a results file are read by orjson where it is installed
and reads them as json would, else by json (issue 46: a million-run compare in
20 s). Both paths must give the same results and the same errors, file and
line included: each case below is read with orjson and with json alone."""
from __future__ import annotations

import json
import math
import re

import pytest

from cubinrun.errors import UsageError
from cubinrun.results import reader

orjson = pytest.importorskip("orjson")

GOOD = {"spec": "s.yaml", "kernel": "k", "point": {"N": 64, "B": 2.0, "T": "f32"},
        "device": {"name": "H200", "ordinal": 0}, "timing": {"median_us": 101.5, "std_us": 0.3}}

# Lines that orjson and json read differently, or that one of them refuses.
LINES = [
    json.dumps(GOOD),
    json.dumps({**GOOD, "point": {"N": 2 ** 64}}),          # orjson: a float
    json.dumps({**GOOD, "point": {"N": -2 ** 63 - 1}}),     # orjson: a float
    json.dumps({**GOOD, "point": {"N": 2 ** 200}}),         # json keeps it, within 256 bits
    json.dumps({**GOOD, "point": {"N": 9 * 10 ** 400}}),    # too wide
    json.dumps({**GOOD, "timing": {"median_us": 0.1234567890123456789}}),
    '{"spec": "s.yaml", "kernel": "k", "timing": {"median_us": 1e400}}',
    '{"spec": "s.yaml", "kernel": "k", "timing": {"median_us": NaN}}',
    '{"spec": "s.yaml", "kernel": "\\ud800"}',               # a lone surrogate: json reads it
    '{"spec": "s.yaml", "kernel": "k",}',
    '{"spec": "s.yaml", "kernel": "k"} x',
    '{"spec": "s.yaml", "kernel": "a\tb"}',
    '{"spec": "s.yaml", "kernel": 3}',
    '{"spec": "s.yaml", "kernel": "k", "kernel": "j"}',
    '[' * 5000 + ']' * 5000,
]


def _read(path):
    try:
        return [(dict(r), r.where, r.place) for r in reader.iter_results(path)]
    except UsageError as exc:
        return str(exc)


@pytest.mark.parametrize("line", LINES)
def test_orjson_and_json_read_each_line_alike(tmp_path, monkeypatch, line):
    path = tmp_path / "r.jsonl"
    # the line second (after a good one): read as JSON lines, its number named
    path.write_text(json.dumps(GOOD) + "\n" + line + "\n")
    assert reader._compiled_loads is not None
    fast = _read(path)
    monkeypatch.setattr(reader, "_compiled_loads", None)
    assert _read(path) == fast
    # and as the first line, where a line json cannot read may be one document
    path.write_text(line + "\n" + json.dumps(GOOD) + "\n")
    plain = _read(path)
    monkeypatch.undo()
    assert _read(path) == plain


def test_values_keep_their_types(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(LINES[1:4]) + "\n")
    points = [r["point"]["N"] for r in reader.iter_results(path)]
    assert points == [2 ** 64, -2 ** 63 - 1, 2 ** 200]
    assert all(type(n) is int for n in points)


def test_bad_line_names_file_and_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + LINES[6] + "\n")
    with pytest.raises(UsageError, match=rf"^{re.escape(str(path))}:3: the number 1e400 is beyond"):
        list(reader.iter_results(path))


def test_floats_read_alike(tmp_path, monkeypatch):
    """Shortest reprs, long mantissas and exponents: the same doubles."""
    import random
    rng = random.Random(46)
    values = [rng.uniform(0, 1e4) for _ in range(300)] + [rng.lognormvariate(0, 30)
                                                        for _ in range(300)]
    texts = [repr(v) for v in values] + [f"{v:.17e}" for v in values] + \
        [f"{v:.18g}" for v in values]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(f'{{"kernel": "k", "timing": {{"median_us": {t}}}}}\n'
                            for t in texts))
    fast = [r["timing"]["median_us"] for r in reader.iter_results(path)]
    monkeypatch.setattr(reader, "_compiled_loads", None)
    plain = [r["timing"]["median_us"] for r in reader.iter_results(path)]
    assert fast == plain and all(math.isfinite(v) for v in fast)
    assert plain == [float(t) for t in texts]


def test_orjson_reads_the_usual_lines(tmp_path, monkeypatch):
    """The fast path is the one taken: every plain line goes through orjson."""
    calls = []

    def counted(line):
        calls.append(line)
        return orjson.loads(line)
    monkeypatch.setattr(reader, "_compiled_loads", counted)
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({**GOOD, "point": {"N": n}}) + "\n" for n in range(5)))
    assert [r["point"]["N"] for r in reader.iter_results(path)] == list(range(5))
    assert len(calls) == 5


def test_compare_prints_the_same_with_either_parser(tmp_path, monkeypatch, capsys):
    """The whole command, through the baseline's index and its lines read
    again: the same table, counts and exit code with orjson and with json."""
    from cubinrun.cli import main

    def lines(slower):
        for n in [*range(30), 2 ** 70]:
            median = 100.0 + n % 7 + (5.0 if slower and n % 10 == 0 else 0.0)
            yield json.dumps({**GOOD, "point": {"N": n},
                              "timing": {"median_us": median, "std_us": 0.1, "samples": 50}})
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    base.write_text("\n".join(lines(False)) + "\n")
    new.write_text("\n".join(lines(True)) + "\n")

    def compared():
        with pytest.raises(SystemExit) as done:
            main(["compare", str(base), str(new)])
        return done.value.code, capsys.readouterr().out
    fast = compared()
    monkeypatch.setattr(reader, "_compiled_loads", None)
    assert compared() == fast
    assert fast[0] == 5 and "SLOWER" in fast[1] and "N=1180591620717411303424" in fast[1]
