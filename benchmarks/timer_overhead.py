"""What the runtime's always-on step timers cost: the same step with and without them, alternated.

One process, the runtime benchmarks' MLP (``benchmarks/train_models.py``: 8 Linear+ReLU blocks
of width 512, and the same at width 16, where a step is so short that the timers' fixed cost
shows), a global batch of 64 in 4 micro-batches (forward and backward per micro-batch, as
``torch.distributed.pipelining``'s schedules run a stage), then an SGD step. Arm ``plain`` runs it
bare; arm ``timed`` runs it under :class:`trainplay.runtime.timers.StepTimers` exactly as
``PlanRunner.step`` does (module hooks, the output-gradient hook and its autograd callback, three
phases, ``end()``). The arms alternate ``--repeats`` times, ``--steps`` steps each after 10
warm-up steps; we quote the medians of the per-run median step times. Small micro-batches on
purpose: the hooks cost a fixed few µs per micro-batch, so a small step shows them most.
On this shared 2-core machine, runs of one arm vary by more than the difference at width 512.

Writes benchmarks/results/timer_overhead.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from contextlib import nullcontext
from pathlib import Path

import torch
from torch import nn

from train_models import CLASSES, DEPTH, WIDTH  # benchmarks/ is the script's folder
from trainplay.runtime.timers import StepTimers

RESULTS = Path(__file__).resolve().parent / "results"
BATCH, MICRO, WARMUP = 64, 4, 10


def mlp(width: int) -> nn.Module:
    """``train_models.mlp`` at ``width``."""
    layers: list[nn.Module] = []
    for _ in range(DEPTH):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, CLASSES))


def run(model: nn.Module, timers: StepTimers | None, steps: int) -> list[float]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(BATCH, model[0].in_features)
    y = torch.randint(0, 10, (BATCH,))
    times = []

    def phase(name: str):
        return timers.phase(name) if timers is not None else nullcontext()

    for _ in range(WARMUP + steps):
        t0 = time.perf_counter()
        if timers is not None:
            timers.begin()
        with phase("schedule"):
            for xs, ys in zip(x.chunk(MICRO), y.chunk(MICRO), strict=True):
                nn.functional.cross_entropy(model(xs), ys, reduction="sum").backward()
        with phase("allreduce_s"):
            pass
        with phase("optimizer_s"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        if timers is not None:
            timers.end()
        times.append(time.perf_counter() - t0)
    return times[WARMUP:]


def compare(width: int, repeats: int, steps: int) -> dict[str, list[float]]:
    torch.manual_seed(0)
    plain_model, timed_model = mlp(width), mlp(width)
    timed_model.load_state_dict(plain_model.state_dict())
    timers = StepTimers(timed_model, torch.device("cpu"))
    rows: dict[str, list[float]] = {"plain": [], "timed": []}
    for k in range(repeats):
        for arm in ("plain", "timed") if k % 2 == 0 else ("timed", "plain"):
            model, t = (plain_model, None) if arm == "plain" else (timed_model, timers)
            rows[arm].append(statistics.median(run(model, t, steps)))
        print(f"width {width}, repeat {k}: plain {1e3 * rows['plain'][-1]:.3f} ms, timed "
              f"{1e3 * rows['timed'][-1]:.3f} ms")  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    lines = [
        "# What the always-on step timers cost",
        "",
        f"`python benchmarks/timer_overhead.py --repeats {args.repeats} --steps {args.steps}` "
        f"(one process, 1 thread, global batch {BATCH} in {MICRO} micro-batches, median step "
        f"time of each run after {WARMUP} warm-up steps, arms alternated).",
    ]
    result: dict = {
        "setup": {"model": "benchmarks.train_models:mlp", "global_batch": BATCH,
                  "microbatches": MICRO, "steps": args.steps, "warmup": WARMUP,
                  "repeats": args.repeats, "threads": 1},
        "widths": {},
    }  # fmt: skip
    for width in (WIDTH, 16):
        rows = compare(width, args.repeats, args.steps)
        plain, timed = statistics.median(rows["plain"]), statistics.median(rows["timed"])
        result["widths"][str(width)] = {
            "median_step_s": rows,
            "median": {"plain": plain, "timed": timed},
            "overhead_s": timed - plain,
            "overhead": timed / plain - 1,
        }
        lines += [
            "",
            f"## Width {width}",
            "",
            "| run | plain (ms) | timed (ms) |",
            "|---|---|---|",
            *(
                f"| {k} | {1e3 * a:.3f} | {1e3 * b:.3f} |"
                for k, (a, b) in enumerate(zip(rows["plain"], rows["timed"], strict=True))
            ),
            f"| **median** | **{1e3 * plain:.3f}** | **{1e3 * timed:.3f}** |",
            "",
            f"The timers add {1e6 * (timed - plain):+.1f} µs per step "
            f"({100 * (timed / plain - 1):+.2f}%).",
        ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "timer_overhead.json").write_text(json.dumps(result, indent=2))
    (RESULTS / "timer_overhead.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
