"""``local``: this machine, measured now or taken from the cache of its last measurement.

The cache is one JSON file, ``$TRAINPLAY_CACHE_DIR`` or ``$XDG_CACHE_HOME/trainplay`` or
``~/.cache/trainplay``, ``local-peaks.json``. It is used only while the machine looks the same
(host, CPU model, vector extensions and count, GPUs, torch version, and the measurement's
format); otherwise ``local`` measures again.

It keeps one measurement per **process layout**, ``<workers>x<threads>`` (workers on this machine,
threads each): on a CPU two one-thread workers are not one two-thread worker — they split the
cores and share the memory bus and the caches — so ``--cluster local`` for a job of ``N``
processes is this machine measured with ``N`` workers (``local:N`` names it outright), and a
one-process analysis never uses a two-process measurement.

A layout measured in one placement of the CPUs (:mod:`trainplay.hardware.placement`: whether two
threads share a cache, which a VM's hypervisor may change every few seconds) is kept per placement,
``<workers>x<threads>@<placement>``, and ``local`` takes the one of the placement the CPUs are in
when it is used.

A CPU's workers share its cores, caches and memory bus, so a worker whose siblings are idle runs
faster than each of several busy ones (on the project's 2-vCPU VM, two hyperthreads of one core:
one thread alone does nearly the work of both). ``trainplay hw measure --nproc N`` therefore also
measures **one worker alone**, with a busy worker's threads and the others idle (layout
``1x<threads>``); ``local`` with ``N`` workers carries it beside each worker's figures
(:attr:`~trainplay.hardware.spec.Peaks.alone`), and a plan that leaves all but one worker of the
machine idle is priced with it (:func:`~trainplay.plan.costs.running`).

A shared VM's speed moves over hours, further than a sweep's passes, twenty minutes apart, can
see; so ``trainplay hw measure`` caches a layout's measurement pooled with its last earlier ones
measured alike (:mod:`trainplay.hardware.moments`: each sweep point the median of their times;
``--fresh`` keeps only the new one).

A measurement's reference microbenchmark is timed again at each use, and a machine that drifted
is told so on stderr (:mod:`trainplay.hardware.drift`). It is priced as measured unless
``TRAINPLAY_DRIFT=price`` asks for the machine's speed now: on the held-out-6 set (30 cases,
2026-12-02) pricing each case at the reference's ratio gave an iteration-time MAPE of 14.9%, and
the same cases priced as measured 11.2%; the one-thread reference swung by up to 1.7x between
cases minutes apart where the workloads did not.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from trainplay.cachedir import cache_dir, write_whole
from trainplay.errors import UsageError
from trainplay.hardware.cluster import load_cluster
from trainplay.hardware.machine import (
    cpu_features,
    cpu_name,
    gpu_names,
    torch_version,
    usable_cpus,
)
from trainplay.hardware.measurement import Measurement, device_of
from trainplay.hardware.moments import MOMENTS, described, poolable, pooled
from trainplay.hardware.placement import PLACEMENTS
from trainplay.hardware.presets import cluster_path
from trainplay.hardware.spec import ClusterSpec, DeviceSpec, SpecError

__all__ = [
    "cache_path",
    "cached_layouts",
    "cached_placements",
    "cpu_device",
    "layout_key",
    "load_cached",
    "local_cluster",
    "parse_local",
    "placement_of",
    "pooled_note",
    "resolve_cluster",
    "save_cached",
]

DRIFT_ENV = "TRAINPLAY_DRIFT"
"""``price``: price a drifted machine at the reference's ratios; anything else (the default):
only say that it drifted."""

CACHE_FILE = "local-peaks.json"
HISTORY_FILE = "local-history.json"
"""Each layout's measurements as measured, the last :data:`~trainplay.hardware.moments.MOMENTS`:
read only when a measurement is cached (:func:`save_cached`), so using ``local`` reads one."""
CACHE_FORMAT = 5
"""Bumped when a measurement gains figures an older one lacks (2: performance profiles; 3: grouped
convolutions of 4 to 128 channels a group in the sweep; 4: convolutions on small feature maps, the
pipeline schedule's fixed costs, one worker alone; 5: depthwise convolutions by kernel and
stride)."""

MEASURE_TIME = "from half a minute to a few minutes, longer with more workers"
"""How long the short measurement of ``local`` takes, for the notice before it starts (26 s with
one worker, 39 s with two on the project's 2-core AVX-512 host; 124 s with one worker on its
slower AVX2 host)."""


def cache_path() -> Path:
    return cache_dir() / CACHE_FILE


def fingerprint() -> dict[str, Any]:
    """What must stay the same for a cached measurement to describe this machine (read without
    importing torch on a machine without GPUs, so `hw list` and `hw show FILE` start fast)."""
    return {
        "host": socket.gethostname(),
        "cpu": cpu_name(),
        "cpu_features": list(cpu_features()),
        "cpus": usable_cpus(),
        "gpus": gpu_names(),
        "torch": torch_version(),
        "format": CACHE_FORMAT,
    }


def layout_key(workers: int, threads: int | None = None, placement: str | None = None) -> str:
    """``<workers>x<threads>``, with ``@<placement>`` for a measurement made in one placement of
    the CPUs (:mod:`trainplay.hardware.placement`); threads default to this machine's CPUs split
    between workers."""
    key = f"{workers}x{threads or max(1, usable_cpus() // workers)}"
    return f"{key}@{placement}" if placement in PLACEMENTS else key


def _layout(key: str) -> tuple[int, int, str | None]:
    """(workers, threads, placement) of a cache key."""
    layout, _, placement = key.partition("@")
    workers, _, threads = layout.partition("x")
    return int(workers), int(threads), placement or None


def placement_of(measurement: Measurement) -> str | None:
    """The placement of the CPUs a measurement's operators were all timed in, if one."""
    profile = measurement.workers[0].peaks.profile
    placement = None if profile is None else profile.placement
    return placement if placement in PLACEMENTS else None


def _read(name: str = CACHE_FILE) -> dict[str, Any]:
    try:
        data = json.loads((cache_dir() / name).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("fingerprint") != fingerprint():
        return {}
    layouts = data.get("layouts")
    return layouts if isinstance(layouts, dict) else {}


def _write(name: str, layouts: dict[str, Any]) -> Path:
    path = cache_dir() / name
    write_whole(path, json.dumps({"fingerprint": fingerprint(), "layouts": layouts}, indent=2))
    return path


def _history(key: str, measurement: Measurement, pool: bool) -> list[Measurement]:
    """The layout's measurements to pool with ``measurement``, oldest first, it last: the last
    :data:`~trainplay.hardware.moments.MOMENTS` measured alike (only it without ``pool``)."""
    earlier = []
    for entry in _read(HISTORY_FILE).get(key, []) if pool else []:
        try:
            one = Measurement.from_dict(entry)
        except (ValueError, KeyError, TypeError, SpecError):
            continue
        if poolable(one, measurement) and one.measured_at != measurement.measured_at:
            earlier.append(one)
    return [*earlier, measurement][-MOMENTS:]


def save_cached(measurement: Measurement, *, pool: bool = False) -> Path | None:
    """Cache a single-host measurement under its layout, beside the other layouts cached; returns
    the file, or ``None`` when it could not be written. With ``pool``, what ``local`` takes for
    the layout is this measurement pooled with the layout's last earlier ones measured alike
    (:mod:`trainplay.hardware.moments`, kept in ``local-history.json`` beside the cache); without,
    this measurement alone, and the layout's pool starts over from it."""
    if len({w.host for w in measurement.workers}) != 1:
        return None
    key = layout_key(
        len(measurement.workers), measurement.workers[0].threads, placement_of(measurement)
    )
    history = _history(key, measurement, pool)
    layouts = _read()
    layouts[key] = pooled(history).to_dict()
    kept = _read(HISTORY_FILE)
    kept[key] = [m.to_dict() for m in history]
    try:
        _write(HISTORY_FILE, kept)
        return _write(CACHE_FILE, layouts)
    except OSError:
        return None


def pooled_note(measurement: Measurement) -> str:
    """What ``local`` takes for ``measurement``'s layout after :func:`save_cached`: it alone, or
    it pooled with the layout's earlier measurements, and how far apart they lay."""
    key = layout_key(
        len(measurement.workers), measurement.workers[0].threads, placement_of(measurement)
    )
    history = [Measurement.from_dict(m) for m in _read(HISTORY_FILE).get(key, [])]
    if len(history) < 2:
        return (
            f"`local` {key}: this measurement alone (the next `trainplay hw measure` of this "
            f"layout is pooled with it, up to {MOMENTS})"
        )
    return f"`local` {key}: {described(history)} (`--fresh` keeps only the latest)"


def load_cached(
    workers: int = 1, threads: int | None = None, placement: str | None = None
) -> Measurement | None:
    """The cached measurement of this machine with ``workers`` workers of ``threads`` threads
    each (default: this machine's CPUs split between them), if it exists, reads, and matches this
    machine: the one measured in ``placement`` where there is one, else one measured without a
    placement (before the probe, or where it cannot tell), else one of another placement."""
    layouts = _read()
    if threads is None:
        # this machine's CPUs split between the workers, else an entry of that many workers
        # measured with other threads (the CPUs usable then): the one with the most threads,
        # never a worker measured alone with fewer than its share
        threads = max(1, usable_cpus() // workers)
        sizes = {t for w, t, _ in map(_layout, layouts) if w == workers}
        if sizes and threads not in sizes:
            threads = max(sizes)
    key = layout_key(workers, threads)
    tried = [layout_key(workers, threads, placement), key]
    tried += sorted(k for k in layouts if k.startswith(f"{key}@"))
    entry = next((layouts[k] for k in tried if k in layouts), None)
    if entry is None:
        return None
    try:
        return Measurement.from_dict(entry)
    except (ValueError, KeyError, TypeError, SpecError):
        return None


def cached_placements(workers: int = 1, threads: int | None = None) -> list[str]:
    """The placements of the CPUs this layout was measured in, one each (none: no measurement of
    it was timed in one placement)."""
    key = layout_key(workers, threads)
    return sorted(p for k in _read() if k.startswith(f"{key}@") and (p := _layout(k)[2]))


def cached_layouts() -> list[str]:
    """The layouts (``<workers>x<threads>``) cached for this machine."""
    return sorted(_read())


def local_cluster(
    workers: int = 1,
    *,
    measure_if_missing: bool = True,
    show_progress: bool = True,
    placement: str | None = None,
) -> ClusterSpec:
    """This machine as a cluster of ``workers`` workers: from the cache, or measured now with
    that many (the short measurement, about half a minute; cached). Where the cache holds that
    layout measured in a placement of the CPUs (:mod:`trainplay.hardware.placement`), the one
    measured in ``placement`` (default: the placement they are mostly in lately, probed over a
    second or two beside the last few minutes' readings:
    :func:`~trainplay.hardware.placement.placement_mostly`)."""
    if workers < 1:
        raise UsageError(f"local needs at least 1 worker, got {workers}")
    placement = placement or _placement_now(workers, show_progress)
    measurement = load_cached(workers, placement=placement)
    if measurement is None:
        if not measure_if_missing:
            raise UsageError(
                f"no measurement of this machine with {workers} worker(s) is cached: run "
                f"`trainplay hw measure --nproc {workers}` first"
            )
        from trainplay.hardware.measure.launch import measure

        sys.stderr.write(
            f"trainplay: no measurement of this machine with {workers} worker"
            f"{'' if workers == 1 else 's'} is cached: measuring it now (the short measurement, "
            f"{MEASURE_TIME}; cached in {cache_path()} for next time)\n"
        )
        # a short measurement (`--quick`): `trainplay hw measure` takes the longer one
        measurement = measure(nproc=workers, quick=True, show_progress=show_progress)
        assert measurement is not None  # one node: rank 0 is here
        save_cached(measurement)
    alone = (
        load_cached(1, threads=measurement.workers[0].threads, placement=placement)
        if workers > 1
        else None
    )
    measurement = _now(measurement, show_progress)
    alone = None if alone is None else _now(alone, show_progress)
    return measurement.to_cluster("local", alone=alone)


_TOLD: set[str] = set()


def _placement_now(workers: int, show_progress: bool) -> str | None:
    """The CPUs' placement lately (the one they are mostly in over a second or two and the last
    few minutes), probed only where ``workers`` workers were measured in one; said once when none
    of those measurements is of it."""
    measured = cached_placements(workers)
    if not measured:
        return None
    from trainplay.hardware.placement import placement_mostly  # imports torch: only here

    now = placement_mostly()
    told = f"placement {workers} {now}"
    if now not in measured and show_progress and told not in _TOLD:
        _TOLD.add(told)
        sys.stderr.write(
            f"trainplay: this machine's CPUs are mostly {now} lately (trainplay.hardware.placement); "
            f"`local` with {workers} worker{'' if workers == 1 else 's'} was measured with them "
            f"{' or '.join(measured)}, priced as that (`trainplay hw measure` while they are "
            f"{now} measures this placement too)\n"
        )
    return now


def _now(measurement: Measurement, show_progress: bool) -> Measurement:
    """``measurement``, its reference timed again (once per process) where it has one: a drift is
    said once per measurement, and priced at this machine's speed now with ``TRAINPLAY_DRIFT=price``
    (:mod:`trainplay.hardware.drift`)."""
    if not measurement.reference or measurement.workers[0].device_type != "cpu":
        return measurement
    pricing = os.environ.get(DRIFT_ENV) == "price"
    telling = show_progress and measurement.measured_at not in _TOLD
    if not pricing and not telling:  # the reference's timing would serve nothing
        return measurement
    from trainplay.hardware import drift  # imports torch: only where a reference is timed

    factors = drift.drift_of(measurement.reference, drift.reference_now())
    if factors == {"compute": 1.0, "memory": 1.0}:
        return measurement
    if telling:
        _TOLD.add(measurement.measured_at)
        change = ", ".join(
            f"{what} {abs(f - 1):.0%} {'faster' if f > 1 else 'slower'}"
            for what, f in factors.items()
            if f != 1.0
        )
        priced = "priced at its speed now" if pricing else "priced as measured"
        pooled = measurement.pooled_from
        when = (
            f"pooled over {len(pooled)} measurements, {pooled[0]} to {pooled[-1]}"
            if len(pooled) > 1
            else measurement.measured_at
        )
        sys.stderr.write(
            f"trainplay: this machine runs {change} than when `local` was measured "
            f"({when}); {priced} (`trainplay hw measure` measures it again)\n"
        )
    if not pricing:
        return measurement
    workers = tuple(replace(w, peaks=drift.drifted(w.peaks, factors)) for w in measurement.workers)
    return replace(measurement, workers=workers)


def cpu_device() -> DeviceSpec:
    """The generic ``cpu`` catalog entry: this machine's CPU as one worker measured it."""
    measurement = load_cached(1)
    cpus = [w for w in (measurement.workers if measurement else ()) if w.device_type == "cpu"]
    if not cpus:
        raise SpecError(
            ("type",),
            "the cpu entry is built from a measurement of this machine: "
            "run `trainplay hw measure --device cpu` first",
        )
    device = device_of(cpus[0])
    return DeviceSpec(
        name="cpu",
        type="cpu",
        peak_flops=device.peak_flops,
        mem_bw_bps=device.mem_bw_bps,
        mem_bytes=device.mem_bytes,
        measured=device.measured,
        source=device.source,
    )


def parse_local(spec: str) -> int | None:
    """Workers of a ``local`` or ``local:N`` spec; ``None`` for anything else."""
    name, _, count = spec.partition(":")
    if name != "local":
        return None
    if not count:
        return 1
    if not count.isdigit() or int(count) < 1:
        raise UsageError(f"--cluster local:N takes a positive number of workers, got {spec!r}")
    return int(count)


def resolve_cluster(
    spec: str, *, workers: int | None = None, show_progress: bool = True
) -> ClusterSpec:
    """``local`` (this machine, ``workers`` workers: 1 unless the caller's layout says more),
    ``local:N`` (N workers), the path of a cluster YAML file, or a preset's name
    (:mod:`.presets`): what ``--cluster`` takes everywhere."""
    count = parse_local(spec)
    if count is not None:
        if ":" not in spec and workers is not None:
            count = workers
        return local_cluster(count, show_progress=show_progress)
    return load_cluster(cluster_path(spec), cpu=cpu_device)
