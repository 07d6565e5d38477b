"""Launch the measurement through torchrun's elastic agent, on one machine or many.

The agent runs in this process (``torch.distributed.launcher.elastic_launch``, what ``torchrun``
itself calls), starts one worker process per device with c10d rendezvous, and returns rank 0's
result. One node needs nothing more; for several, run the same command on each node with
``nnodes`` and a shared ``rdzv_endpoint``. A progress bar follows local rank 0's progress file.
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import torch
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.launcher.api import LaunchConfig, elastic_launch

from trainplay.errors import TrainplayError, UsageError
from trainplay.hardware.measurement import Measurement, WorkerPeaks

__all__ = ["MeasureError", "measure"]


class MeasureError(TrainplayError):
    """The measurement could not run (a worker failed, rendezvous timed out, no device)."""


@contextmanager
def _quiet_agent() -> Iterator[None]:
    """The elastic agent logs its configuration at INFO and warnings on shutdown; keep the
    console for the progress bar and the result."""
    loggers = [
        logging.getLogger(n) for n in ("torch.distributed.elastic", "torch.distributed.launcher")
    ]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _follow(path: Path, stop: threading.Event, show: bool) -> threading.Thread:
    def loop() -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("measuring peaks"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            transient=True,
            disable=not show,
        ) as bar:
            task = bar.add_task("measure", total=1.0)
            while not stop.wait(0.2):
                with suppress(OSError, ValueError):
                    bar.update(task, completed=float(path.read_text() or 0))

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def measure(
    *,
    nproc: int = 1,
    device: str | None = None,
    dtypes: tuple[str, ...] = ("fp32",),
    quick: bool = False,
    nnodes: str = "1",
    rdzv_endpoint: str | None = None,
    run_id: str | None = None,
    show_progress: bool = True,
) -> Measurement | None:
    """Measure every worker's achievable peaks; ``None`` on a node other than rank 0's.

    ``device`` defaults to ``cuda`` when a GPU is visible, else ``cpu``; with CUDA, ``nproc``
    may not exceed the number of GPUs. ``nnodes`` is ``N`` or ``MIN:MAX`` as for torchrun.
    """
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda needs a CUDA device, and torch sees none; use --device cpu")
    if device == "cuda" and nproc > torch.cuda.device_count():
        raise UsageError(f"--nproc {nproc} exceeds the {torch.cuda.device_count()} visible GPU(s)")
    if nproc < 1:
        raise UsageError(f"--nproc must be at least 1, got {nproc}")
    min_nodes, _, max_nodes = nnodes.partition(":")
    try:
        nodes = (int(min_nodes), int(max_nodes or min_nodes))
    except ValueError:
        raise UsageError(f"--nnodes takes N or MIN:MAX, got {nnodes!r}") from None
    if nodes[0] > 1 and not rdzv_endpoint:
        raise UsageError("several nodes need --rdzv-endpoint HOST:PORT, the same on every node")
    with tempfile.TemporaryDirectory(prefix="trainplay-measure-") as tmp:
        progress, out = Path(tmp) / "progress", Path(tmp) / "workers.json"
        progress.write_text("0")
        # Workers run the worker module as a program: exactly the torchrun form in its docstring.
        args = [
            "-m",
            "trainplay.hardware.measure.worker",
            "--device",
            device,
            "--dtype",
            ",".join(dtypes),
            "--out",
            str(out),
            "--progress-file",
            str(progress),
            *(["--quick"] if quick else []),
        ]
        config = LaunchConfig(
            min_nodes=nodes[0],
            max_nodes=nodes[1],
            nproc_per_node=nproc,
            run_id=run_id or f"trainplay-measure-{uuid.uuid4().hex[:8]}",
            rdzv_backend="c10d",
            rdzv_endpoint=rdzv_endpoint or "127.0.0.1:0",
            max_restarts=0,
            monitor_interval=0.1,
            start_method="spawn",
        )
        stop = threading.Event()
        follower = _follow(progress, stop, show_progress)
        started = time.perf_counter()
        try:
            with _quiet_agent():
                elastic_launch(config, sys.executable)(*args)
        except ChildFailedError as exc:
            raise MeasureError(f"a measuring worker failed: {_root_cause(exc)}") from None
        finally:
            stop.set()
            follower.join(timeout=2)
        if not out.exists():  # rank 0 ran on another node
            return None
        workers = json.loads(out.read_text())["workers"]
    return Measurement(
        workers=tuple(WorkerPeaks.from_dict(w) for w in workers),
        backend="nccl" if device == "cuda" else "gloo",
        quick=quick,
        seconds=time.perf_counter() - started,
        torch_version=torch.__version__,
        measured_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    )


def _root_cause(exc: ChildFailedError) -> str:
    for failure in exc.failures.values():
        message = failure.message
        if isinstance(message, dict):
            message = message.get("message", "")
        text = str(message).strip().splitlines()
        return text[-1] if text else f"exit code {failure.exitcode}"
    return str(exc).strip().splitlines()[0]
