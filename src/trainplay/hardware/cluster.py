"""Reading and writing cluster descriptions (YAML), resolving catalog names, naming bad lines.

``load_cluster(path)`` returns a validated :class:`~trainplay.hardware.spec.ClusterSpec` or raises a
:class:`ClusterFileError` whose one-line message names the file, the line and the field::

    mixed-lab.yaml:14: nodes[1].devices[1].mem_bw_bps: must be > 0, got 0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from trainplay.errors import UsageError
from trainplay.hardware import catalog
from trainplay.hardware.spec import (
    DTYPES,
    ClusterSpec,
    DeviceSpec,
    LinkSpec,
    NodeSpec,
    Peaks,
    SpecError,
    Window,
    _mapping,
    _text,
    positive,
)
from trainplay.userfile import read_text

__all__ = ["ClusterFileError", "dump_cluster", "load_cluster", "parse_cluster"]

CpuResolver = Callable[[], DeviceSpec]


class ClusterFileError(UsageError):
    """A cluster file that cannot be read or is wrong; the message names file, line and field."""


def parse_cluster(data: Any, cpu: CpuResolver | None = None) -> ClusterSpec:
    """Validate a cluster description given as plain data (as YAML or JSON would load it).

    ``cpu`` builds the ``cpu`` device type from a measurement; without it ``type: cpu`` is an error.
    """
    top = _mapping(data, (), ("name", "nodes", "inter_link"))
    name = _text(top.get("name"), ("name",))
    nodes_data = top.get("nodes")
    if not isinstance(nodes_data, list) or not nodes_data:
        raise SpecError(("nodes",), "must be a non-empty list of nodes")
    nodes = tuple(_node(n, ("nodes", i), cpu) for i, n in enumerate(nodes_data))
    seen: set[str] = set()
    for i, node in enumerate(nodes):
        if node.name in seen:
            raise SpecError(("nodes", i, "name"), f"node name {node.name!r} is used twice")
        seen.add(node.name)
    inter = top.get("inter_link")
    if inter is None and len(nodes) > 1:
        raise SpecError(
            ("inter_link",),
            "is required with more than one node (e.g. 10gbe, ib-hdr, "
            "or {bandwidth_bps: ..., latency_s: ...})",
        )
    inter_link = None if inter is None else _link(inter, ("inter_link",))
    return ClusterSpec(name=name, nodes=nodes, inter_link=inter_link)


def _node(data: Any, path: tuple, cpu: CpuResolver | None) -> NodeSpec:
    data = _mapping(data, path, ("name", "devices", "intra_link"))
    name = _text(data.get("name"), (*path, "name"))
    devices_data = data.get("devices")
    if not isinstance(devices_data, list) or not devices_data:
        raise SpecError((*path, "devices"), "must be a non-empty list of devices")
    devices = tuple(_device(d, (*path, "devices", i), cpu) for i, d in enumerate(devices_data))
    intra = data.get("intra_link")
    if intra is None and sum(d.count for d in devices) > 1:
        raise SpecError(
            (*path, "intra_link"),
            f"is required: node {name!r} has more than one device "
            "(e.g. nvlink3, pcie4, or {bandwidth_bps: ..., latency_s: ...})",
        )
    return NodeSpec(
        name=name,
        devices=devices,
        intra_link=None if intra is None else _link(intra, (*path, "intra_link")),
    )


_DEVICE_KEYS = (
    "source",
    "type",
    "name",
    "count",
    "peak_flops",
    "mem_bw_bps",
    "mem_bytes",
    "available",
    "measured",
)


def _device(data: Any, path: tuple, cpu: CpuResolver | None) -> DeviceSpec:
    data = _mapping(data, path, _DEVICE_KEYS)
    count = int(positive(data.get("count", 1), (*path, "count"), integer=True))
    available = (
        None
        if data.get("available") is None
        else Window.from_dict(data["available"], (*path, "available"))
    )
    measured_data = data.get("measured")
    if measured_data is None:
        measured: tuple[Peaks, ...] = ()
    elif isinstance(measured_data, list):
        measured = tuple(
            Peaks.from_dict(m, (*path, "measured", i)) for i, m in enumerate(measured_data)
        )
        if len(measured) not in (1, count):
            raise SpecError(
                (*path, "measured"), f"give 1 or {count} (count) entries, got {len(measured)}"
            )
    else:
        measured = (Peaks.from_dict(measured_data, (*path, "measured")),)
    if "type" in data:
        explicit = [k for k in ("peak_flops", "mem_bw_bps", "mem_bytes") if k in data]
        if explicit:
            raise SpecError(
                (*path, explicit[0]), "give either a catalog type or explicit numbers, not both"
            )
        kind = _text(data["type"], (*path, "type"))
        if kind.lower() == "cpu":
            if cpu is None:
                raise SpecError(
                    (*path, "type"),
                    "the cpu entry is built from a measurement of this "
                    "machine: run `trainplay hw measure` first",
                )
            base = cpu()
        else:
            base = catalog.device(kind, (*path, "type"))
        return DeviceSpec(
            name=str(data.get("name", base.name)),
            type=base.type,
            peak_flops=base.peak_flops,
            mem_bw_bps=base.mem_bw_bps,
            mem_bytes=base.mem_bytes,
            count=count,
            available=available,
            measured=measured or base.measured,
            source=base.source,
        )
    if "name" not in data:
        raise SpecError(
            path,
            "a device needs a catalog `type` or a `name` with peak_flops, mem_bw_bps, mem_bytes",
        )
    for key in ("peak_flops", "mem_bw_bps", "mem_bytes"):
        if key not in data:
            raise SpecError((*path, key), f"is required for explicit device {data['name']!r}")
    flops_data = _mapping(data["peak_flops"], (*path, "peak_flops"), DTYPES)
    if not flops_data:
        raise SpecError((*path, "peak_flops"), f"needs at least one of {', '.join(DTYPES)}")
    return DeviceSpec(
        name=_text(data["name"], (*path, "name")),
        peak_flops={k: positive(v, (*path, "peak_flops", k)) for k, v in flops_data.items()},
        mem_bw_bps=positive(data["mem_bw_bps"], (*path, "mem_bw_bps")),
        mem_bytes=int(positive(data["mem_bytes"], (*path, "mem_bytes"), integer=True)),
        count=count,
        available=available,
        measured=measured,
        source=str(data.get("source", "cluster file")),
    )


def _link(data: Any, path: tuple) -> LinkSpec:
    if isinstance(data, str):
        return catalog.link(data, path)
    data = _mapping(data, path, ("name", "bandwidth_bps", "latency_s", "source"))
    for key in ("bandwidth_bps", "latency_s"):
        if key not in data:
            raise SpecError((*path, key), "is required for a link given by numbers")
    return LinkSpec(
        name=str(data.get("name", "custom")),
        bandwidth_bps=positive(data["bandwidth_bps"], (*path, "bandwidth_bps")),
        latency_s=positive(data["latency_s"], (*path, "latency_s")),
        source=str(data.get("source", "cluster file")),
    )


# ----------------------------------------------------------------------------- YAML with line numbers


def _plain(node: yaml.Node, path: tuple, lines: dict[tuple, int], loader: yaml.SafeLoader) -> Any:
    """Turn a composed YAML node into plain data, remembering the line of every path."""
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            lines[(*path, key)] = key_node.start_mark.line + 1
            out[key] = _plain(value_node, (*path, key), lines, loader)
            lines[(*path, key)] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_plain(item, (*path, i), lines, loader) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def load_cluster(path: str | Path, cpu: CpuResolver | None = None) -> ClusterSpec:
    """Read and validate a cluster YAML file; errors name the file, line and field."""
    path = Path(path)
    text = read_text(path, "cluster file", hint="give a cluster YAML file", error=ClusterFileError)
    if not text.strip():
        raise ClusterFileError(
            f"cluster file {str(path)!r} is empty; start from a preset: "
            f"`trainplay hw show lab --format yaml > {path}`"
        )
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[tuple, int] = {}
        data = {} if node is None else _plain(node, (), lines, loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ClusterFileError(f"{where}: not valid YAML: {problem}") from None
    finally:
        loader.dispose()
    try:
        return parse_cluster(data, cpu)
    except SpecError as exc:
        line = _line_of(exc.path, lines)
        raise ClusterFileError(f"{path}:{line}: {exc}" if line else f"{path}: {exc}") from None


def _line_of(path: tuple, lines: Mapping[tuple, int]) -> int | None:
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None


def dump_cluster(cluster: ClusterSpec) -> str:
    """The cluster as YAML that :func:`load_cluster` reads back to an equal value."""
    return yaml.safe_dump(cluster.to_dict(), sort_keys=False, default_flow_style=None, width=100)
