"""Facts about the machine this process runs on, read from the OS (Linux ``/proc`` and ``/sys``)."""

from __future__ import annotations

import os
import platform
from pathlib import Path

__all__ = ["cpu_name", "last_level_cache_bytes", "physical_memory_bytes", "usable_cpus"]


def cpu_name() -> str:
    """The CPU model, e.g. ``Intel(R) Xeon(R) Processor``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cpus() -> int:
    """CPUs this process may run on."""
    return len(os.sched_getaffinity(0))


def physical_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def last_level_cache_bytes() -> int:
    """Largest CPU cache sysfs reports for CPU 0 (0 when unknown)."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip().upper()
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes, default=0)
