"""The lead rank's progress bar: steps done, loss, speed; only on a terminal."""

from __future__ import annotations

import sys
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["StepProgress"]


class StepProgress:
    """``with StepProgress(total, first, show=...) as p: p.update(done, loss)``."""

    def __init__(self, total: int, first: int, *, show: bool):
        console = Console(stderr=True)
        self._bar = Progress(
            TextColumn("training"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=not (show and sys.stderr.isatty()),
        )
        self._task = self._bar.add_task("training", total=total, completed=first, loss="-")

    def __enter__(self) -> StepProgress:
        self._bar.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._bar.__exit__(kind, value, tb)

    def update(self, done: int, loss: float | None) -> None:
        shown = "-" if loss is None else f"{loss:.4f}"
        self._bar.update(self._task, completed=done, loss=shown)
