"""Run a worker program on this node's processes under torchrun's elastic agent.

The agent runs in this process (``torch.distributed.launcher.elastic_launch``, what ``torchrun``
itself calls) and starts ``python -m MODULE ARGS`` once per local rank with c10d rendezvous, so a
program launched here is the same program a cluster runs with plain ``torchrun -m MODULE``. A
progress bar follows the fraction local rank 0 writes to a progress file. The agent keeps its
workers' error files in a folder of the run's own, removed when the run ends (:func:`agent_logs`).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.launcher.api import LaunchConfig, elastic_launch

from trainplay.errors import TrainplayError, UsageError
from trainplay.hardware.allocator import for_workers
from trainplay.hardware.measure.quiet import ROOT_ENV as QUIET_ROOT_ENV

__all__ = [
    "WorkerFailed",
    "agent_logs",
    "die_with_agent",
    "parse_nnodes",
    "quiet_agent",
    "run_workers",
]

PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal a process gets when its parent dies."""


class WorkerFailed(TrainplayError):
    """A worker process failed, or the rendezvous did not complete."""


def die_with_agent(exit_code: int = 1) -> None:
    """Called first by every worker program. torchrun starts each worker in its own session, so a
    worker outlives an agent that is killed (``kill -9`` of ``trainplay train``, or of a test's
    time-limited launcher): on Linux, ask the kernel to kill this worker when its agent dies, as
    a dead machine would; exit with ``exit_code`` if the agent is already gone."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the agent died before the request was in place
        os._exit(exit_code)


def parse_nnodes(text: str) -> tuple[int, int]:
    """``"2"`` -> (2, 2); ``"2:3"`` -> (2, 3), as torchrun's ``--nnodes``."""
    low, _, high = text.partition(":")
    try:
        nodes = (int(low), int(high or low))
    except ValueError:
        raise UsageError(f"--nnodes takes N or MIN:MAX, got {text!r}") from None
    if not 1 <= nodes[0] <= nodes[1]:
        raise UsageError(f"--nnodes needs 1 <= MIN <= MAX, got {text!r}")
    return nodes


@contextmanager
def quiet_agent() -> Iterator[None]:
    """The agent logs its configuration at INFO and warnings and errors on shutdown and restarts;
    keep the console for trainplay's own lines. ``TRAINPLAY_AGENT_LOGS=1`` shows the agent's."""
    if os.environ.get("TRAINPLAY_AGENT_LOGS") == "1":
        yield
        return
    prefixes = ("torch.distributed.elastic", "torch.distributed.launcher")
    known = [n for n in logging.root.manager.loggerDict if n.startswith(prefixes)]
    loggers = [logging.getLogger(n) for n in {*prefixes, *known}]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


@contextmanager
def agent_logs() -> Iterator[DefaultLogsSpecs]:
    """Where the agent keeps its workers' files (an ``error.json`` per failed worker; their
    output stays on the console): a folder of this run's own, removed when the run ends, however
    it ends. The agent's default, as ``torchrun``'s, makes a ``torchelastic_*`` folder in the
    temporary folder for every run and leaves it there (3096 of them in this machine's ``/tmp``
    on 2026-12-07, from the project's tests and benchmarks). A failure's message is read from its
    file when the agent reports it (``ProcessFailure``), before the folder goes."""
    folder = tempfile.mkdtemp(prefix="trainplay-agent-")
    try:
        yield DefaultLogsSpecs(log_dir=folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _follow(path: Path | None, label: str, stop: threading.Event, show: bool) -> threading.Thread:
    def loop() -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (
            TextColumn(label),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
        )
        with Progress(*columns, transient=True, disable=not show or path is None) as bar:
            task = bar.add_task(label, total=1.0)
            while not stop.wait(0.2):
                with suppress(OSError, ValueError, AttributeError):
                    bar.update(task, completed=float(path.read_text() or 0))

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def _root_cause(exc: ChildFailedError) -> str:
    for failure in exc.failures.values():
        message = failure.message
        if isinstance(message, dict):
            message = message.get("message", "")
        text = str(message).strip().splitlines()
        return text[-1] if text else f"exit code {failure.exitcode}"
    return str(exc).strip().splitlines()[0]


def run_workers(
    module: str,
    args: Sequence[str],
    *,
    nproc: int,
    nnodes: tuple[int, int] = (1, 1),
    rdzv_endpoint: str | None = None,
    run_id: str | None = None,
    progress_file: Path | None = None,
    label: str = "working",
    show_progress: bool = True,
) -> None:
    """Run ``python -m module *args`` on ``nproc`` local workers; raise :class:`WorkerFailed` with
    the first failure's last line if any worker fails. The workers get the host memory allocator
    ``trainplay train``'s workers get (freed memory kept: :func:`~trainplay.hardware.allocator.
    for_workers`), so what they time runs in the regime training runs in."""
    if nproc < 1:
        raise UsageError(f"--nproc must be at least 1, got {nproc}")
    if nnodes[0] > 1 and not rdzv_endpoint:
        raise UsageError("several nodes need --rdzv-endpoint HOST:PORT, the same on every node")
    stop = threading.Event()
    follower = _follow(progress_file, label, stop, show_progress)
    # the workers' timings count this process tree as their own, not as another program's load
    os.environ.setdefault(QUIET_ROOT_ENV, str(os.getpid()))
    try:
        with for_workers(), quiet_agent(), agent_logs() as logs:
            config = LaunchConfig(
                min_nodes=nnodes[0],
                max_nodes=nnodes[1],
                nproc_per_node=nproc,
                logs_specs=logs,
                run_id=run_id or f"trainplay-{uuid.uuid4().hex[:8]}",
                rdzv_backend="c10d",
                rdzv_endpoint=rdzv_endpoint or "127.0.0.1:0",  # loopback unless one is given
                max_restarts=0,
                monitor_interval=0.1,
                start_method="spawn",
            )
            elastic_launch(config, sys.executable)("-m", module, *args)
    except ChildFailedError as exc:
        raise WorkerFailed(f"a worker of {module} failed: {_root_cause(exc)}") from None
    finally:
        stop.set()
        follower.join(timeout=2)
