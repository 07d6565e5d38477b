"""``validate``: MD-Roofline's predictions against real training iterations on this machine.

Three numbers per configuration (model, batch per process, processes):

- **measured**: median wall time of real training iterations (forward, backward, SGD step;
  ``DistributedDataParallel`` over gloo with two or more processes), each as long as its slowest rank;
- **roofline**: :func:`~trainplay.roofline.analysis.analyze` with this machine's achievable peaks
  (APF, APM, APB measured by ``trainplay hw measure`` with the same number of processes);
- **operator-level**: the same analysis with each block's compute time taken from
  operator-level achievable peaks (every distinct operator timed alone on this machine, by every
  process at once, as they share it in training; :mod:`.achieved`).

Per block, the measured time comes from a PyTorch profiler trace of extra iterations (blocks
annotated, backward matched through autograd sequence numbers); the profiler's own overhead
inflates it a little, so block errors are indicative and the iteration error is the figure.
Nothing is fitted: no measured iteration time enters a prediction.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from trainplay.hardware.local import load_cached, save_cached
from trainplay.hardware.measure.launch import measure
from trainplay.hardware.measurement import Measurement
from trainplay.launch import run_workers
from trainplay.roofline.analysis import analyze
from trainplay.roofline.kineto import read_trace
from trainplay.roofline.layout import Parallel
from trainplay.workload import profile

__all__ = ["BlockCheck", "Validation", "validate"]


@dataclass(frozen=True, kw_only=True)
class BlockCheck:
    name: str
    measured_s: float | None
    """Forward + backward of the block in the profiled iterations (median over them)."""
    operator_s: float
    roofline_s: float


@dataclass(frozen=True, kw_only=True)
class Validation:
    model: str
    batch_size: int
    """Samples per process per iteration."""
    nproc: int
    threads: int
    """Torch threads per process."""
    measured_s: float
    measured_all_s: tuple[float, ...]
    roofline_s: float
    operator_s: float
    blocks: tuple[BlockCheck, ...]
    ops: int
    distinct_ops: int
    peaks: dict[str, float | None]

    @property
    def roofline_error(self) -> float:
        return (self.roofline_s - self.measured_s) / self.measured_s

    @property
    def operator_error(self) -> float:
        return (self.operator_s - self.measured_s) / self.measured_s

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["roofline_error"] = self.roofline_error
        data["operator_error"] = self.operator_error
        return data


def _local_peaks(nproc: int, show_progress: bool) -> Measurement:
    """This machine measured with ``nproc`` workers: the cache when it matches, else measured now."""
    cached = load_cached()
    if cached is not None and len(cached.workers) == nproc:
        return cached
    measurement = measure(nproc=nproc, device="cpu", quick=True, show_progress=show_progress)
    assert measurement is not None
    save_cached(measurement)
    return measurement


def validate(
    model: str,
    batch_size: int,
    *,
    nproc: int = 1,
    input_shape: tuple[int, ...] | None = None,
    iters: int = 10,
    show_progress: bool = True,
) -> Validation:
    """Measure and predict one configuration on this machine's CPU."""
    peaks = _local_peaks(nproc, show_progress)
    prof = profile(model, batch_size=batch_size, input_shape=input_shape)
    shape = ",".join(str(s) for s in prof.input_shape)
    with tempfile.TemporaryDirectory(prefix="trainplay-validate-") as tmp:
        out = Path(tmp) / "result.json"
        args = [
            "--model",
            model,
            "--batch",
            str(batch_size),
            "--iters",
            str(iters),
            "--trace-dir",
            tmp,
            "--out",
            str(out),
            "--input-shape",
            shape,
        ]
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
    cluster = peaks.to_cluster("local")
    parallel = Parallel(dp=nproc)
    achieved = {
        n: (f, b)
        for n, f, b in zip(
            result["blocks"], result["block_fwd_s"], result["block_bwd_s"], strict=True
        )
    }
    roofline = analyze(prof, cluster, parallel)
    operator = analyze(prof, cluster, parallel, achieved=achieved)
    blocks = tuple(
        BlockCheck(
            name=r.name,
            measured_s=statistics.median(measured_blocks[r.name])
            if r.name in measured_blocks
            else None,
            operator_s=sum(achieved[r.name]),
            roofline_s=_phase_sum(prof, r.name, roofline.peaks),
        )
        for r in roofline.layers
    )
    return Validation(
        model=model,
        batch_size=batch_size,
        nproc=nproc,
        threads=result["threads"],
        measured_s=result["iteration_median_s"],
        measured_all_s=tuple(result["iteration_s"]),
        roofline_s=roofline.iteration.predicted_s,
        operator_s=operator.iteration.predicted_s,
        blocks=blocks,
        ops=result["ops"],
        distinct_ops=result["distinct_ops"],
        peaks={k: roofline.peaks[k] for k in ("apf", "apm", "apb")},
    )


def _phase_sum(prof, name: str, peaks: dict[str, float | None]) -> float:
    layer = next(x for x in prof.layers if x.name == name)
    apf, apm = peaks["apf"], peaks["apm"]
    return max(layer.fwd_flops / apf, layer.fwd_bytes / apm) + max(
        layer.bwd_flops / apf, layer.bwd_bytes / apm
    )
