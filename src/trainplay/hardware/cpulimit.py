"""How many CPUs this process may use: its CPU affinity and its cgroup's CPU bandwidth limit.

A process in a cgroup with a CFS bandwidth limit gets ``quota`` microseconds of CPU time every
``period`` microseconds, over all its threads: ``quota / period`` CPUs' worth, however many cores
it sees (Linux, ``Documentation/scheduler/sched-bwc.rst``: cgroup v1's ``cpu.cfs_quota_us`` and
``cpu.cfs_period_us``, -1 for no limit; cgroup v2's ``cpu.max``, ``"$MAX $PERIOD"`` with ``max``
for none, ``Documentation/admin-guide/cgroup-v2.rst``). A group's limit holds for everything
below it, so the limit of a process is the smallest along its group's path to the root of the
hierarchy. Container runtimes set it for ``docker run --cpus`` and Kubernetes CPU limits.

Microbenchmarks do not see such a limit: the kernel enforces it per period, and a sample shorter
than the quota runs at full speed (issue 14). A device measured at full speed and run under a
limit of ``L`` CPUs with ``T`` threads can sustain at most ``L / T`` of that speed: this module
says what ``L`` is, :mod:`trainplay.runtime.calibration` prices it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cgroup_limit", "cpu_limit"]

_PROC = Path("/proc/self")


def _mounts(proc: Path) -> list[tuple[str, str, str, set[str]]]:
    """(root within the hierarchy, mount point, filesystem type, super options) of every cgroup
    mount in ``proc``'s mountinfo (``man 5 proc``: fields 4 and 5, then after `` - `` the type,
    source and super options)."""
    out = []
    for line in (proc / "mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            out.append((fields[3], fields[4], tail[0], set(tail[2].split(","))))
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _v1_limit(directory: Path) -> float | None:
    quota, period = _read(directory / "cpu.cfs_quota_us"), _read(directory / "cpu.cfs_period_us")
    if quota is None or period is None or int(quota) < 0 or int(period) <= 0:
        return None
    return int(quota) / int(period)


def _v2_limit(directory: Path) -> float | None:
    text = _read(directory / "cpu.max")
    if text is None:
        return None
    quota, _, period = text.partition(" ")
    if quota == "max" or not period or int(period) <= 0:
        return None
    return int(quota) / int(period)


def cgroup_limit(proc: Path = _PROC, root: Path = Path("/")) -> float | None:
    """CPUs' worth of time per period this process's cgroups allow (the smallest limit along the
    path of each CPU hierarchy it is in), ``None`` when none is set or nothing can be read.
    ``proc`` and ``root`` are for tests (a fake ``/proc/self`` and file system)."""
    try:
        groups = (proc / "cgroup").read_text().splitlines()
        mounts = _mounts(proc)
    except OSError:
        return None
    limits = []
    for line in groups:
        _, controllers, path = line.split(":", 2)
        v2 = controllers == ""
        for mount_root, point, kind, options in mounts:
            if v2 != (kind == "cgroup2") or (not v2 and "cpu" not in options):
                continue
            if not (path + "/").startswith(mount_root.rstrip("/") + "/"):
                continue
            relative = path[len(mount_root.rstrip("/")) :].strip("/")
            directory = root / point.lstrip("/") / relative
            top = root / point.lstrip("/")
            while True:
                got = _v2_limit(directory) if v2 else _v1_limit(directory)
                if got is not None:
                    limits.append(got)
                if directory == top or top not in directory.parents:
                    break
                directory = directory.parent
    return min(limits, default=None)


def cpu_limit(proc: Path = _PROC, root: Path = Path("/")) -> float:
    """CPUs this process can use at once: its affinity's CPU count, or less under a cgroup
    bandwidth limit."""
    cores = float(len(os.sched_getaffinity(0)))
    quota = cgroup_limit(proc, root)
    return min(cores, quota) if quota is not None else cores
