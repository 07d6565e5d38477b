"""What ``torch.distributed.pipelining``'s ``ScheduleGPipe`` adds to one rank's training step,
by the size of its stage: a diagnosis of the ``schedule.step`` and ``schedule.microbatch`` fixed
costs (``trainplay.hardware.measure.overheads.measure_schedule``), which ``hw measure`` measures
on one stage only (a 16 x 16 ``Linear``, 8 rows a micro-batch).

Each stage here is ``depth`` Linear+ReLU blocks of ``width`` features and a Linear to 10 classes
(the shape of ``benchmarks/train_models.py``'s ``mlp``), trained on ``rows`` rows with cross
entropy and SGD, one micro-batch, on a one-rank gloo group. Its step through the schedule and the
same eager step (forward, loss, backward, SGD, ``zero_grad``) are timed back to back, a median of
``STEPS`` steps each; the extra is the median of ``PAIRS`` such paired differences, so a machine
whose speed drifts between the two does not hide it. The first row is the stage ``hw measure``
prices every schedule with. Run it as the workers run (``GLIBC_TUNABLES`` keeping freed memory:
``trainplay.hardware.allocator.RETAINED``, set by this script for itself unless you set your own).

Nothing here calibrates the cost model: it shows where one fixed cost stops describing the
schedule's overhead. Writes benchmarks/results/schedule_overhead{_TAG}.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

STAGES = (
    (1, 16, 8), (8, 16, 8), (32, 16, 8), (1, 512, 8), (8, 512, 8), (8, 512, 64),
    (1, 2048, 8), (1, 2048, 64), (8, 128, 64), (8, 128, 512),
)  # fmt: skip
"""(blocks, width, rows) per stage; (8, 512, 64) is the runtime benchmarks' mlp at its batch."""
STEPS, PAIRS, WARMUP = 15, 9, 3
RESULTS = Path(__file__).parent / "results"


def _median_s(step, steps: int = STEPS) -> float:
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(depth: int, width: int, rows: int) -> dict:
    """The schedule's extra seconds over the eager step, and the eager step's seconds."""
    import torch
    from torch import nn
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(width, 10))
    x, y = torch.randn(rows, width), torch.randint(0, 10, (rows,))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    stage = PipelineStage(model, 0, 1, torch.device("cpu"))
    schedule = ScheduleGPipe(stage, n_microbatches=1, loss_fn=loss_fn)

    def piped() -> None:
        schedule.step(x, target=y)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def eager() -> None:
        loss_fn(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(WARMUP):  # the schedule's first steps agree on shapes and set up buffers
        piped()
        eager()
    extra = [_median_s(piped) - _median_s(eager) for _ in range(PAIRS)]
    return {
        "blocks": depth, "width": width, "rows": rows,
        "params": sum(p.numel() for p in model.parameters()),
        "extra_s": statistics.median(extra), "extra_range_s": [min(extra), max(extra)],
        "eager_s": _median_s(eager),
    }  # fmt: skip


def _table(rows: list[dict], command: str, threads: int, tunables: str) -> str:
    lines = [
        "# What the pipeline schedule adds to one rank's step, by stage size",
        "",
        f"`{command}`, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {threads} thread(s),"
        f" `GLIBC_TUNABLES={tunables}`. One micro-batch, a one-rank gloo group; extra: the median"
        f" of {PAIRS} paired differences (schedule step minus eager step, medians of {STEPS}"
        " steps each). The first row is the stage `hw measure` prices every schedule with.",
        "",
        "| blocks x width, rows | parameters | extra ms (range) | eager step ms |",
        "|---|---|---|---|",
    ]
    for r in rows:
        lo, hi = r["extra_range_s"]
        lines.append(
            f"| {r['blocks']} x {r['width']}, {r['rows']} | {r['params']:,} |"
            f" {r['extra_s'] * 1e3:.3f} ({lo * 1e3:.3f} to {hi * 1e3:.3f}) |"
            f" {r['eager_s'] * 1e3:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="compute threads (default 1)")
    parser.add_argument("--tag", default="", help="suffix of the results' file names")
    args = parser.parse_args(argv)
    if args.threads < 1:
        print("schedule_overhead: --threads must be at least 1", file=sys.stderr)
        return 2
    from trainplay.hardware.allocator import TUNABLES_ENV, worker_env

    added = worker_env(os.environ)
    if added:  # glibc reads its tunables at start: run again with them
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **added})
    import torch
    import torch.distributed as dist

    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    rows = []
    for depth, width, batch in STAGES:
        rows.append(measure(depth, width, batch))
        r = rows[-1]
        print(f"{depth} x {width}, {batch}: extra {r['extra_s'] * 1e3:.3f} ms,"
              f" eager {r['eager_s'] * 1e3:.3f} ms", flush=True)  # fmt: skip
    dist.destroy_process_group()
    command = "python benchmarks/schedule_overhead.py" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:])
    )
    name = "schedule_overhead" + (f"_{args.tag}" if args.tag else "")
    tunables = os.environ.get(TUNABLES_ENV, "")
    out = {"command": command, "threads": args.threads, "tunables": tunables, "stages": rows}
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(_table(rows, command, args.threads, tunables))
    print(f"wrote {RESULTS / name}.{{json,md}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
