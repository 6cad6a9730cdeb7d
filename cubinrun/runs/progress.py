"""A progress bar on stderr for commands with several runs, only when stderr
is a terminal (CI logs get the error lines and the final table instead).
Lines printed through it (a run's error) appear above the bar."""
from __future__ import annotations

import sys


class Progress:
    def __init__(self, total: int, enabled: bool | None = None):
        self.total = total
        if enabled is None:
            enabled = total > 1 and sys.stderr.isatty()
        self._bar = None
        if enabled:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar,
                                       TextColumn, TimeElapsedColumn)
            self.console = Console(stderr=True, highlight=False)
            self._bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=self.console, transient=True)
            self._task = self._bar.add_task("starting", total=total)
            self._bar.start()

    def running(self, label: str) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=_fit(label))

    def advance(self) -> None:
        if self._bar is not None:
            self._bar.advance(self._task)

    def print(self, line: str) -> None:
        if self._bar is not None:
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _fit(label: str, width: int = 48) -> str:
    return label if len(label) <= width else "…" + label[-(width - 1):]
