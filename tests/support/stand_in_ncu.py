"""A stand-in for Nsight Compute's `ncu`: a script on PATH that records its
arguments, "profiles" by writing an empty report and imports by replaying a
capture (tests/fixtures/debug/ncu_import_details.csv.log.gz)."""
from __future__ import annotations

import os
import stat
import sys

import pytest

from support.platforms import skip_on_windows
from support.repo import FIXTURES

STAND_IN = """#!{python}
# A stand-in ncu: "profiles" by writing an empty report, imports by replaying a capture.
import gzip, json, sys
args = sys.argv[1:]
if "--import" in args:
    sys.stdout.write(gzip.open({capture!r}, "rt").read())
    sys.exit(0)
json.dump(args, open({record!r}, "w"))
open(args[args.index("--export") + 1] + ".ncu-rep", "w").write("report")
open(args[args.index("--log-file") + 1], "w").write("==PROF== Connected\\n")
sys.stdout.write(json.dumps({{"kernel": "add_kernel", "check": {{"passed": True, "outputs":
    {{"out": {{"passed": True}}}}}}}}))
sys.exit({code})
"""


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    skip_on_windows("the stand-in tool is a script with a #! line")
    def make(code=0):
        record = tmp_path / "args.json"
        script = tmp_path / "bin" / "ncu"
        script.parent.mkdir(exist_ok=True)
        script.write_text(STAND_IN.format(python=sys.executable, record=str(record), code=code,
                                          capture=str(FIXTURES / "debug" / "ncu_import_details.csv.log.gz")))
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
        return record
    return make
