"""``trainplay train``: one node of an elastic TNP training job (run it on every node)."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from rich.console import Console

from trainplay.cli import endpoint, process_count
from trainplay.errors import UsageError
from trainplay.userfile import check_writable

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    from trainplay.runtime.job import add_job_arguments

    p = commands.add_parser(
        "train",
        help="TNP: train on the planned partition with torchrun, surviving joins and leaves",
        description=(
            "Start this node's torchrun elastic agent and its workers. Every (re)start plans the "
            "model over the devices present, builds each stage with torch.distributed.pipelining, "
            "restores the latest torch.distributed.checkpoint resharded to the plan, and resumes "
            "at the next global sample. Run it once per node with the same --rdzv-endpoint and "
            "--run-id; nodes may join and leave within --nnodes MIN:MAX."
        ),
    )
    add_job_arguments(p)
    p.add_argument("--nnodes", default="1", metavar="MIN:MAX", help="nodes, as torchrun (1)")
    p.add_argument("--nproc-per-node", type=process_count, default=1, metavar="K")
    p.add_argument(
        "--rdzv-endpoint", type=endpoint, metavar="HOST:PORT", help="default: 127.0.0.1, one node"
    )
    p.add_argument("--run-id", help="the same on every node of the job")
    p.add_argument("--max-restarts", type=int, default=3, help="worker-group failures (3)")
    p.add_argument(
        "--node-name",
        default=os.environ.get("TRAINPLAY_NODE_NAME"),
        help="this node's name (in --cluster); default: TRAINPLAY_NODE_NAME, else the host name, "
        "the same on every run so that a rerun keeps its plan",
    )
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from torch.distributed.elastic.multiprocessing.api import SignalException

    from trainplay.hardware.allocator import worker_env
    from trainplay.hardware.local import resolve_cluster
    from trainplay.launch import parse_nnodes
    from trainplay.runtime import checkpoint
    from trainplay.runtime.job import TrainJob
    from trainplay.runtime.launcher import (
        StoppedOnError,
        TrainingFailed,
        check_endpoint,
        launch,
    )
    from trainplay.runtime.nodes import ENV, this_node
    from trainplay.runtime.replan import load_plan_file
    from trainplay.runtime.task import open_task

    job = TrainJob.from_args(args)
    nnodes = parse_nnodes(args.nnodes)
    if nnodes[0] > 1 and not args.rdzv_endpoint:  # before measuring `local`, not after
        raise UsageError("several nodes need --rdzv-endpoint HOST:PORT, the same on every node")
    if args.max_restarts < 0:
        raise UsageError(f"--max-restarts must be >= 0, got {args.max_restarts}")
    if args.rdzv_endpoint:
        check_endpoint(args.rdzv_endpoint)
    task = open_task(job)
    if job.global_batch > task.data.size:
        raise UsageError(
            f"--global-batch {job.global_batch} is more than the {task.data.size} samples of "
            f"--data {job.data}: one step would run past the data set; give --global-batch "
            f"{task.data.size} or less, or more data"
        )
    names = task.block_costs(job.dtype).names
    if job.plan is not None:
        load_plan_file(job.plan, global_batch=job.global_batch, block_names=names)
    if job.checkpoint_dir is not None:
        check_writable(job.checkpoint_dir, "--checkpoint-dir", folder=True)
        found = checkpoint.latest(job.checkpoint_dir)
        if found is not None:
            checkpoint.check_matches(
                found[1], model=job.model, block_names=names, global_batch=job.global_batch,
                seed=job.seed, optimizer=job.optimizer, directory=job.checkpoint_dir,
            )  # fmt: skip
    if job.journal is not None:
        try:
            job.journal.parent.mkdir(parents=True, exist_ok=True)
            job.journal.open("a").close()
        except OSError as exc:
            raise UsageError(
                f"cannot write --journal {str(job.journal)!r}: {exc.strerror}"
            ) from None
    allocator = worker_env(os.environ)  # before measuring `local`: a bad setting fails at once
    cluster = resolve_cluster(job.cluster, workers=args.nproc_per_node, show_progress=True)
    node = this_node(cluster, name=args.node_name, nproc=args.nproc_per_node)
    described = tempfile.TemporaryDirectory(prefix="trainplay-node-")
    try:  # the node's description, for every worker group the agent starts
        path = Path(described.name) / "node.json"
        path.write_text(node.to_json())
        launch(
            job.to_argv(), nproc=args.nproc_per_node, nnodes=nnodes,
            rdzv_endpoint=args.rdzv_endpoint, run_id=args.run_id,
            max_restarts=args.max_restarts, env={ENV: str(path), **allocator},
        )  # fmt: skip
    except SignalException as exc:  # the workers said where they stopped
        return 128 + int(exc.sigval)
    except StoppedOnError:  # the workers printed the one line
        return StoppedOnError.exit_code
    except TrainingFailed as exc:
        err.print(f"trainplay: {exc}", highlight=False)
        return 1
    finally:
        described.cleanup()
    return 0
