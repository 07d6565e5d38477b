"""Which devices are present: each node says what it has, the ranks gather it, the plan follows.

A node is one ``trainplay train`` (one torchrun agent). Its launcher resolves ``--cluster`` once
(a cluster file, or ``local``: this machine's cached measurement) and hands its workers a
:class:`NodeDevices`: the node's name, one explicit device per local rank, and the links. On every
start and restart each rank contributes its entry and all ranks build the same
:class:`~trainplay.hardware.spec.ClusterSpec` of the devices present, node by node in rank order,
so device ids (``node/type:k``) are stable across restarts and the planner sees what is there.

- **Which node of a cluster file.** ``--node-name`` names it; a file with one node, or whose nodes
  all hold the same devices, needs no name.
- **CPU processes share a CPU.** ``cpu`` devices are not separate chips. ``local`` for a node of
  ``K`` processes is this machine measured with ``K`` workers (:mod:`trainplay.hardware.local`),
  so each process keeps the figures its own worker measured; a CPU measured with fewer workers
  than the node runs (a cluster file's ``cpu``) is priced at its share, ``measured workers / K``
  of its FLOP/s, memory bandwidth and operator rates, and ``1/K`` of its memory.
- **Node names.** ``--node-name`` (or ``TRAINPLAY_NODE_NAME``), else the host name: stable across
  runs, so a rerun or a restart on the same devices finds the same device ids and keeps its plan.
  Several nodes on one host (tests, a workstation) need a ``--node-name`` each; two nodes of one
  name are refused in one line.
- **Links.** The node's intra-node link and the cluster's inter-node link; where the cluster
  gives none (``local`` measured with one process), gloo over loopback is assumed:
  ``LOOPBACK`` below, the order ``trainplay hw measure --nproc 2`` measured on the 2-core
  development VM (benchmarks/results/hw_peaks.md: bus bandwidth 0.94-1.14 GB/s, alpha 0.4-0.9 ms).
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from trainplay.errors import UsageError
from trainplay.hardware.cluster import parse_cluster
from trainplay.hardware.spec import ClusterSpec, DeviceSpec, LinkSpec, NodeSpec, Peaks

__all__ = [
    "ENV",
    "LOOPBACK",
    "NAME_ENV",
    "NodeDevices",
    "node_name",
    "present_cluster",
    "this_node",
]

ENV = "TRAINPLAY_NODE"
"""Environment variable through which a launcher hands its workers the node's description: the
path of a file holding it (:meth:`NodeDevices.to_json`), or the JSON itself. A file, since a
node's performance profiles (a CPU's measured busy and alone, per worker) outgrow what Linux lets
one environment variable hold (128 KiB: two workers' took 266 KB)."""

LOOPBACK = LinkSpec(
    name="loopback (assumed)",
    bandwidth_bps=1e9,
    latency_s=5e-4,
    source="assumption: gloo over TCP loopback, order measured by `trainplay hw measure --nproc 2`",
)


@dataclass(frozen=True, kw_only=True)
class NodeDevices:
    """One node as its workers announce it: a device per local rank, and its links."""

    name: str
    devices: tuple[dict[str, Any], ...]
    """Explicit device entries (``count`` 1, numbers inline), one per local rank."""
    intra_link: dict[str, Any] | str | None = None
    inter_link: dict[str, Any] | str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "name": self.name,
                "devices": list(self.devices),
                "intra_link": self.intra_link,
                "inter_link": self.inter_link,
            }
        )

    @classmethod
    def from_env(cls, value: str) -> NodeDevices:
        """The node :data:`ENV` describes (a file's path, or the JSON itself)."""
        return cls.from_json(value if value.lstrip().startswith("{") else Path(value).read_text())

    @classmethod
    def from_json(cls, text: str) -> NodeDevices:
        data = json.loads(text)
        return cls(
            name=data["name"],
            devices=tuple(data["devices"]),
            intra_link=data.get("intra_link"),
            inter_link=data.get("inter_link"),
        )


NAME_ENV = "TRAINPLAY_NODE_NAME"
"""The node's name when ``--node-name`` is not given (plain torchrun has no such flag)."""


def node_name(given: str | None) -> str:
    """``given``, else ``TRAINPLAY_NODE_NAME``, else this host's name: the same on every run."""
    return given or os.environ.get(NAME_ENV) or socket.gethostname()


def _pick(cluster: ClusterSpec, name: str | None) -> NodeSpec:
    names = [n.name for n in cluster.nodes]
    if name is not None and name in names:
        return cluster.nodes[names.index(name)]
    kinds = {json.dumps([d.to_dict() for d in n.devices], sort_keys=True) for n in cluster.nodes}
    if len(cluster.nodes) == 1 or len(kinds) == 1:
        return cluster.nodes[0]
    raise UsageError(
        f"cluster {cluster.name!r} has nodes {', '.join(names)} with different devices; "
        "pass --node-name NAME to say which one this is"
    )


def _is_cpu(device: DeviceSpec) -> bool:
    """The catalog's ``cpu``, or a CPU ``trainplay hw measure`` named ``cpu-rank<k>``."""
    return device.type == "cpu" or device.name == "cpu" or device.name.startswith("cpu-")


def _shared(peaks: Peaks, factor: float) -> Peaks:
    """``peaks`` at ``factor`` of their rates (a CPU split between more processes; each keeps its
    fixed cost per operator)."""
    # measured with fewer workers: how one of these runs alone is not known
    shared = replace(peaks, alone=None).scaled(factor, overheads=False)
    profile = shared.profile
    if profile is not None:
        profile = replace(profile, workers=round(profile.workers / factor))
    return replace(shared, profile=profile)


def _explicit(device: DeviceSpec, index: int, nproc: int, cpu: bool) -> dict[str, Any]:
    peaks = device.measured[index if len(device.measured) > 1 else 0] if device.measured else None
    flops = dict(device.peak_flops)
    bandwidth, memory = device.mem_bw_bps, device.mem_bytes
    measured = () if peaks is None else (peaks,)
    measured_with = peaks.profile.workers if peaks is not None and peaks.profile else 1
    if cpu and measured_with < nproc:
        factor = measured_with / nproc
        flops = {k: v * factor for k, v in flops.items()}
        bandwidth, memory = bandwidth * factor, int(memory * factor)
        if peaks is not None:
            measured = (_shared(peaks, factor),)
    plain = replace(
        device,
        type=None,
        count=1,
        peak_flops=flops,
        mem_bw_bps=bandwidth,
        mem_bytes=memory,
        measured=measured,
    )
    return plain.to_dict()


def this_node(cluster: ClusterSpec, *, name: str | None, nproc: int) -> NodeDevices:
    """This node's devices for ``nproc`` local workers, from the node of ``cluster`` it is."""
    node = _pick(cluster, name)
    flat = [(d, i) for d in node.devices for i in range(d.count)]
    cpu = bool(flat) and all(_is_cpu(d) for d, _ in flat)
    if cpu and len(flat) != nproc:  # one CPU's measurement for every process of the node
        flat = [flat[0]] * nproc
    if len(flat) < nproc:
        raise UsageError(
            f"node {node.name!r} of cluster {cluster.name!r} has {len(flat)} devices; "
            f"--nproc-per-node {nproc} needs one each (lower it, or describe the node's devices)"
        )
    devices = tuple(_explicit(d, i, nproc, cpu) for d, i in flat[:nproc])
    intra = node.intra_link or (LOOPBACK if nproc > 1 else None)
    inter = cluster.inter_link or LOOPBACK
    return NodeDevices(
        name=node_name(name),
        devices=devices,
        intra_link=None if intra is None else intra.to_dict(),
        inter_link=inter.to_dict(),
    )


def present_cluster(entries: list[tuple[str, int, NodeDevices]]) -> tuple[ClusterSpec, list[str]]:
    """The cluster of the ranks present (``(node name, local rank, node)`` per rank, in rank
    order) and each rank's device id."""
    order: list[str] = []
    by_node: dict[str, list[tuple[int, int]]] = {}
    nodes: dict[str, NodeDevices] = {}
    for rank, (name, local_rank, node) in enumerate(entries):
        if name not in by_node:
            order.append(name)
            by_node[name] = []
            nodes[name] = node
        if any(local_rank == taken for taken, _ in by_node[name]):
            raise UsageError(
                f"two nodes are named {name!r} (the host name, unless --node-name says otherwise); "
                "give each node on this host its own --node-name"
            )
        by_node[name].append((local_rank, rank))
    data: dict[str, Any] = {"name": "present", "nodes": []}
    ids = [""] * len(entries)
    for name in order:
        members = sorted(by_node[name])
        node = nodes[name]
        entry: dict[str, Any] = {
            "name": name,
            "devices": [node.devices[local_rank] for local_rank, _ in members],
        }
        if len(members) > 1:
            entry["intra_link"] = node.intra_link or LOOPBACK.to_dict()
        data["nodes"].append(entry)
    if len(order) > 1:
        data["inter_link"] = nodes[order[0]].inter_link or LOOPBACK.to_dict()
    cluster = parse_cluster(data)
    seen: dict[tuple[str, str], int] = {}
    for name in order:
        for local_rank, rank in sorted(by_node[name]):
            device = nodes[name].devices[local_rank]["name"]
            k = seen.get((name, device), 0)
            seen[(name, device)] = k + 1
            ids[rank] = f"{name}/{device}:{k}"
    return cluster, ids
