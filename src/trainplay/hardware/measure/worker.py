"""What each rank runs under torchrun's elastic agent: measure this worker's peaks, gather them.

Usable both through :func:`trainplay.hardware.measure.launch.measure` (``trainplay hw measure``) and
as a plain torchrun module on a cluster::

    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29400 \\
        -m trainplay.hardware.measure.worker --quick --out peaks.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from trainplay.hardware.intraop import compute_threads, share_cpus
from trainplay.hardware.machine import cpu_name, physical_memory_bytes
from trainplay.hardware.measure.coldcache import cache_knees
from trainplay.hardware.measure.collectives import measure_comm, message_sizes
from trainplay.hardware.measure.ddp import QUICK_ROUNDS, ROUNDS, measure_ddp
from trainplay.hardware.measure.kernels import measure_apf, measure_apm, stream_bytes
from trainplay.hardware.measure.messages import measure_stage_message, pair_groups
from trainplay.hardware.measure.overheads import (
    measure_optimizer,
    measure_overheads,
    measure_schedule,
)
from trainplay.hardware.measure.passes import MORE_PASSES, SETTLED
from trainplay.hardware.measure.pool import applied, kind_of, pooled_by_kind, timings_of
from trainplay.hardware.measure.sweeps import cases, curves_of, run_sweep
from trainplay.hardware.placement import PLACEMENTS, one_of, placement_now
from trainplay.hardware.profile import PerfProfile
from trainplay.launch import die_with_agent

__all__ = ["CPU_PASSES", "MeasureOptions", "run"]

CPU_PASSES = 3
"""Passes of the operator sweep on a CPU (``--quick``: one); each case's median over them is what
the profile keeps (:func:`~trainplay.hardware.measure.sweeps.run_sweep` says why), after up to
:data:`~trainplay.hardware.measure.passes.MORE_PASSES` more over the cases whose passes disagree."""


@dataclass(frozen=True)
class MeasureOptions:
    """What to measure and for how long; passed to every rank."""

    device: str = "cpu"
    """``cpu`` or ``cuda`` (each rank takes GPU ``LOCAL_RANK``)."""
    dtypes: tuple[str, ...] = ("fp32",)
    """GEMM datatypes for APF; the first is the worker's ``apf``."""
    quick: bool = False
    """A shorter sweep and budget (about 7 s of measuring instead of 35 s)."""
    progress_file: str | None = None
    """Local rank 0 writes its progress (a fraction) here for the launcher's progress bar."""
    threads: int | None = None
    """A CPU worker's intra-op threads; ``None``: the CPUs split between the node's workers. One
    worker with fewer threads than CPUs measures a worker whose siblings are idle."""
    placement: str | None = None
    """The placement of the CPUs every operator case is timed in (one CPU worker of two threads
    or more, :mod:`trainplay.hardware.placement`); ``None``: the one they are in when the sweep
    begins."""

    @property
    def budget_s(self) -> float:
        """Seconds for the peaks and collectives (the operator sweeps run on top)."""
        return 7.0 if self.quick else 35.0


def _progress(options: MeasureOptions, local_rank: int):
    def report(fraction: float) -> None:
        if options.progress_file and local_rank == 0:
            Path(options.progress_file).write_text(f"{fraction:.4f}")

    return report


def _gemm_sizes(device: torch.device, quick: bool) -> list[int]:
    if device.type == "cuda":
        return [2048, 8192] if quick else [1024, 2048, 4096, 8192]
    return [512, 1024] if quick else [256, 512, 1024, 2048]


def run(options: MeasureOptions) -> list[dict[str, Any]] | None:
    """Measure this rank; rank 0 returns every rank's figures, the others ``None``."""
    rank = int(os.environ.get("RANK", 0))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    if options.device == "cuda":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        name = torch.cuda.get_device_name(device)
        threads = torch.get_num_threads()
    else:
        device = torch.device("cpu")
        if options.threads is None:
            threads = share_cpus(local_world)
        else:
            threads = options.threads
            compute_threads(threads)
        name = f"{cpu_name()} ({threads} thread{'s' if threads > 1 else ''})"
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    world = dist.get_world_size()
    report = _progress(options, local_rank)
    budget = options.budget_s
    comm_share = 0.35 if world > 1 else 0.0
    apf_budget = budget * (1 - comm_share) * 0.6 / len(options.dtypes)
    # progress: the peaks to 25%, the operator sweeps to 85% (or the end), the collectives after
    peak_share, comm_part = 0.25, (0.15 if world > 1 else 0.0)

    def stage(first: float, width: float):
        return lambda f: report(first + width * f)

    apf = {}
    for i, dtype in enumerate(options.dtypes):
        apf[dtype] = measure_apf(
            device,
            dtype,
            _gemm_sizes(device, options.quick),
            apf_budget,
            stage(
                peak_share * 0.6 * i / len(options.dtypes), peak_share * 0.6 / len(options.dtypes)
            ),
        )
    apm = measure_apm(
        device,
        stream_bytes(device, local_world, options.quick),
        budget * (1 - comm_share) * 0.4,
        stage(peak_share * 0.6, peak_share * 0.4),
    )
    primary = options.dtypes[0]
    profile = _profile(
        device, primary, options.quick, world, local_world, threads,
        stage(peak_share, 1 - peak_share - comm_part), options.placement,
    )  # fmt: skip
    result: dict[str, Any] = {
        "rank": rank,
        "host": socket.gethostname(),
        "device": name,
        "device_type": device.type,
        "threads": threads,
        "dtype": primary,
        "apf": apf[primary].flops,
        "apf_by_dtype": {d: r.flops for d, r in apf.items()},
        "apf_gemm_size": apf[primary].best_size,
        "apm": apm.bps,
        "apm_copy": apm.copy_bps,
        "apm_triad": apm.triad_bps,
        "apm_tensor_bytes": apm.tensor_bytes,
        "mem_bytes": _memory_bytes(device, local_world),
        "apb": None,
        "alpha_s": None,
        "beta_bps": None,
        "r2": None,
        "p2p_bps": None,
        "p2p_alpha_s": None,
        "p2p_beta_bps": None,
        "p2p_r2": None,
        "spread": {"apf": apf[primary].cv, "apm": apm.cv},
    }
    if world > 1:
        comm = measure_comm(
            device,
            message_sizes(options.quick),
            budget * comm_share,
            stage(1 - comm_part, comm_part),
        )
        result.update(
            apb=comm.busbw_bps,
            alpha_s=comm.allreduce.alpha_s,
            beta_bps=comm.allreduce.beta_bps,
            r2=comm.allreduce.r2,
        )
        if comm.p2p is not None:
            result.update(
                p2p_bps=comm.p2p_bps,
                p2p_alpha_s=comm.p2p.alpha_s,
                p2p_beta_bps=comm.p2p.beta_bps,
                p2p_r2=comm.p2p.r2,
            )
        result["spread"]["apb"] = comm.cv
        allreduce, p2p = comm.curves(world)
        profile = replace(
            profile,
            allreduce=allreduce,
            allreduce_alpha_s=comm.allreduce.alpha_s,
            p2p=p2p,
            p2p_alpha_s=comm.p2p.alpha_s if comm.p2p is not None else 0.0,
        )
        if device.type == "cpu":  # priced as roofline.cost.allreduce_s prices it (not imported:
            factor = 2 * (world - 1) / world  # the hardware layer sits below roofline)
            ddp, cv = measure_ddp(
                lambda b: comm.allreduce.alpha_s + factor * b / allreduce.rate(b),
                QUICK_ROUNDS if options.quick else ROUNDS,
            )
            profile = replace(profile, overhead_s={**profile.overhead_s, **ddp})
            result["spread"]["ddp"] = cv
            pairs = pair_groups(world)  # collective: every rank makes each
            if rank ^ 1 < world:
                message, cv = measure_stage_message(
                    device, pairs[rank // 2], rank % 2, p2p.time_s if p2p else lambda b: 0.0
                )
                overheads = {**profile.overhead_s, "schedule.message": message}
                profile = replace(profile, overhead_s=overheads)
                result["spread"]["message"] = cv
    result["profile"] = profile.to_dict()
    report(1.0)
    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, result)
    dist.destroy_process_group()
    return gathered if rank == 0 else None


def _profile(
    device: torch.device,
    dtype: str,
    quick: bool,
    world: int,
    local_world: int,
    threads: int,
    progress,
    placement: str | None = None,
) -> PerfProfile:
    """Fixed costs, the optimizer, and every operator class's sweep, on every rank at once (a
    barrier before each case keeps the ranks in step, as they share the machine in training)."""
    between = dist.barrier if world > 1 else (lambda: None)
    overheads = measure_overheads(device)
    alone = [dist.new_group([r]) for r in range(world)]  # collective: every rank makes each
    if device.type == "cpu":
        overheads.update(measure_schedule(device, alone[dist.get_rank()]))
    optimizers = {}
    for i, name in enumerate(("sgd", "adam")):
        between()
        optimizers[name] = measure_optimizer(device, name)
        progress(0.05 * (i + 1))
    asynchronous = device.type == "cuda"
    knees = None if asynchronous else cache_knees()
    passes = 1 if quick or asynchronous else CPU_PASSES
    results = run_sweep(
        device, dtype, cases(quick), passes=passes, more_passes=MORE_PASSES,
        agree=_any_rank if world > 1 else (lambda flags: flags),
        evict_bytes=knees.memory_bytes if knees else None,
        warm_bytes=knees.hot_bytes // 2 if knees else None,
        progress=lambda f: progress(0.1 + 0.9 * f), between=between,
        placement=placement_now if _probed(device, world, threads) else None,
        target=placement,
    )  # fmt: skip
    cache_bytes = knees.hot_bytes if knees else None
    pooled_with = [0]
    if world > 1:
        overheads, optimizers, results, cache_bytes, pooled_with = _pooled(
            device, threads, world, overheads, optimizers, results, cache_bytes
        )
    classes: dict = {f"optimizer.{name}": curve for name, (curve, _) in optimizers.items()}
    overheads.update({f"optimizer.{name}": fixed for name, (_, fixed) in optimizers.items()})
    # ATen's per-sample path, whose speed follows the map's positions, runs on one CPU thread
    # only (the conv_1x1_few rule); other workers run those calls on oneDNN or a GPU library
    per_sample = device.type == "cpu" and threads == 1
    classes.update(
        curves_of(results, overheads["call"], asynchronous=asynchronous, by_positions=per_sample)
    )
    disturbed = sum(not r.quiet for r in results)
    placed = {r.placement for r in results}
    return PerfProfile(
        dtype=dtype,
        classes=classes,
        overhead_s=overheads,
        asynchronous=asynchronous,
        workers=local_world,
        threads=threads,
        cache_bytes=cache_bytes,
        source=(
            f"trainplay hw measure: {len(results)} operator cases, median of {passes} pass(es), "
            f"{_passes_note(results, passes)}{disturbed} disturbed by other processes"
            + (
                f"; pooled case by case over ranks {', '.join(map(str, pooled_with))} "
                "(workers alike: one host, threads, CPUs and cgroup)"
                if len(pooled_with) > 1
                else ""
            )
        ),
        placement=None if None in placed else one_of(placed),
    )


def _any_rank(flags: list[bool]) -> list[bool]:
    """Each flag raised on any rank (every rank takes part)."""
    raised = torch.tensor([int(f) for f in flags], dtype=torch.int32)
    dist.all_reduce(raised, op=dist.ReduceOp.MAX)
    return [bool(v) for v in raised.tolist()]


def _passes_note(results: list, passes: int) -> str:
    """How many cases were timed in more passes than ``passes`` and how many never agreed."""
    again = sum(r.passes > passes for r in results)
    if not again:
        return ""
    apart = sum(not r.settled for r in results)
    return (
        f"{again} timed again (up to {max(r.passes for r in results)} passes in all) as their "
        f"passes lay more than {100 * SETTLED:.0f}% from their median ({apart} still did after "
        "them), "
    )


def _probed(device: torch.device, world: int, threads: int) -> bool:
    """Whether the sweep keeps to one placement of the CPUs (:mod:`~trainplay.hardware.
    placement`): one CPU worker of two threads or more, which the probe's two threads do not
    take from a sibling worker."""
    return device.type == "cpu" and world == 1 and threads >= 2


def _pooled(device, threads, world, overheads, optimizers, results, cache_bytes):
    """This rank's fixed costs, optimizer curves, sweep and cache footprint pooled with every
    rank's of its kind (:mod:`trainplay.hardware.measure.pool`), and those ranks."""
    rank = dist.get_rank()
    timings = timings_of(overheads, optimizers, results, cache_bytes)
    mine = (kind_of(device.type, threads, rank), timings)
    everyone: list[Any] = [None] * world
    dist.all_gather_object(everyone, mine)
    timings, ranks = pooled_by_kind([k for k, _ in everyone], [t for _, t in everyone], rank)
    return (*applied(timings, overheads, optimizers, results), ranks)


def _memory_bytes(device: torch.device, local_world: int) -> int:
    """This worker's share of device memory (a CPU worker gets 1/local_world of the RAM)."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory
    return physical_memory_bytes() // local_world


def main(argv: list[str] | None = None) -> int:
    """``python -m trainplay.hardware.measure.worker`` under plain torchrun: rank 0 writes JSON."""
    die_with_agent()
    parser = argparse.ArgumentParser(
        description="Measure achievable peaks of each torchrun worker."
    )
    parser.add_argument(
        "--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu"
    )
    parser.add_argument(
        "--dtype", default="fp32", help="comma-separated GEMM dtypes, first is primary"
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--out", type=Path, help="rank 0 writes the figures here (JSON); default stdout"
    )
    parser.add_argument("--progress-file", help="local rank 0 writes its progress (0..1) here")
    parser.add_argument("--threads", type=int, help="a CPU worker's threads (default: CPUs split)")
    parser.add_argument("--placement", choices=PLACEMENTS, help="time the operators in this one")
    args = parser.parse_args(argv)
    options = MeasureOptions(
        device=args.device,
        dtypes=tuple(args.dtype.split(",")),
        quick=args.quick,
        progress_file=args.progress_file,
        threads=args.threads,
        placement=args.placement,
    )
    workers = run(options)
    if workers is not None:
        text = json.dumps({"workers": workers}, indent=2)
        if args.out:
            args.out.write_text(text + "\n")
        else:
            print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
