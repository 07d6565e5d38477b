"""What each rank runs for ``trainplay validate``: train the model for real, and time it.

Run under torchrun's agent (``trainplay validate`` launches it): every rank trains the model as a
plain PyTorch loop would — ``DistributedDataParallel`` over gloo with two or more ranks, SGD with
momentum, the training loss the profile counts (:mod:`trainplay.workload.loss`) on random inputs
— timed iterations after warm-up (an iteration lasts as long as its slowest rank; a sample that
another program disturbed is taken again, :mod:`trainplay.hardware.measure.quiet`), each labelled
with the placement of the CPUs rank 0 probed before and after it
(:mod:`trainplay.hardware.placement`; ``mixed`` when they differ), then a PyTorch profiler trace
of a few more with each block annotated. Rank 0 writes the JSON.
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

from trainplay.hardware.intraop import share_cpus
from trainplay.hardware.machine import usable_cpus
from trainplay.hardware.measure.quiet import NOISY_CORES, RETRIES, Quiet
from trainplay.hardware.placement import one_of, placement_now
from trainplay.launch import die_with_agent
from trainplay.roofline.annotate import annotate_blocks
from trainplay.workload.loss import training_loss
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


def run(args: argparse.Namespace) -> dict[str, Any] | None:
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    world = int(os.environ.get("WORLD_SIZE", 1))
    rank = int(os.environ.get("RANK", 0))
    threads = share_cpus(local_world)
    if world > 1:
        dist.init_process_group("gloo")
    source = resolve_model(args.model, seq_len=args.seq_len)
    shape = (
        (args.seq_len,)
        if args.seq_len
        else parse_shape(args.input_shape)
        if args.input_shape
        else source.default_input_shape
    )

    local_rank = int(os.environ.get("LOCAL_RANK", 0))

    def report(fraction: float) -> None:
        if args.progress_file and local_rank == 0:
            Path(args.progress_file).write_text(f"{fraction:.4f}")

    torch.manual_seed(0)
    model = source.build(shape, "cpu", "fp32")
    torch.manual_seed(1 + rank)
    inputs = source.inputs(args.batch, shape, "cpu", "fp32")[0]
    net = DistributedDataParallel(model) if world > 1 else model
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        training_loss(net(inputs)).backward()
        optimizer.step()

    for _ in range(WARMUP):
        step()
    quiet = Quiet()
    times, placements, disturbed = [], [], 0
    probe = placement_now if rank == 0 and usable_cpus() >= 2 else (lambda: None)
    for i in range(args.iters):
        report(0.9 * i / args.iters)
        for _ in range(RETRIES + 1):  # a step another program disturbed (on any rank) again
            before = probe()  # the other ranks wait at the barrier meanwhile
            if dist.is_initialized():
                dist.barrier()
            quiet.start()
            start = time.perf_counter()
            step()
            seconds = _slowest(time.perf_counter() - start)
            others = _slowest(quiet.others_cores())
            after = probe()
            if others <= NOISY_CORES:
                break
            disturbed += 1
        times.append(seconds)
        placements.append(one_of((before, after)))
    trace_path = Path(args.trace_dir) / f"rank{rank}.pt.trace.json"
    _quiet_kineto()
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=args.trace_steps, repeat=1)
    with (
        torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule
        ) as prof,
        annotate_blocks(model, args.blocks.split(",")),
    ):
        for _ in range(1 + args.trace_steps):
            step()
            prof.step()
    prof.export_chrome_trace(str(trace_path))
    result = {"rank": rank, "trace": str(trace_path)}
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
        "placements": placements,
        "disturbed_steps": disturbed,
        "traces": [r["trace"] for r in gathered],
    }


def main(argv: list[str] | None = None) -> int:
    die_with_agent()
    parser = argparse.ArgumentParser(description="trainplay validate: one rank's measurements")
    parser.add_argument("--model", required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--input-shape")
    parser.add_argument("--seq-len", type=int, help="tokens per sample (a decoder)")
    parser.add_argument("--blocks", required=True, help="comma-separated block names to annotate")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--trace-steps", type=int, default=2)
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
