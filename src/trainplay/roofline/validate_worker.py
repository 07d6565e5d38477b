"""What each rank runs for ``trainplay validate``: measure operators, then train for real.

Run under torchrun's agent (``trainplay validate`` launches it): every rank, concurrently,
(1) times each distinct operator of one training iteration alone (operator-level achievable
peaks, under the same thread count and the same neighbours as training), then (2) trains the
model for real: ``DistributedDataParallel`` over gloo with two or more ranks, SGD, cross-entropy
on random labels; timed iterations after warm-up (an iteration lasts as long as its slowest rank),
and a PyTorch profiler trace of a few more with each block annotated. Rank 0 writes the JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from trainplay.hardware.machine import usable_cpus
from trainplay.roofline.achieved import measure_block_times
from trainplay.roofline.annotate import annotate_blocks
from trainplay.workload.zoo import parse_shape, resolve_model

__all__ = ["main"]

WARMUP = 2


def _quiet_kineto() -> None:
    """Kineto, the profiler's tracer, writes its USDT probe lines (``profiler_start``,
    ``profiler_stop``) and, in a CUDA build on a machine without a GPU, ``gpuGetDeviceCount
    failed with code 35`` to stderr, even when only CPU activities are traced. Its threshold
    ``KINETO_LOG_LEVEL``, read when the profiler first starts, set above its highest level
    (USDT, 5) keeps it quiet; a value the user set is kept."""
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")


def _slowest(seconds: float) -> float:
    if not dist.is_initialized():
        return seconds
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def _loss(output: Any, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of every output (an auxiliary head's too, as its profile counts it)."""
    outputs = (
        [output]
        if isinstance(output, torch.Tensor)
        else [o for o in output if isinstance(o, torch.Tensor)]
    )
    total = torch.zeros(())
    for logits in outputs:
        if logits.dim() == 3:  # token models: (batch, seq, vocab)
            total = total + torch.nn.functional.cross_entropy(
                logits.flatten(0, 1), labels.flatten()
            )
        else:
            total = total + torch.nn.functional.cross_entropy(logits, labels)
    return total


def run(args: argparse.Namespace) -> dict[str, Any] | None:
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    world = int(os.environ.get("WORLD_SIZE", 1))
    rank = int(os.environ.get("RANK", 0))
    threads = max(1, usable_cpus() // local_world)
    torch.set_num_threads(threads)
    if world > 1:
        dist.init_process_group("gloo")
    source = resolve_model(args.model)
    shape = parse_shape(args.input_shape) if args.input_shape else source.default_input_shape

    # (1) operator-level achievable times, every rank at once (they share the machine as in training)
    if dist.is_initialized():
        dist.barrier()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))

    def report(fraction: float) -> None:
        if args.progress_file and local_rank == 0:
            Path(args.progress_file).write_text(f"{fraction:.4f}")

    blocks = measure_block_times(
        source,
        args.batch,
        shape,
        budget_per_op_s=args.op_budget,
        progress=lambda f: report(0.6 * f),
    )

    # (2) real training
    torch.manual_seed(0)
    model = source.build(shape, "cpu", "fp32")
    torch.manual_seed(1 + rank)
    inputs = source.inputs(args.batch, shape, "cpu", "fp32")[0]
    with torch.no_grad():
        classes = _loss_classes(model, inputs)
    labels = torch.randint(0, classes, inputs.shape[:1] if inputs.dim() != 2 else inputs.shape)
    net = DistributedDataParallel(model) if world > 1 else model
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        _loss(net(inputs), labels).backward()
        optimizer.step()

    for _ in range(WARMUP):
        step()
    times = []
    for i in range(args.iters):
        report(0.6 + 0.35 * i / args.iters)
        if dist.is_initialized():
            dist.barrier()
        start = time.perf_counter()
        step()
        times.append(_slowest(time.perf_counter() - start))
    trace_path = Path(args.trace_dir) / f"rank{rank}.pt.trace.json"
    _quiet_kineto()
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=args.trace_steps, repeat=1)
    with (
        torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule
        ) as prof,
        annotate_blocks(model, blocks.names),
    ):
        for _ in range(1 + args.trace_steps):
            step()
            prof.step()
    prof.export_chrome_trace(str(trace_path))
    result = {
        "rank": rank,
        "world_size": world,
        "threads": threads,
        "iteration_s": times,
        "block_fwd_s": list(blocks.fwd_s),
        "block_bwd_s": list(blocks.bwd_s),
        "blocks": list(blocks.names),
        "ops": blocks.ops,
        "distinct_ops": blocks.distinct_ops,
        "op_measure_s": blocks.measure_s,
        "trace": str(trace_path),
    }
    gathered: list[Any] = [None] * world
    if dist.is_initialized():
        dist.all_gather_object(gathered, result)
        # DDP's reducer holds the process group: release it before the group goes, or its
        # destructor may run against a destroyed group at exit ("terminate called without an
        # active exception", seen about once in ten two-process runs)
        del net, optimizer, step
        gc.collect()
        dist.barrier()
        dist.destroy_process_group()
    else:
        gathered = [result]
    if rank != 0:
        return None
    return {
        "model": args.model,
        "batch_size": args.batch,
        "input_shape": list(shape),
        "world_size": world,
        "threads": threads,
        "iteration_s": times,
        "iteration_median_s": statistics.median(times),
        "blocks": list(blocks.names),
        # per block, the median over ranks of the operator-level time
        "block_fwd_s": [
            statistics.median(r["block_fwd_s"][i] for r in gathered)
            for i in range(len(blocks.names))
        ],
        "block_bwd_s": [
            statistics.median(r["block_bwd_s"][i] for r in gathered)
            for i in range(len(blocks.names))
        ],
        "ops": blocks.ops,
        "distinct_ops": blocks.distinct_ops,
        "op_measure_s": max(r["op_measure_s"] for r in gathered),
        "traces": [r["trace"] for r in gathered],
    }


def _loss_classes(model: torch.nn.Module, inputs: torch.Tensor) -> int:
    """Number of output classes (vocabulary for token models), read off one forward."""
    model.eval()
    out = model(inputs[:2] if inputs.shape[0] > 1 else inputs)
    model.train()
    logits = out if isinstance(out, torch.Tensor) else out[0]
    return logits.shape[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="trainplay validate: one rank's measurements")
    parser.add_argument("--model", required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--input-shape")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--trace-steps", type=int, default=2)
    parser.add_argument("--op-budget", type=float, default=0.05)
    parser.add_argument("--trace-dir", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--progress-file", help="local rank 0 writes its progress (0..1) here")
    args = parser.parse_args(argv)
    result = run(args)
    if result is not None:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
