"""``local``: this machine, measured now or taken from the cache of its last measurement.

The cache is one JSON file, ``$TRAINPLAY_CACHE_DIR`` or ``$XDG_CACHE_HOME/trainplay`` or
``~/.cache/trainplay``, ``local-peaks.json``. It is used only while the machine looks the same
(host, CPU model and count, GPUs, torch version); otherwise ``local`` measures again.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

from trainplay.errors import UsageError
from trainplay.hardware.cluster import load_cluster
from trainplay.hardware.machine import cpu_name, gpu_names, torch_version, usable_cpus
from trainplay.hardware.measurement import Measurement, device_of
from trainplay.hardware.presets import cluster_path
from trainplay.hardware.spec import ClusterSpec, DeviceSpec, SpecError

__all__ = [
    "cache_path",
    "cpu_device",
    "load_cached",
    "local_cluster",
    "resolve_cluster",
    "save_cached",
]

CACHE_FILE = "local-peaks.json"


def cache_path() -> Path:
    base = os.environ.get("TRAINPLAY_CACHE_DIR")
    if base is None:
        base = str(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "trainplay")
    return Path(base) / CACHE_FILE


def fingerprint() -> dict[str, Any]:
    """What must stay the same for a cached measurement to describe this machine (read without
    importing torch on a machine without GPUs, so `hw list` and `hw show FILE` start fast)."""
    return {
        "host": socket.gethostname(),
        "cpu": cpu_name(),
        "cpus": usable_cpus(),
        "gpus": gpu_names(),
        "torch": torch_version(),
    }


def save_cached(measurement: Measurement) -> Path | None:
    """Cache a single-host measurement; returns the file, or ``None`` when it could not be written."""
    if len({w.host for w in measurement.workers}) != 1:
        return None
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {"fingerprint": fingerprint(), "measurement": measurement.to_dict()}, indent=2
            )
        )
        tmp.replace(path)
    except OSError:
        return None
    return path


def load_cached() -> Measurement | None:
    """The cached measurement if it exists, reads, and matches this machine."""
    try:
        data = json.loads(cache_path().read_text())
        if data.get("fingerprint") != fingerprint():
            return None
        return Measurement.from_dict(data["measurement"])
    except (OSError, ValueError, KeyError, SpecError):
        return None


def local_cluster(*, measure_if_missing: bool = True, show_progress: bool = True) -> ClusterSpec:
    """This machine as a cluster: from the cache, or measured now (and cached)."""
    measurement = load_cached()
    if measurement is None:
        if not measure_if_missing:
            raise UsageError(
                "no measurement of this machine is cached: run `trainplay hw measure` first"
            )
        from trainplay.hardware.measure.launch import measure

        sys.stderr.write(
            "trainplay: no measurement of this machine is cached: measuring its peaks now "
            f"(usually 5-20 s, at most about 40 s; cached in {cache_path()} for next time)\n"
        )
        measurement = measure(show_progress=show_progress)
        assert measurement is not None  # one node: rank 0 is here
        save_cached(measurement)
    return measurement.to_cluster("local")


def cpu_device() -> DeviceSpec:
    """The generic ``cpu`` catalog entry: this machine's CPU as its last measurement saw it."""
    measurement = load_cached()
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


def resolve_cluster(spec: str, *, show_progress: bool = True) -> ClusterSpec:
    """``local``, the path of a cluster YAML file, or a preset's name (:mod:`.presets`): what
    ``--cluster`` takes everywhere."""
    if spec == "local":
        return local_cluster(show_progress=show_progress)
    return load_cluster(cluster_path(spec), cpu=cpu_device)
