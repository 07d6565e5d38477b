"""``validate``: MD-Roofline's prediction against real training iterations on this machine.

Two numbers per configuration (model, batch per process, processes):

- **measured**: median wall time of real training iterations (forward, the training loss,
  backward, SGD with momentum; ``DistributedDataParallel`` over gloo with two or more processes),
  each as long as its slowest rank, on this machine's CPU;
- **predicted**: :func:`~trainplay.roofline.analysis.analyze` with this machine's performance
  profile measured with the same number of processes (``local`` of that layout:
  :mod:`trainplay.hardware.local`) — the one cost model ``analyze``, ``plan`` and ``train`` use.

The CPUs' placement (:mod:`trainplay.hardware.placement`) is probed around every timed iteration.
Where ``local`` was measured in the placement most of them ran in, the iterations of that placement
are measured against its profile; otherwise every iteration against the one profile.

Per block, the measured time comes from a PyTorch profiler trace of extra iterations (blocks
annotated, backward matched through autograd sequence numbers); the profiler's own overhead
inflates it a little, so block errors are indicative and the iteration error is the figure.
Nothing is fitted: the profile comes from synthetic microbenchmarks, never from this model.
The workers get the host allocator ``hw measure``'s and ``train``'s workers get (freed memory
kept: :func:`trainplay.launch.run_workers`), so the step is timed in the regime it is priced in.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from trainplay.hardware.local import cached_placements, local_cluster
from trainplay.hardware.placement import most_common
from trainplay.launch import run_workers
from trainplay.roofline.analysis import RooflineResult, analyze
from trainplay.roofline.kineto import read_trace
from trainplay.roofline.layout import Parallel
from trainplay.workload import profile

__all__ = ["BlockCheck", "Validation", "validate"]


@dataclass(frozen=True, kw_only=True)
class BlockCheck:
    name: str
    measured_s: float | None
    """Forward + backward of the block in the profiled iterations (median over them)."""
    predicted_s: float
    bound: str


@dataclass(frozen=True, kw_only=True)
class Validation:
    model: str
    batch_size: int
    """Samples per process per iteration."""
    nproc: int
    threads: int
    """Torch threads per process."""
    measured_s: float
    """Median of the timed iterations: of those timed in ``placement`` where it is not ``None``."""
    measured_all_s: tuple[float, ...]
    placements: tuple[str | None, ...]
    """The CPUs' placement during each timed iteration (:mod:`trainplay.hardware.placement`;
    ``mixed`` where it changed, ``None`` where the probe cannot tell)."""
    placement: str | None
    """The placement priced and measured: the one most iterations ran in, where the profile of
    ``local`` was measured in that placement; ``None`` (all iterations, the one profile) where
    not."""
    disturbed_steps: int
    """Timed steps taken again because another program loaded the machine meanwhile."""
    predicted_s: float
    blocks: tuple[BlockCheck, ...]
    peaks: dict[str, float | None]

    @property
    def error(self) -> float:
        return (self.predicted_s - self.measured_s) / self.measured_s

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["error"] = self.error
        return data


def validate(
    model: str,
    batch_size: int,
    *,
    nproc: int = 1,
    input_shape: tuple[int, ...] | None = None,
    seq_len: int | None = None,
    iters: int = 10,
    show_progress: bool = True,
    prof: Any = None,
) -> Validation:
    """Measure and predict one configuration on this machine's CPU. ``prof`` is the model's
    profile at ``batch_size`` with its loss, when the caller made it (a user decoder)."""
    if prof is None:
        prof = profile(
            model, batch_size=batch_size, input_shape=input_shape, seq_len=seq_len, loss=True
        )
    with tempfile.TemporaryDirectory(prefix="trainplay-validate-") as tmp:
        out = Path(tmp) / "result.json"
        shape_args = (
            ["--seq-len", str(prof.input_shape[0])]
            if seq_len is not None
            else ["--input-shape", ",".join(str(s) for s in prof.input_shape)]
        )
        args = [
            "--model", model, "--batch", str(batch_size), "--iters", str(iters),
            "--trace-dir", tmp, "--out", str(out), *shape_args,
            "--blocks", ",".join(x.name for x in prof.layers),
        ]  # fmt: skip
        progress = Path(tmp) / "progress"
        run_workers(
            "trainplay.roofline.validate_worker",
            [*args, "--progress-file", str(progress)],
            nproc=nproc,
            progress_file=progress,
            label=f"validating {model}",
            show_progress=show_progress,
        )
        result = json.loads(out.read_text())
        trace = read_trace(Path(result["traces"][0]))
    measured_blocks: dict[str, list[float]] = {}
    for step in trace.steps:
        for name, seconds in step.blocks_s.items():
            measured_blocks.setdefault(name, []).append(seconds)
    times, placements = (
        result["iteration_s"],
        result.get("placements") or [None] * len(result["iteration_s"]),
    )
    placement = _priced_placement(placements, nproc)
    cluster = local_cluster(nproc, show_progress=show_progress, placement=placement)
    if placement is not None:
        times = [t for t, p in zip(times, placements, strict=True) if p == placement]
    predicted: RooflineResult = analyze(prof, cluster, Parallel(dp=nproc))
    blocks = tuple(
        BlockCheck(
            name=r.name,
            measured_s=(
                statistics.median(measured_blocks[r.name]) if r.name in measured_blocks else None
            ),
            predicted_s=r.predicted_s - r.exposed_comm_s,
            bound=r.bound,
        )
        for r in predicted.layers
    )
    return Validation(
        model=model,
        batch_size=batch_size,
        nproc=nproc,
        threads=result["threads"],
        measured_s=statistics.median(times),
        measured_all_s=tuple(result["iteration_s"]),
        placements=tuple(placements),
        placement=placement,
        disturbed_steps=result.get("disturbed_steps", 0),
        predicted_s=predicted.iteration.predicted_s,
        blocks=blocks,
        peaks={k: predicted.peaks[k] for k in ("apf", "apm", "apb")},
    )


def _priced_placement(placements: list[str | None], nproc: int) -> str | None:
    """The placement most iterations ran in, where ``local`` with ``nproc`` workers was measured
    in it; else ``None``."""
    measured = cached_placements(nproc)
    return most_common(p for p in placements if p in measured)
