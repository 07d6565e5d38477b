"""Where this machine's CPUs sit now: whether two compute threads share a last-level cache.

A virtual machine's vCPUs are host threads that the hypervisor may move. On the project's 2-vCPU
VM (an AMD EPYC with AVX-512; the guest sees 1 MiB of L2 per vCPU and one 32 MiB L3) the two vCPUs
switch, every few seconds to minutes, between two placements that behave as two machines
(2026-12-05, 120 samples over two minutes, each three mnasnet1_0 training steps at batch 8 on
88x88 images with two threads, then the probes below; a scratch script, nothing of it priced):

- **shared** (40 samples): the step took a median 73.6 ms (71.5-78.5); a 128x128 matrix product
  26.8 µs on two threads against 44.7 on one; a two-thread out-of-place add of 64 MiB tensors
  5.2 ms (about 39 GB/s);
- **split** (80 samples): the step took 98.5 ms (85-111, x1.34); the product 34.2 µs on two
  threads, 44.3 on one; the add 3.15 ms (about 64 GB/s).

Both are consistent with the vCPUs on one of the EPYC's core complexes (one L3, one link to
memory) or on two (an L3 each, a link each, and every cache line the threads share crossing
between complexes): the split placement streams more and synchronises more slowly, so a network
of many small operators (each a fork and join of the threads) slows and a memory-bound one can
speed up. That reading is an inference; the guest's sysfs shows one L3 either way, and only
timing tells the two apart.

:func:`sharing_ratio` is that probe: the two-thread time of a cached 128x128 product over its
one-thread time (about 12 ms in all). :func:`placement_of` reads it: ``shared`` below
:data:`SHARED_BELOW`, ``split`` above (on that VM: 0.59-0.64 shared, 0.71-0.88 split). A process
with fewer than two CPUs has no placement (``None``). ``trainplay hw measure`` records the
placement it measured in, ``local`` picks the measurement of the placement the machine is mostly
in lately (:func:`placement_mostly`: its own readings over a second or two and those of the last
few minutes, kept in the cache folder), and ``validate`` labels every timed step with it.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterable
from contextlib import suppress
from typing import Any

from trainplay.cachedir import cache_dir, write_whole
from trainplay.hardware.machine import usable_cpus

__all__ = [
    "APART_S",
    "MIXED",
    "PLACEMENTS",
    "PROBES",
    "READINGS_FILE",
    "RECENT_S",
    "SHARED_BELOW",
    "most_common",
    "one_of",
    "placement_mostly",
    "placement_now",
    "placement_of",
    "recent_readings",
    "sharing_ratio",
]

PLACEMENTS = ("shared", "split")
MIXED = "mixed"
"""The label of something timed while the placement changed."""
SHARED_BELOW = 0.68
"""Two-thread over one-thread time of the probe below which two threads share a cache: between
the two clusters measured on the project's VM (0.59-0.64 and 0.71-0.88, docstring above)."""
PROBES = 7
"""Readings of :func:`placement_mostly`. On the project's VM the placement flips within
seconds, and how much of the time it spends in each changes by the hour (2026-12-05: 80 of 120
samples split; 2026-12-07 15:00 UTC: 60 probes 0.5 s apart, 46 shared and 14 split, the split
ones in runs of one to three). One probe decides nothing about a run of seconds: a scratch
comparison that day (200 samples of a 64x512 by 512x512 ``addmm`` on two threads, each labelled
by a probe before and after it) timed 135 GFLOP/s shared (159 samples) and 71 split (9), as the
two profiles say (141 and 72), yet ``benchmarks/train_plan_choice.py --tag 1207f`` priced two of
three one-process ``mlp`` runs on the split profile from the probe as they started (11.4 ms a
step) and they ran as fast as the shared-priced ones (8.72 and 9.59 ms; 12 more runs priced
shared: 8.73-10.34)."""
APART_S = 0.25
"""Seconds between two readings of :func:`placement_mostly` (seven span about 1.6 s)."""
RECENT_S = 300.0
"""Seconds back that :func:`placement_mostly` counts earlier readings beside its own. A run is
priced before it starts and lasts seconds to hours, so what prices it is the placement the CPUs
are mostly in lately, not the one of the second before. ``benchmarks/placement_series.py``
takes each of a series of probes 0.5 s apart as the moment a run is priced and the placement most
of the probes 5 to 15 s later read as the run's: on 2026-12-07 (21:16, 500 probes, 8% split, the
longest split spell three probes) the last seven probes told it 469 times in 471 and those of the
last 30 s to five minutes 470; in a scratch run of the same count just before (12% split, spells
of up to nine probes) 444 times in 463 against 462. The split spells are short; the last seven
probes read split inside the longer ones and price a run that will mostly be shared. Minutes,
not hours: the share of each placement changes by the hour (:data:`PROBES`)."""
READINGS_FILE = "placement-readings.json"
"""The readings :func:`placement_mostly` made, with their times and host, in the cache folder
(:func:`trainplay.cachedir.cache_dir`): those of the last :data:`RECENT_S` seconds."""
_SIDE = 128
_CALLS, _RUNS = 50, 3


def _fastest_call_s(a: Any, b: Any, out: Any) -> float:
    import torch

    for _ in range(_CALLS // 2):  # the team awake, the operands cached
        torch.mm(a, b, out=out)
    best = float("inf")
    for _ in range(_RUNS):
        start = time.perf_counter()
        for _ in range(_CALLS):
            torch.mm(a, b, out=out)
        best = min(best, (time.perf_counter() - start) / _CALLS)
    return best


def sharing_ratio() -> float | None:
    """Two-thread over one-thread time of a 128x128 product (fastest of three runs of 50 calls
    each), or ``None`` with fewer than two usable CPUs. The caller's thread keeps its team size
    afterwards, and other threads start with one (:func:`~.intraop.compute_threads`)."""
    if usable_cpus() < 2:
        return None
    import torch  # here: ``local`` reads this module's names without importing torch

    from trainplay.hardware.intraop import compute_threads

    threads = torch.get_num_threads()
    a, b = torch.randn(_SIDE, _SIDE), torch.randn(_SIDE, _SIDE)
    out = torch.empty(_SIDE, _SIDE)
    try:
        torch.set_num_threads(2)
        two = _fastest_call_s(a, b, out)
        torch.set_num_threads(1)
        one = _fastest_call_s(a, b, out)
    finally:
        compute_threads(threads)
    return two / one


def placement_of(ratio: float | None) -> str | None:
    """``shared`` or ``split`` for a :func:`sharing_ratio`; ``None`` for none."""
    if ratio is None:
        return None
    return "shared" if ratio < SHARED_BELOW else "split"


def placement_now() -> str | None:
    """The placement this machine's CPUs are in now (:func:`sharing_ratio`, read)."""
    return placement_of(sharing_ratio())


def placement_mostly(probes: int | None = None, apart_s: float | None = None) -> str | None:
    """The placement the CPUs are mostly in lately: the most common of ``probes``
    (:data:`PROBES`) :func:`placement_now` readings ``apart_s`` (:data:`APART_S`) apart and of
    the readings earlier calls made in the last :data:`RECENT_S` seconds (kept in
    :data:`READINGS_FILE`, these added). What prices a run that lasts seconds or more (``local``),
    where one 12 ms probe reads whichever placement the CPUs are in at that instant (see
    :data:`PROBES` and :data:`RECENT_S`)."""
    probes = PROBES if probes is None else probes
    apart_s = APART_S if apart_s is None else apart_s
    labels = [placement_now()]
    if labels[0] is None:  # fewer than two CPUs: nothing to probe again
        return None
    for _ in range(probes - 1):
        time.sleep(apart_s)
        labels.append(placement_now())
    now = time.time()
    readings = [*recent_readings(now), *((now, label) for label in labels if label in PLACEMENTS)]
    _keep(readings)
    return most_common(label for _, label in readings)


def recent_readings(now: float | None = None) -> list[tuple[float, str]]:
    """(time, placement) of the readings :func:`placement_mostly` made on this host in the
    :data:`RECENT_S` seconds before ``now`` (default: now), oldest first; none where the file is
    missing or unreadable."""
    now = time.time() if now is None else now
    try:
        data = json.loads((cache_dir() / READINGS_FILE).read_text())
        if data["host"] != socket.gethostname():
            return []
        return [
            (float(t), str(label))
            for t, label in data["readings"]
            if now - RECENT_S <= float(t) <= now and label in PLACEMENTS
        ]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _keep(readings: list[tuple[float, str]]) -> None:
    """Write ``readings`` to :data:`READINGS_FILE` (replacing it whole: a reader never sees half
    of it); a cache folder that cannot be written keeps nothing, and the probes still decide."""
    text = json.dumps({"host": socket.gethostname(), "readings": readings})
    with suppress(OSError):
        write_whole(cache_dir() / READINGS_FILE, text)


def one_of(labels: Iterable[str | None]) -> str | None:
    """The placement of something probed several times (before and after a call, over passes):
    the one label they all carry, else :data:`MIXED`."""
    found = set(labels)
    return found.pop() if len(found) == 1 else MIXED


def most_common(labels: Iterable[str | None]) -> str | None:
    """The label most of ``labels`` carry, leaving out ``None`` (the first in sorted order on a
    tie); ``None`` without any."""
    told = [label for label in labels if label is not None]
    return max(sorted(set(told)), key=told.count) if told else None
