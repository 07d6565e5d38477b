"""A table like the MD-Roofline paper's: per CNN, FLOPs, bytes, parameters, intensity, and the share
of iteration time that is compute-, memory- and communication-bound on four systems:

(a) this CPU, two data-parallel processes, peaks measured now (`trainplay hw measure --nproc 2`);
(b) 8 x V100-16GB in one node over NVLink 2;  (c) 8 x V100-16GB, one per node, over 10 GbE;
(d) 8 x H200 in one node over NVLink 4 — (b)-(d) from the catalog's datasheet peaks.

Data parallel, batch 32 per GPU (8 per CPU process), fp32, SGD. Run: ``python benchmarks/cnn12.py``.
Writes ``benchmarks/results/cnn12.md``, ``.json`` and ``cnn12.png``/``.svg``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from rich.progress import track

from trainplay.hardware.cluster import parse_cluster
from trainplay.hardware.measure.launch import measure
from trainplay.roofline.analysis import analyze
from trainplay.roofline.layout import Parallel
from trainplay.workload import profile
from trainplay.workload.zoo import CLASSIC_CNNS

RESULTS = Path(__file__).parent / "results"


def _systems():
    with tempfile.TemporaryDirectory() as cache:
        os.environ.setdefault("TRAINPLAY_CACHE_DIR", cache)
        cpu = measure(nproc=2, device="cpu", quick=True, show_progress=False).to_cluster(
            "this CPU, 2 processes"
        )
    v100 = parse_cluster(
        {
            "name": "8xV100 NVLink",
            "nodes": [
                {
                    "name": "n",
                    "devices": [{"type": "V100-16GB", "count": 8}],
                    "intra_link": "nvlink2",
                }
            ],
        }
    )
    v100_eth = parse_cluster(
        {
            "name": "8xV100 10GbE",
            "inter_link": "10gbe",
            "nodes": [{"name": f"n{i}", "devices": [{"type": "V100-16GB"}]} for i in range(8)],
        }
    )
    h200 = parse_cluster(
        {
            "name": "8xH200 NVLink",
            "nodes": [
                {"name": "n", "devices": [{"type": "H200", "count": 8}], "intra_link": "nvlink4"}
            ],
        }
    )
    return [(cpu, 2, 8), (v100, 8, 32), (v100_eth, 8, 32), (h200, 8, 32)]


def main() -> None:
    systems = _systems()
    rows = []
    for name in track(CLASSIC_CNNS, description="analysing", transient=True):
        profiles = {b: profile(name, batch_size=b) for b in {batch for _, _, batch in systems}}
        row = {"model": name}
        gpu = profiles[32]
        totals = gpu.totals
        row.update(
            gflops_per_sample=(totals["fwd_flops"] + totals["bwd_flops"]) / 32 / 1e9,
            gbytes_per_sample=(totals["fwd_bytes"] + totals["bwd_bytes"]) / 32 / 1e9,
            params_m=totals["params"] / 1e6,
        )
        for cluster, dp, batch in systems:
            result = analyze(profiles[batch], cluster, Parallel(dp=dp))
            row[cluster.name] = {
                "A": result.iteration.A,
                "predicted_s": result.iteration.predicted_s,
                **{k: v for k, v in result.iteration.bound_shares.items()},
            }
        rows.append(row)
    names = [c.name for c, _, _ in systems]
    lines = [
        "# Where fourteen classic CNNs spend a training iteration (MD-Roofline)",
        "",
        "Command: `python benchmarks/cnn12.py`. Data parallel, fp32, SGD; batch 32 per GPU, 8 per CPU process. "
        "Shares of predicted iteration time: compute-bound / memory-bound / exposed communication. "
        "(a) uses peaks measured on this machine; (b)-(d) the catalog's datasheet peaks (upper bounds, so "
        "communication shares there are lower bounds).",
        "",
        "| model | GFLOP/sample | GB/sample | params M | "
        + " | ".join(f"{n}: A, c/m/comm %" for n in names)
        + " |",
        "|---|---|---|---|" + "---|" * len(names),
    ]
    for r in rows:
        cells = []
        for n in names:
            s = r[n]
            cells.append(
                f"{s['A']:.1f}, {100 * s.get('compute', 0):.0f}/{100 * s.get('memory', 0):.0f}/"
                f"{100 * s.get('communication', 0):.0f}"
            )
        lines.append(
            f"| {r['model']} | {r['gflops_per_sample']:.2f} | {r['gbytes_per_sample']:.2f} | "
            f"{r['params_m']:.1f} | " + " | ".join(cells) + " |"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cnn12.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "cnn12.json").write_text(json.dumps(rows, indent=2) + "\n")
    _plot(rows, names)
    print("\n".join(lines))


def _plot(rows, names) -> None:
    colours = {"compute": "#0072B2", "memory": "#E69F00", "communication": "#D55E00"}
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 5.5), sharey=True)
    labels = [r["model"] for r in rows]
    for ax, name in zip(axes, names, strict=True):
        left = [0.0] * len(rows)
        for bound, colour in colours.items():
            values = [100 * r[name].get(bound, 0) for r in rows]
            ax.barh(labels, values, left=left, color=colour, label=bound)
            left = [a + b for a, b in zip(left, values, strict=True)]
        ax.set_title(name, fontsize=10)
        ax.set_xlim(0, 100)
        ax.set_xlabel("% of predicted iteration time")
        ax.invert_yaxis()
    handles, names_ = axes[0].get_legend_handles_labels()
    fig.legend(handles, names_, loc="upper right", ncol=3, fontsize=9, frameon=False)
    fig.suptitle("MD-Roofline bound shares per CNN (data parallel)", x=0.3)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    for ext in ("png", "svg"):
        fig.savefig(RESULTS / f"cnn12.{ext}", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
