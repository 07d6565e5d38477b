"""What a rank's stage really takes in memory, measured beside what the plan said it would.

Each active rank starts a :class:`PeakMeter` just before it materialises its stage (after
imports, the process group, the plan, and the stage's ``meta`` skeleton), so the peak it reports
is what the stage adds: its parameters, gradients, optimizer state, activations in flight, and the
transient buffers of the schedule and the collectives.

- **CUDA**: ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``, minus what was
  allocated at the start.
- **CPU**: the peak resident set size (``VmHWM`` in ``/proc/self/status``) minus the resident size
  at the start. The start resets the kernel's peak (writing ``5`` to ``/proc/self/clear_refs``,
  Linux's "reset the peak resident set size"), so the peak is the stage's own, not the imports'.
  Without ``/proc`` (not Linux) the peak comes from ``resource.getrusage`` (``ru_maxrss``), which
  cannot be reset: the figure is then an upper bound.

At the end of every worker group the lead rank journals, per active rank,
``{"event": "memory", "rank", "device", "peak_bytes", "plan_bytes", "capacity_bytes"}``, and a rank
whose peak went over its device's declared capacity says so in one line.
"""

from __future__ import annotations

import resource
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

__all__ = ["MemoryReport", "PeakMeter", "over_capacity"]

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_KIB = 1024


def _status_bytes(field: str) -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * _KIB
    except OSError:
        return None
    return None


def _maxrss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * _KIB  # bytes on macOS, KiB on Linux


class PeakMeter:
    """Peak memory of this process on ``device`` from :meth:`start` on."""

    def __init__(self, device: torch.device):
        self.device = device
        self.baseline_bytes = 0
        self.resettable = True

    def start(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.baseline_bytes = torch.cuda.memory_allocated(self.device)
            return
        try:
            _CLEAR_REFS.write_text("5")
        except OSError:
            self.resettable = False
        rss = _status_bytes("VmRSS")
        self.resettable = self.resettable and rss is not None
        self.baseline_bytes = rss if rss is not None else _maxrss_bytes()

    def peak_bytes(self) -> int:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            return torch.cuda.max_memory_allocated(self.device) - self.baseline_bytes
        peak = _status_bytes("VmHWM") if self.resettable else None
        return max(0, (peak if peak is not None else _maxrss_bytes()) - self.baseline_bytes)


@dataclass(frozen=True)
class MemoryReport:
    """One rank's line of the journal's ``memory`` event."""

    rank: int
    device: str
    peak_bytes: int
    plan_bytes: int
    capacity_bytes: int

    def to_dict(self) -> dict[str, int | str]:
        return asdict(self)


def over_capacity(report: MemoryReport) -> str | None:
    """The one line a rank says when its peak went over its device's capacity, else ``None``."""
    if report.peak_bytes <= report.capacity_bytes:
        return None
    mib = 2**20
    return (
        f"rank {report.rank} used {report.peak_bytes / mib:.0f} MiB on {report.device}, over its "
        f"capacity of {report.capacity_bytes / mib:.0f} MiB (the plan counted "
        f"{report.plan_bytes / mib:.0f} MiB); declare the device's real memory in --cluster, or "
        "give the job more devices"
    )
