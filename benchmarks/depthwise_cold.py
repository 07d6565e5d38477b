"""Grouped and depthwise convolutions after the caches were flushed, input re-read or not: a
microbenchmark of what a flush costs them beside dense calls.

On a CPU the cost model prices a call whose data fits in half the effective cache at its class's
hot-cache rate: the operator before it has just written its input. Inside training steps
depthwise convolutions ran at 2-4 times their hot time (2026-12-04), and pricing every grouped
and depthwise convolution at its cold rate was tried on that ground and not kept: the blind
held-out-17 set came out worse with it (``validate_cpu_reprice.py --with depthwise-cold``). This
script times the sweep's own cases (``trainplay.hardware.measure.sweeps``, ``--quick`` sizes:
every grouped and depthwise case, and the dense 1x1 convolutions and matrix products of
comparable bytes as a control) four ways, one thread and two, each the median of ``--reps``
calls:

- ``hot``: back to back on the same tensors (the sweep's hot time);
- ``flushed``: just after reading a buffer of ``--flush-mib`` MiB (64: past this machine's last
  level cache), as the sweep's cold time;
- ``input re-read``: just after the same flush and then one read of the call's input (argument
  0: the map forward, the output's gradient backward), as in a training step, where the layer
  before has just written it;
- ``small flush``: after reading 2 MiB only (the second-level cache, not the last).

A call whose ``input re-read`` time stays near ``flushed`` pays for something else than its input
coming from memory. Nothing here is a workload: the shapes are the sweep's. Run alone on an idle
machine (about a minute):
``python benchmarks/depthwise_cold.py``; writes ``benchmarks/results/depthwise_cold.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trainplay.hardware.measure import sweeps  # noqa: E402
from trainplay.workload.opclass import DEPTHWISE_CLASSES  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CONTROLS = ("conv_1x1_few", "conv_1x1", "gemm")
"""Dense classes timed beside them, cases up to the largest grouped case's bytes."""
WAYS = ("hot", "flushed", "input re-read", "small flush")


def _cases() -> list[sweeps.Case]:
    every = sweeps.cases(quick=True)
    grouped = [c for c in every if c.key.split(".")[0] in DEPTHWISE_CLASSES]
    return grouped + [c for c in every if c.key.split(".")[0] in CONTROLS]


def _times(case: sweeps.Case, flush: torch.Tensor, reps: int) -> dict[str, float]:
    func, args, kwargs = case.build(torch.device("cpu"), torch.float32)
    first = args[0]
    small = flush[: 2 * 2**20 // 4]

    def call() -> None:
        func(*args, **kwargs)

    def once(before) -> float:
        before()
        start = time.perf_counter()
        call()
        return time.perf_counter() - start

    ways = {
        "hot": lambda: None,
        "flushed": lambda: flush.sum(),
        "input re-read": lambda: (flush.sum(), first.sum()),
        "small flush": lambda: small.sum(),
    }
    call()
    return {way: statistics.median(once(b) for _ in range(reps)) for way, b in ways.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--flush-mib", type=int, default=64)
    args = parser.parse_args()
    flush = torch.ones(args.flush_mib * 2**20 // 4)
    started = time.time()
    rows = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for case in _cases():
            got = _times(case, flush, args.reps)
            rows.append({"threads": threads, "key": case.key, "label": case.label, **got})
            print(threads, case.key, case.label, {k: f"{v * 1e6:.0f}" for k, v in got.items()})
    (RESULTS / "depthwise_cold.json").write_text(json.dumps(rows, indent=2) + "\n")
    (RESULTS / "depthwise_cold.md").write_text(_report(rows, args, time.time() - started))


def _report(rows: list[dict], args: argparse.Namespace, seconds: float) -> str:
    def ratio(r: dict, way: str) -> float:
        return r[way] / r["hot"]

    lines = [
        "# Grouped and depthwise convolutions after a cache flush",
        "",
        f"`python benchmarks/depthwise_cold.py` ({seconds:.0f} s; medians of {args.reps} calls, "
        f"flush {args.flush_mib} MiB). Times in µs; ratios against hot.",
        "",
    ]
    for threads in (1, 2):
        mine = [r for r in rows if r["threads"] == threads]
        for group, keep in (
            ("grouped and depthwise", lambda k: k in DEPTHWISE_CLASSES),
            ("dense controls", lambda k: k not in DEPTHWISE_CLASSES),
        ):
            picked = [r for r in mine if keep(r["key"].split(".")[0])]
            if not picked:
                continue
            medians = {w: statistics.median(ratio(r, w) for r in picked) for w in WAYS[1:]}
            lines.append(
                f"- {threads} thread{'s' if threads > 1 else ''}, {group} ({len(picked)} cases): "
                "median over hot, " + ", ".join(f"{w} x{m:.2f}" for w, m in medians.items())
            )
    lines += ["", "| threads | class | case | hot | flushed | input re-read | small flush |"]
    lines.append("|---|---|---|---|---|---|---|")
    for r in rows:
        lines.append(
            f"| {r['threads']} | {r['key']} | {r['label']} | "
            + " | ".join(f"{r[w] * 1e6:.0f}" for w in WAYS)
            + " |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
