"""Train a small CNN with DistributedDataParallel on gloo under the PyTorch profiler.

Launch with torchrun. Each ``--case NAME[:RANK:KIND]`` trains a fresh model for one warm-up step
and ``--steps`` profiled steps, and every rank writes its Kineto trace,
``rank<R>.<...>.pt.trace.json``, into ``--out/NAME``. Every block's forward is annotated
(``trainplay.block:<name>``), so ``trainplay diagnose`` can read the traces per block. Several
runs in one launch share the cost of starting torchrun and importing torch.

``RANK:KIND`` makes rank ``RANK`` a straggler, deterministically: at the start of its second
block's forward it does a fixed amount of extra work every step, either GEMMs (``compute``:
``--repeats`` products of two 256x256 matrices, default 160) or streaming copies (``memory``: as
many copies of a 256 MiB tensor, default 2). The extra work needs no gradient, so it lies inside
that block's forward span and nowhere else; either kind costs about 40 ms of one core here, two to
three times what a step of the model costs. The copied tensor is larger than the last-level cache
of any CPU a core shares: with 16 MiB (and 19 copies) a CI host copied from its cache, and the
slowed rank came out only 48% busier than the other.

Each rank uses one thread pinned to a core of its own (``LOCAL_RANK`` modulo the cores this
process may use), and raises its scheduling priority where it is allowed to (nice -10): two ranks
on a two-core machine do not contend for a core, and other load on the machine neither falls on
one rank only nor halves its core, which would make that rank a straggler of its own.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

from trainplay.roofline.annotate import annotate_blocks
from trainplay.workload import profile_model

BATCH = 32
INPUT_SHAPE = (3, 32, 32)
GEMM_SIDE = 256
COPY_ELEMENTS = 64 * 2**20  # fp32: 256 MiB, beyond any last-level cache, so copies stream from DRAM
REPEATS = {"compute": 160, "memory": 2}


def small_cnn() -> nn.Module:
    def stage(cin: int, cout: int, stride: int) -> nn.Sequential:
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
        )

    return nn.Sequential(
        stage(3, 16, 1),
        stage(16, 32, 2),
        stage(32, 64, 2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, 10),
    )


def block_names(model: nn.Module) -> list[str]:
    """Block names as ``trainplay profile`` cuts the model, counted on the meta device."""
    meta = copy.deepcopy(model).to("meta")
    x = torch.empty((BATCH, *INPUT_SHAPE), device="meta")
    counted = profile_model(
        meta, (x,), name="small_cnn", batch_size=BATCH, input_shape=INPUT_SHAPE, dtype="fp32"
    )
    return [layer.name for layer in counted.layers]


def extra_work(kind: str, repeats: int) -> Callable[[nn.Module, tuple], None]:
    """A forward pre-hook doing ``repeats`` fixed-size GEMMs or copies, outside autograd."""
    if kind == "compute":
        a, b = torch.randn(GEMM_SIDE, GEMM_SIDE), torch.randn(GEMM_SIDE, GEMM_SIDE)
        out = torch.empty(GEMM_SIDE, GEMM_SIDE)

        def work() -> None:
            for _ in range(repeats):
                torch.mm(a, b, out=out)

    else:
        src, dst = torch.ones(COPY_ELEMENTS), torch.empty(COPY_ELEMENTS)

        def work() -> None:
            for _ in range(repeats):
                dst.copy_(src)

    def hook(_module: nn.Module, _inputs: tuple) -> None:
        with torch.no_grad():
            work()

    return hook


def parse_run(text: str) -> tuple[str, int | None, str]:
    """``NAME`` or ``NAME:RANK:KIND`` -> ``(name, slow rank or None, kind)``."""
    name, *slow = text.split(":")
    if not slow:
        return name, None, "compute"
    if len(slow) != 2 or slow[1] not in REPEATS or not slow[0].isdigit():
        raise argparse.ArgumentTypeError(f"expected NAME or NAME:RANK:compute|memory, got {text}")
    return name, int(slow[0]), slow[1]


def train(out: Path, steps: int, slow_rank: int | None, kind: str, repeats: int | None) -> None:
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = small_cnn()
    names = block_names(model)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(rank)
    x = torch.randn((BATCH, *INPUT_SHAPE), generator=generator)
    y = torch.randint(0, 10, (BATCH,), generator=generator)
    out.mkdir(parents=True, exist_ok=True)
    with (
        profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=0, warmup=1, active=steps, repeat=1),
            on_trace_ready=tensorboard_trace_handler(str(out), worker_name=f"rank{rank}"),
        ) as prof,
        annotate_blocks(model, names),
    ):
        if rank == slow_rank:  # registered after the block hooks: runs inside block 1's span
            model.get_submodule(names[1]).register_forward_pre_hook(
                extra_work(kind, repeats or REPEATS[kind])
            )
        for _ in range(1 + steps):
            optimizer.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(ddp(x), y)
            loss.backward()
            optimizer.step()
            prof.step()
    dist.barrier()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True, help="folder of the runs' folders")
    parser.add_argument(
        "--case",
        type=parse_run,
        action="append",
        metavar="NAME[:RANK:KIND]",
        help="a run; RANK:compute or RANK:memory makes that rank slow (repeatable)",
    )
    parser.add_argument("--steps", type=int, default=15, help="profiled steps (after 1 warm-up)")
    parser.add_argument("--repeats", type=int, help="extra GEMMs (default 160) or copies (2)")
    args = parser.parse_args()

    # Before gloo starts its threads, which inherit both settings.
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > 1:
        os.sched_setaffinity(0, {cpus[int(os.environ["LOCAL_RANK"]) % len(cpus)]})
    with contextlib.suppress(PermissionError):
        os.setpriority(os.PRIO_PROCESS, 0, -10)
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    try:
        for name, slow_rank, kind in args.case or [("balanced", None, "compute")]:
            train(args.out / name, args.steps, slow_rank, kind, args.repeats)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
