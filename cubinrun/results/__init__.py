"""cubinrun's results as data: one reader for its own JSON and JSONL
(`reader`), the files CI systems read (`writers`: JSON, JSONL, CSV, Markdown,
JUnit XML), the summary table (`table`), baseline comparison (`compare`) and
plots (`plot`).

Everything here works on result objects as `launch --json` prints them (SPEC
section 2, plus `spec`, `point`, `exit_code` and `status`), so saved files and
fresh runs are handled by the same code.
"""
