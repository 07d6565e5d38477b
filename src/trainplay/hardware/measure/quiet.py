"""Was the machine quiet while we timed? CPU time other processes used during a sample.

A timing taken while another program computes on the same cores measures the sharing, not the
device. Linux counts CPU time per process (``/proc/<pid>/stat``: utime + stime, all threads) and
for the whole machine (``/proc/stat``); the difference over a sample is what everyone else used.
A sample during which others used more than :data:`NOISY_CORES` cores on average is repeated
(at most :data:`RETRIES` times); how many were repeated is reported, never hidden.

"Ourselves" is the process tree under :data:`ROOT_ENV` (the launcher sets it to its own pid, so a
measurement with several workers does not count its own workers as noise), or this process alone.
Elsewhere than Linux the check is a no-op that always says quiet.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NOISY_CORES", "ROOT_ENV", "Quiet", "quiet_sample"]

ROOT_ENV = "TRAINPLAY_QUIET_ROOT"
NOISY_CORES = 0.15
"""Average cores used by other processes above which a sample counts as disturbed."""
RETRIES = 6
RESCAN_S = 1.0
"""How long the members of "ourselves" are kept before the process table is read again: one pass
over it reads every process's stat (~70 here, several milliseconds), and a sweep starts ~2,000
samples."""
_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PROC = Path("/proc")


def _machine_busy() -> int | None:
    try:
        fields = (_PROC / "stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    values = [int(v) for v in fields]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    guest = sum(values[8:10]) if len(values) > 9 else 0  # already counted in user and nice
    return sum(values) - idle - guest


def _stat(pid: str) -> tuple[int, int] | None:
    """(parent pid, utime + stime) of ``pid``."""
    try:
        text = (_PROC / pid / "stat").read_text()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2 :].split()
    return int(rest[1]), int(rest[11]) + int(rest[12])


def _tree(root: int) -> list[int]:
    """``root`` and all its descendants: one pass over every process of the machine."""
    children: dict[int, list[int]] = {}
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            got = _stat(entry.name)
            if got is not None:
                children.setdefault(got[0], []).append(int(entry.name))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


def _ticks(pids: list[int]) -> int:
    """CPU ticks of ``pids`` (one that has exited counts nothing)."""
    return sum(got[1] for pid in pids if (got := _stat(str(pid))) is not None)


@dataclass
class Quiet:
    """CPU used by other processes between :meth:`start` and :meth:`others_cores`."""

    root: int = 0

    def __post_init__(self) -> None:
        if not self.root:
            self.root = int(os.environ.get(ROOT_ENV, os.getpid()))
        self.enabled = _machine_busy() is not None
        self._start: tuple[float, int, int] | None = None
        self._members: list[int] = []
        self._scanned_s = -math.inf

    def start(self) -> None:
        """Begin a sample. The members of "ourselves" are those at the last pass over the process
        table (at most :data:`RESCAN_S` old); a sample ends with the members it started with, so
        a process of ours that starts or ends meanwhile can only count as others' use (a sample
        repeated), never hide it."""
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._scanned_s > RESCAN_S:
            self._members, self._scanned_s = _tree(self.root), now
        self._start = (time.perf_counter(), _machine_busy() or 0, _ticks(self._members))

    def others_cores(self) -> float:
        """Average cores other processes used since :meth:`start` (0 when not measurable)."""
        if not self.enabled or self._start is None:
            return 0.0
        wall0, busy0, own0 = self._start
        wall = time.perf_counter() - wall0
        busy = (_machine_busy() or 0) - busy0
        own = _ticks(self._members) - own0
        return max(0.0, (busy - own) / _HZ / wall) if wall > 0 else 0.0


def quiet_sample(
    measure: Callable[[], float], quiet: Quiet | None = None, *, min_s: float = 0.05
) -> tuple[float, bool]:
    """``measure()`` repeated until no other process disturbed it (at most :data:`RETRIES` more
    times); returns (the value, whether the last try was quiet). Tries shorter than ``min_s`` are
    too short for the kernel's tick counts, so they are not judged."""
    quiet = quiet or Quiet()
    value = 0.0
    for _ in range(RETRIES + 1):
        started = time.perf_counter()
        quiet.start()
        value = measure()
        if time.perf_counter() - started < min_s or quiet.others_cores() <= NOISY_CORES:
            return value, True
    return value, False
