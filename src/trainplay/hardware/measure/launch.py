"""Launch the measurement through torchrun's elastic agent, on one machine or many.

One worker process per device runs :mod:`trainplay.hardware.measure.worker` (see
:mod:`trainplay.launch`, which gives them the host memory allocator ``trainplay train``'s workers
get); rank 0's result comes back. One node needs nothing more;
for several, run the same command on each node with ``nnodes`` and a shared ``rdzv_endpoint``.
"""

from __future__ import annotations

import datetime
import json
import tempfile
import time
from pathlib import Path

import torch

from trainplay.errors import UsageError
from trainplay.hardware.drift import reference_rates
from trainplay.hardware.measurement import Measurement, WorkerPeaks
from trainplay.launch import parse_nnodes, run_workers

__all__ = ["measure"]


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
    threads: int | None = None,
    placement: str | None = None,
) -> Measurement | None:
    """Measure every worker's achievable peaks; ``None`` on a node other than rank 0's.

    ``device`` defaults to ``cuda`` when a GPU is visible, else ``cpu``; with CUDA, ``nproc``
    may not exceed the number of GPUs. ``nnodes`` is ``N`` or ``MIN:MAX`` as for torchrun.
    ``threads``: a CPU worker's intra-op threads (default: the CPUs split between the workers).
    ``placement``: the placement of the CPUs one worker's operators are timed in, waiting for it
    (:mod:`trainplay.hardware.placement`; default: the one they are in when its sweep begins).
    """
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda needs a CUDA device, and torch sees none; use --device cpu")
    if device == "cuda" and nproc > torch.cuda.device_count():
        raise UsageError(f"--nproc {nproc} exceeds the {torch.cuda.device_count()} visible GPU(s)")
    if nproc < 1:
        raise UsageError(f"--nproc must be at least 1, got {nproc}")
    nodes = parse_nnodes(nnodes)
    if nodes[0] > 1 and not rdzv_endpoint:
        raise UsageError("several nodes need --rdzv-endpoint HOST:PORT, the same on every node")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="trainplay-measure-") as tmp:
        progress, out = Path(tmp) / "progress", Path(tmp) / "workers.json"
        progress.write_text("0")
        # Workers run the worker module as a program: exactly the torchrun form in its docstring.
        args = [
            "--device",
            device,
            "--dtype",
            ",".join(dtypes),
            "--out",
            str(out),
            "--progress-file",
            str(progress),
            *(["--quick"] if quick else []),
            *(["--threads", str(threads)] if threads else []),
            *(["--placement", placement] if placement else []),
        ]
        run_workers(
            "trainplay.hardware.measure.worker",
            args,
            nproc=nproc,
            nnodes=nodes,
            rdzv_endpoint=rdzv_endpoint,
            run_id=run_id,
            progress_file=progress,
            label="measuring peaks",
            show_progress=show_progress,
        )
        if not out.exists():  # rank 0 ran on another node
            return None
        workers = json.loads(out.read_text())["workers"]
    reference = reference_rates() if device == "cpu" else None  # the machine idle again
    return Measurement(
        workers=tuple(WorkerPeaks.from_dict(w) for w in workers),
        backend="nccl" if device == "cuda" else "gloo",
        quick=quick,
        seconds=time.perf_counter() - started,
        torch_version=torch.__version__,
        measured_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        reference=reference,
    )
