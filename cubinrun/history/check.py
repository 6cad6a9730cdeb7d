"""`history check`'s verdicts: per series, its change points (changes.py) and
whether one is a regression beyond the threshold that is new at a given
commit, with the commit range that brought it; as JSON and as the Markdown a
CI job's summary shows."""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from urllib.parse import quote

from ..text import markdown_text
from . import process_shift
from .changes import find_changes
from .store import Series


@dataclass(frozen=True)
class Step:
    """A change point: the level moved between `previous` (the last commit of
    the old level) and `commit` (the first of the new)."""

    previous: str
    commit: str
    date: datetime.datetime
    before_us: float
    after_us: float
    z: float

    @property
    def ratio(self) -> float:
        return self.after_us / self.before_us

    def to_json(self) -> dict:
        return {"previous_commit": self.previous, "commit": self.commit,
                "date": self.date.isoformat(), "before_us": self.before_us,
                "after_us": self.after_us, "ratio": self.ratio, "z": self.z}


@dataclass
class Verdict:
    """One series: its change points, the regressions among them that count,
    and its newest point."""

    series: Series
    steps: list[Step]
    regressions: list[Step] = field(default_factory=list)

    @property
    def latest(self):
        return self.series.points[-1]

    @property
    def word(self) -> str:
        if self.regressions:
            return "REGRESSION"
        if self.latest.failed or self.latest.passed is False:
            return "FAILING"
        if not any(p.median_us for p in self.series.points):
            return "untimed"            # nothing to judge (no run timed the kernel)
        return "steady" if not self.steps else ("slower" if self.steps[-1].ratio > 1
                                                 else "faster")

    def to_json(self) -> dict:
        s = self.series
        return {"name": s.name, "spec": s.spec, "kernel": s.kernel, "point": s.point,
                "device": s.device, "commits": len(s.points), "verdict": self.word,
                "latest_commit": self.latest.commit, "latest_us": self.latest.median_us,
                "latest_check_passed": self.latest.passed,
                "changes": [step.to_json() for step in self.steps],
                "regressions": [step.to_json() for step in self.regressions]}


def series_order(spec: str | None, kernel: str | None, point: dict, device: str) -> tuple:
    """How series are listed: by spec (or kernel), then its point with
    numbers in numeric order (N=262144 before N=1048576), then the device."""
    values = tuple((name, (0, value, "") if isinstance(value, (int, float))
                    else (1, 0, str(value))) for name, value in point.items())
    return spec or kernel or "?", values, device


def judge_all(series: list[Series], since: datetime.datetime, threshold: float,
              only: list[Series] | None = None) -> list[Verdict]:
    """The verdicts of `only` (default: every series), each commit's points
    less the shift its process added to all the kernels it timed, told by
    all of `series` (process_shift.py; by device)."""
    by_device: dict[str, list[Series]] = {}
    for one in series:
        by_device.setdefault(one.device, []).append(one)
    corrected: dict[str, dict[str, float] | None] = {}
    for group in by_device.values():
        medians = [{p.commit: p.median_us for p in one.points if p.median_us} for one in group]
        corrected.update(zip((one.key for one in group), process_shift.corrected(medians)))
    return [judge(one, since, threshold, corrected[one.key]) for one in (series if only is None else only)]


def steps_of(series: Series, before: datetime.datetime | None = None,
             corrected: dict[str, float] | None = None) -> list[Step]:
    """The change points of a series' timed points (those dated before
    `before` only, when given), found in its `corrected` medians (µs by
    commit) where given."""
    timed = [p for p in series.points if p.median_us and (before is None or p.date < before)]
    values = [(corrected or {}).get(p.commit, p.median_us) for p in timed]
    found = find_changes(values, [p.noise for p in timed])
    return [Step(timed[c.index - 1].commit, timed[c.index].commit, timed[c.index].date,
                 c.before, c.after, c.z) for c in found]


def judge(series: Series, since: datetime.datetime, threshold: float,
          corrected: dict[str, float] | None = None) -> Verdict:
    """The series' verdict. A regression is a step up beyond the threshold
    that is still the series' level now (a step later undone is history) and
    that is new since the commit dated `since`: it begins there or later, or
    it began a few commits earlier and only the commits from `since` on made
    it certain (a noisy kernel's step needs several commits to stand out, and
    a gate on each push must fail at the first push that shows it)."""
    steps = steps_of(series, corrected=corrected)
    regressions = []
    if steps and steps[-1].ratio > 1 + threshold:
        last = steps[-1]
        if last.date >= since or not _seen_before(series, last, since, corrected):
            regressions.append(last)
    return Verdict(series, steps, regressions)


def _seen_before(series: Series, step: Step, since: datetime.datetime,
                 corrected: dict[str, float] | None) -> bool:
    """Whether the series up to `since` already showed this slowdown (a step
    up beginning within a commit of it)."""
    commits = [p.commit for p in series.points]
    at = commits.index(step.commit)
    return any(abs(commits.index(earlier.commit) - at) <= 1 and earlier.ratio > 1
               for earlier in steps_of(series, since, corrected))


def markdown(verdicts: list[Verdict], branch: str, since_commit: str, threshold: float,
             commit_url: str | None) -> str:
    """The summary for $GITHUB_STEP_SUMMARY: a headline, then a table of the
    regressions and of the series whose newest check failed."""
    bad = [v for v in verdicts if v.regressions]
    failing = [v for v in verdicts if not v.regressions and v.word == "FAILING"]
    lines = [f"### cubinrun history: {markdown_text(branch)}", ""]
    lines.append(f"{len(bad)} regression(s) beyond {threshold:.1%} from "
                 f"{_link(since_commit, commit_url)} on, {len(failing)} series failing, "
                 f"{len(verdicts)} series checked.")
    if bad or failing:
        lines += ["", "| series | verdict | commits | before | after | change |",
                  "| --- | --- | --- | --- | --- | --- |"]
    for verdict in bad:
        step = verdict.regressions[0]
        lines.append(f"| {markdown_text(verdict.series.name)} | REGRESSION | "
                     f"{_link(step.previous, commit_url)}..{_link(step.commit, commit_url)} | "
                     f"{step.before_us:.4g} µs | {step.after_us:.4g} µs | "
                     f"{step.ratio - 1:+.1%} |")
    for verdict in failing:
        lines.append(f"| {markdown_text(verdict.series.name)} | FAILING | "
                     f"{_link(verdict.latest.commit, commit_url)} | | | |")
    return "\n".join(lines) + "\n"


def _link(commit: str, template: str | None) -> str:
    """A commit as code, linked through the --commit-url template; its name
    (any word `--commit` took) shown as written and quoted in the URL."""
    short = markdown_text(commit[:10])
    if not template:
        # a code span would show the escapes themselves
        return f"`{short}`" if short == commit[:10] else short
    url = template.replace("{commit}", quote(commit, safe=""))
    return f"[{short}]({quote(url, safe=_URL_SAFE)})"


# what a link's URL keeps as it is; the rest (spaces, `<`, `>`, `(`, `)`, `\`)
# is %-quoted, which also keeps it one Markdown link destination
_URL_SAFE = ":/?#@!$&'*+,;=%~-._[]"
