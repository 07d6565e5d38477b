"""How long the TNP search takes: 100 blocks on 16 devices, 400 blocks on 64 devices.

Blocks: gpt2-xl and gpt2-small profiled on ``meta`` (fp16, sequence 1024), the transformer block
repeated to make 100 and 400 blocks (embedding first, head last), so each block has a real decoder
block's costs. gpt2-xl's blocks fill memory (few layouts fit); gpt2-small's leave the search wide.
Devices: mixed catalog nodes of 8 (V100-16GB NVLink, T4 PCIe, RTX3090 PCIe, A100-40GB NVLink, in
turn) over 100 GbE. Global batch 512, Adam. Times are the search alone (profiling excluded),
median of 3 runs in this process, with the spread.

Run: ``python benchmarks/plan_speed.py``. Writes ``benchmarks/results/plan_speed.md`` and ``.json``.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

from trainplay.hardware.cluster import parse_cluster
from trainplay.plan.api import block_costs
from trainplay.plan.costs import AFFINE_KEYS, BlockCosts, CostModel, devices_of
from trainplay.plan.search import search

RESULTS = Path(__file__).parent / "results"
CASES = [(100, 16, 1.0), (400, 64, 10.0)]  # blocks, devices, target seconds
TYPES = [("V100-16GB", "nvlink2"), ("T4", "pcie3"), ("RTX3090", "pcie4"), ("A100-40GB", "nvlink3")]


def stretched(costs: BlockCosts, n: int) -> BlockCosts:
    """``costs`` with its middle (transformer) block repeated to ``n`` blocks."""
    pick = [0] + [1] * (n - 2) + [costs.n - 1]

    def take(values):
        return tuple(values[i] for i in pick)

    return replace(
        costs,
        names=tuple(f"{costs.names[i]}#{k}" for k, i in enumerate(pick)),
        fixed={k: take(costs.fixed[k]) for k in AFFINE_KEYS},
        per_sample={k: take(costs.per_sample[k]) for k in AFFINE_KEYS},
        param_bytes=take(costs.param_bytes),
        ops=take(costs.ops) if costs.ops else (),
        param_tensors=take(costs.param_tensors) if costs.param_tensors else (),
        largest_param_bytes=take(costs.largest_param_bytes) if costs.largest_param_bytes else (),
    )


def cluster(devices: int):
    nodes = [
        {
            "name": f"n{k}",
            "devices": [{"type": TYPES[k % 4][0], "count": 8}],
            "intra_link": TYPES[k % 4][1],
        }
        for k in range(devices // 8)
    ]
    return parse_cluster({"name": f"mixed-{devices}", "nodes": nodes, "inter_link": "100gbe"})


def main() -> None:
    rows = []
    for model, n, d, target in [(m, *case) for m in ("gpt2-xl", "gpt2-small") for case in CASES]:
        base = block_costs(model, dtype="fp16", seq_len=1024)
        spec = cluster(d)
        times, found = [], None
        for _ in range(3):
            cm = CostModel(stretched(base, n), spec, "adam")  # fresh caches each run
            start = time.perf_counter()
            found = search(cm, devices_of(spec, "fp16"), 512)
            times.append(time.perf_counter() - start)
        assert found is not None
        layout = found.layout
        rows.append(
            {
                "model": model,
                "blocks": n,
                "devices": d,
                "target_s": target,
                "median_s": statistics.median(times),
                "min_s": min(times),
                "max_s": max(times),
                "exact": found.exact,
                "layouts_priced": found.evaluated,
                "plan": f"{layout.replicas}x{layout.stages}, mb {layout.microbatches}, {layout.schedule}",
                "iteration_s": found.time_s,
            }
        )
        print(rows[-1])
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "plan_speed.json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = [
        "# TNP search speed",
        "",
        "Command: `python benchmarks/plan_speed.py` on this 2-core VM. gpt2-xl's and gpt2-small's "
        "blocks (fp16, seq 1024) with the transformer block repeated; mixed catalog nodes of 8 devices over "
        "100 GbE; global batch 512, Adam. Search only, median of 3 (min-max).",
        "",
        "| blocks of | blocks | devices | search s (median) | min-max | target | mode | layouts priced | plan | predicted iteration s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['blocks']} | {r['devices']} | {r['median_s']:.2f} | {r['min_s']:.2f}-{r['max_s']:.2f} | "
            f"< {r['target_s']:.0f} | {'exact' if r['exact'] else 'heuristic'} | {r['layouts_priced']} | "
            f"{r['plan']} | {r['iteration_s']:.3f} |"
        )
    (RESULTS / "plan_speed.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
