"""TNP plans against the baselines on mixed clusters built from the catalog.

For each cluster and model: the planned iteration time, every baseline's (or why it does not fit),
the speed-up over the best baseline that fits, and the memory headroom of the plan's fullest device.
All numbers come from trainplay's cost model (MD-Roofline with datasheet peaks), the same one for
plan and baselines; they are predictions, not measurements.

Run: ``python benchmarks/plan_quality.py``. Writes ``benchmarks/results/plan_quality.md`` and
``.json``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from trainplay.hardware.cluster import parse_cluster
from trainplay.plan.api import block_costs, plan_model

RESULTS = Path(__file__).parent / "results"

CLUSTERS = {
    "lab: 2xV100-16GB + 4xT4 + 2xRTX3090, 10GbE": {
        "nodes": [
            {
                "name": "volta",
                "devices": [{"type": "V100-16GB", "count": 2}],
                "intra_link": "nvlink2",
            },
            {"name": "turing", "devices": [{"type": "T4", "count": 4}], "intra_link": "pcie3"},
            {"name": "ampere", "devices": [{"type": "RTX3090", "count": 2}], "intra_link": "pcie4"},
        ],
        "inter_link": "10gbe",
    },
    "one box: 2xRTX4090 + 2xRTX3090 + 4xRTX2080Ti, PCIe 3": {
        "nodes": [
            {
                "name": "box",
                "devices": [
                    {"type": "RTX4090", "count": 2},
                    {"type": "RTX3090", "count": 2},
                    {"type": "RTX2080Ti", "count": 4},
                ],
                "intra_link": "pcie3",
            }
        ],
    },
    "ageing: 4xV100-32GB NVLink + 4xT4, 25GbE": {
        "nodes": [
            {"name": "v", "devices": [{"type": "V100-32GB", "count": 4}], "intra_link": "nvlink2"},
            {"name": "t", "devices": [{"type": "T4", "count": 4}], "intra_link": "pcie3"},
        ],
        "inter_link": "25gbe",
    },
    "new + old: 2xA100-40GB + 2xA10 + 4xT4, 100GbE": {
        "nodes": [
            {
                "name": "a100",
                "devices": [{"type": "A100-40GB", "count": 2}],
                "intra_link": "nvlink3",
            },
            {"name": "a10", "devices": [{"type": "A10", "count": 2}], "intra_link": "pcie4"},
            {"name": "t4", "devices": [{"type": "T4", "count": 4}], "intra_link": "pcie3"},
        ],
        "inter_link": "100gbe",
    },
    "inference cards: 4xL4 + 4xT4, 25GbE": {
        "nodes": [
            {"name": "l4", "devices": [{"type": "L4", "count": 4}], "intra_link": "pcie4"},
            {"name": "t4", "devices": [{"type": "T4", "count": 4}], "intra_link": "pcie3"},
        ],
        "inter_link": "25gbe",
    },
}

MODELS = [  # (model, dtype, global batch, sequence length, optimizer)
    ("resnet50", "fp32", 256, None, "sgd"),
    ("vgg16", "fp32", 256, None, "sgd"),
    ("densenet121", "fp32", 256, None, "sgd"),
    ("gpt2-medium", "fp16", 64, 1024, "adam"),
    ("gpt2-xl", "fp16", 32, 1024, "adam"),
    ("llama-7b", "fp16", 32, 1024, "sgd"),
]


def _only_tnp(rows: list[dict]) -> str:
    n = sum(1 for r in rows if "plan_s" in r and not r.get("speedup"))
    return f"{n} case" if n == 1 else f"{n} cases"


def main() -> None:
    rows = []
    started = time.perf_counter()
    for model, dtype, batch, seq, optimizer in MODELS:
        costs = block_costs(model, dtype=dtype, seq_len=seq)
        for label, spec in CLUSTERS.items():
            cluster = parse_cluster({"name": label.split(":")[0], **spec})
            t0 = time.perf_counter()
            try:
                result = plan_model(
                    model, cluster, global_batch=batch, optimizer=optimizer, dtype=dtype,
                    seq_len=seq, costs=costs,
                )  # fmt: skip
            except Exception as exc:  # a model that fits nowhere is a result too
                rows.append({"model": model, "cluster": label, "error": str(exc)})
                print(f"{model:12s} {label[:40]:40s} {exc}")
                continue
            seconds = time.perf_counter() - t0
            ours = result.plan.predicted_iteration_s
            fitting = [b for b in result.baselines if b.predicted_iteration_s is not None]
            best = min(fitting, key=lambda b: b.predicted_iteration_s or 0.0) if fitting else None
            fullest = max(
                (d for d in result.devices if d["mem_used_bytes"]),
                key=lambda d: d["mem_used_bytes"] / d["mem_capacity_bytes"],
            )
            rows.append(
                {
                    "model": model,
                    "dtype": dtype,
                    "optimizer": optimizer,
                    "global_batch": batch,
                    "cluster": label,
                    "plan_s": ours,
                    "plan": {
                        "replicas": result.plan.replicas,
                        "stages": len(result.plan.stages),
                        "microbatches": result.plan.microbatches,
                        "schedule": result.plan.schedule,
                        "recompute": any(result.plan.recompute),
                        "devices_used": len(result.plan.devices),
                    },
                    "baselines": [b.to_dict() for b in result.baselines],
                    "best_baseline": best.name if best else None,
                    "speedup": (best.predicted_iteration_s / ours) if best else None,
                    "fullest_device_share": fullest["mem_used_bytes"]
                    / fullest["mem_capacity_bytes"],
                    "search": result.search,
                    "seconds": seconds,
                }
            )
            speed = f"{rows[-1]['speedup']:.2f}x" if best else "no baseline fits"
            print(f"{model:12s} {label[:40]:40s} {ours * 1e3:9.1f} ms  {speed}  ({seconds:.1f} s)")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "plan_quality.json").write_text(json.dumps(rows, indent=2) + "\n")
    (RESULTS / "plan_quality.md").write_text(_markdown(rows, time.perf_counter() - started))


def _ms(value: float | None) -> str:
    return "does not fit" if value is None else f"{value * 1e3:.1f}"


def _markdown(rows: list[dict], seconds: float) -> str:
    names = ["gpipe-equal-blocks", "equal-params", "data-parallel", "pipedream-homogeneous"]
    out = [
        "# TNP plans against the baselines (predicted iteration time, ms)",
        "",
        f"Command: `python benchmarks/plan_quality.py` ({seconds:.0f} s). Datasheet peaks from the "
        "catalog; one cost model (MD-Roofline blocks, link alpha-beta, ring all-reduce, GPipe closed "
        "form / 1F1B simulated) for the plan and every baseline. Speed-up = best fitting baseline / "
        "plan. `mem` = the plan's fullest device, share of its capacity (10% is kept as workspace).",
        "",
        "| model | cluster | TNP plan | layout | " + " | ".join(names) + " | speed-up | mem |",
        "|---|---|---|---|" + "---|" * len(names) + "---|---|",
    ]
    for r in rows:
        if "error" in r:
            out.append(
                f"| {r['model']} | {r['cluster']} | {r['error']} |" + " |" * (len(names) + 3)
            )
            continue
        p = r["plan"]
        layout = (
            f"{p['replicas']}x{p['stages']}, mb {p['microbatches']}, {p['schedule']}"
            + (", recompute" if p["recompute"] else "")
            + f", {p['devices_used']} devices"
        )
        base = {b["name"]: b["predicted_iteration_s"] for b in r["baselines"]}
        speed = f"{r['speedup']:.2f}x" if r["speedup"] else "only TNP fits"
        out.append(
            f"| {r['model']} ({r['dtype']}, {r['optimizer']}, B={r['global_batch']}) | {r['cluster']} | "
            f"**{_ms(r['plan_s'])}** | {layout} | "
            + " | ".join(_ms(base.get(n)) for n in names)
            + f" | {speed} | {100 * r['fullest_device_share']:.0f}% |"
        )
    speedups = [r["speedup"] for r in rows if r.get("speedup")]
    if speedups:
        speedups.sort()
        out += [
            "",
            f"Speed-up over the best baseline: median {speedups[len(speedups) // 2]:.2f}x, "
            f"min {speedups[0]:.2f}x, max {speedups[-1]:.2f}x over {len(speedups)} cases where a "
            f"baseline fits; {_only_tnp(rows)} where only the TNP plan fits.",
        ]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
