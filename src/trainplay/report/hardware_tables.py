"""Terminal tables of the hardware level: the catalog, a cluster, a measurement."""

from __future__ import annotations

from rich.table import Table

from trainplay.hardware.catalog import DEVICES, LINKS
from trainplay.hardware.measurement import Measurement
from trainplay.hardware.spec import DTYPES, ClusterSpec, LinkSpec
from trainplay.report.units import (
    column_scale,
    format_duration,
    format_number,
    format_rate,
    plural,
)

__all__ = [
    "catalog_tables",
    "cluster_table",
    "device_summary",
    "measurement_table",
    "preset_table",
    "sweep_notes",
]


def _rate(value: float | None, scale: float = 1e12, digits: int = 3) -> str:
    return "-" if value is None else format_number(value / scale, digits)


def catalog_tables(cpu_note: str) -> tuple[Table, Table]:
    """Devices (dense peak TFLOP/s per dtype, memory) and links, each with its source."""
    devices = Table(
        title="Devices (dense datasheet peaks; `trainplay hw measure` gives achievable ones)",
        header_style="bold",
        show_lines=False,
    )
    devices.add_column("type", no_wrap=True)
    for dtype in DTYPES:
        devices.add_column(f"{dtype}\nTFLOP/s", justify="right")
    devices.add_column("memory\nGB/s", justify="right")
    devices.add_column("memory\nGiB", justify="right")
    devices.add_column("source")
    for entry in DEVICES.values():
        devices.add_row(
            entry.name,
            *(_rate(entry.peak_flops.get(d)) for d in DTYPES),
            format_number(entry.mem_bw_bps / 1e9),
            format_number(entry.mem_bytes / 2**30),
            entry.source,
        )
    devices.add_row("cpu", *["" for _ in DTYPES], "", "", cpu_note)
    links = Table(title="Links (bandwidth one way)", header_style="bold")
    links.add_column("type", no_wrap=True)
    links.add_column("GB/s", justify="right")
    links.add_column("latency µs", justify="right")
    links.add_column("source")
    for entry in LINKS.values():
        links.add_row(
            entry.name,
            format_number(entry.bandwidth_bps / 1e9),
            format_number(entry.latency_s * 1e6),
            entry.source,
        )
    return devices, links


def device_summary(cluster: ClusterSpec) -> str:
    """``2x V100-16GB, 4x T4`` (counts per device type, in the order they appear)."""
    counts: dict[str, int] = {}
    for node in cluster.nodes:
        for device in node.devices:
            counts[device.name] = counts.get(device.name, 0) + device.count
    return ", ".join(f"{n}x {name}" for name, n in counts.items())


def preset_table(presets: dict[str, tuple[ClusterSpec, str]], aliases: dict[str, str]) -> Table:
    """The named clusters ``--cluster`` takes: devices, links, and what each one is."""
    table = Table(title="Cluster presets (`--cluster NAME`)", header_style="bold")
    for header in ("name", "devices", "nodes", "links", "what"):
        table.add_column(header, no_wrap=header == "name")
    for name, (cluster, what) in presets.items():
        other = [a for a, target in aliases.items() if target == name]
        links = sorted({n.intra_link.name for n in cluster.nodes if n.intra_link is not None})
        if cluster.inter_link is not None:
            links.append(f"{cluster.inter_link.name} between nodes")
        table.add_row(
            name + (f" ({', '.join(other)})" if other else ""),
            device_summary(cluster),
            str(len(cluster.nodes)),
            ", ".join(links),
            what,
        )
    return table


def _link(link: LinkSpec | None) -> str:
    if link is None:
        return "-"
    rate, latency = format_rate(link.bandwidth_bps, "B/s"), format_duration(link.latency_s)
    return f"{link.name} ({rate}, {latency})"


def cluster_table(cluster: ClusterSpec, dtype: str = "fp32") -> Table:
    """One row per worker: its device, the peaks MD-Roofline will use, memory, window, link.
    Each peak column has one unit, chosen from its largest value (TFLOP/s for GPUs, GFLOP/s for
    a CPU)."""
    table = Table(
        title=f"cluster {cluster.name}: {plural(len(cluster.workers()), 'worker')} on "
        f"{plural(len(cluster.nodes), 'node')}; between nodes: {_link(cluster.inter_link)}",
        header_style="bold",
    )
    workers = cluster.workers()
    peaks = [
        w.peaks(dtype) if dtype in w.device.peak_flops or w.device.measured else None
        for w in workers
    ]
    scales = {
        key: column_scale([v for p in peaks if p and (v := getattr(p, key))] or [1e9], False)
        for key in ("apf", "apm", "apb")
    }
    (f_scale, f_prefix), (m_scale, m_prefix), (b_scale, b_prefix) = scales.values()
    for header in (
        "rank",
        "node",
        "device",
        f"APF {dtype}\n{f_prefix}FLOP/s",
        f"APM\n{m_prefix}B/s",
        f"APB\n{b_prefix}B/s",
        "peaks from",
        "memory\nGiB",
        "available s",
        "link in node",
    ):
        table.add_column(
            header,
            justify="right" if "/s" in header or header in ("rank", "memory\nGiB") else "left",
        )
    nodes = {node.name: node for node in cluster.nodes}
    for worker, peak in zip(workers, peaks, strict=True):
        device = worker.device
        window = device.available
        table.add_row(
            str(worker.rank),
            worker.node,
            device.name,
            _rate(peak.apf if peak else None, f_scale, 4),
            _rate(peak.apm if peak else None, m_scale, 4),
            _rate(peak.apb if peak else None, b_scale, 4),
            peak.origin if peak else f"no {dtype} peak",
            format_number(device.mem_bytes / 2**30),
            "always"
            if window is None
            else f"{window.from_s:,.0f} – "
            + ("end" if window.until_s is None else f"{window.until_s:,.0f}"),
            _link(nodes[worker.node].intra_link),
        )
    return table


def measurement_table(measurement: Measurement, alone: bool = False) -> Table:
    """One row per worker: APF, APM, APB with their spread, and the alpha-beta fits; ``alone``:
    the measurement of one worker while the machine's others idle."""
    kind = "quick" if measurement.quick else "full"
    workers = (
        "1 worker alone, the others idle" if alone else plural(len(measurement.workers), "worker")
    )
    table = Table(
        title=f"achievable peaks, {workers}, "
        f"{measurement.backend}, {kind} measurement in {format_duration(measurement.seconds)}",
        header_style="bold",
        caption="± is the coefficient of variation of the samples; fits: t = α + bytes/β",
    )
    for header in (
        "rank",
        "host",
        "device",
        "APF\nGFLOP/s",
        "APM\nGB/s",
        "APB bus\nGB/s",
        "all-reduce\nα µs",
        "β GB/s",
        "R²",
        "p2p\nα µs",
        "β GB/s",
        "R²",
    ):
        table.add_column(header, justify="left" if header in ("host", "device") else "right")
    for w in measurement.workers:
        p, spread = w.peaks, w.peaks.spread
        table.add_row(
            str(w.rank),
            w.host,
            w.device,
            f"{format_number(p.apf / 1e9, 4)} ±{100 * spread.get('apf', 0):.1f}%",
            f"{format_number(p.apm / 1e9, 4)} ±{100 * spread.get('apm', 0):.1f}%",
            "-"
            if p.apb is None
            else f"{format_number(p.apb / 1e9, 4)} ±{100 * spread.get('apb', 0):.1f}%",
            _rate(p.alpha_s, 1e-6),
            _rate(p.beta_bps, 1e9, 4),
            "-" if p.r2 is None else f"{p.r2:.4f}",
            _rate(p.p2p_alpha_s, 1e-6),
            _rate(p.p2p_beta_bps, 1e9, 4),
            "-" if p.p2p_r2 is None else f"{p.p2p_r2:.4f}",
        )
    return table


def sweep_notes(measurement: Measurement) -> list[str]:
    """One line per distinct operator sweep of ``measurement``'s workers: how many cases, passes,
    cases timed again until their passes agreed and samples disturbed (the profile's
    :attr:`~trainplay.hardware.profile.PerfProfile.source`), with the ranks it is theirs."""
    by_source: dict[str, list[int]] = {}
    for w in measurement.workers:
        if w.peaks.profile is not None:
            by_source.setdefault(w.peaks.profile.source, []).append(w.rank)
    return [
        f"operator sweep, rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}: "
        + source.removeprefix("trainplay hw measure: ")
        for source, ranks in by_source.items()
    ]
