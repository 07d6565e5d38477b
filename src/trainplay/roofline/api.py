"""``analyze_model``: the one call behind ``trainplay analyze``, by model name and cluster."""

from __future__ import annotations

from dataclasses import replace

from trainplay.errors import UsageError
from trainplay.hardware.local import resolve_cluster
from trainplay.hardware.spec import ClusterSpec
from trainplay.roofline.analysis import RooflineResult, analyze
from trainplay.roofline.layout import Parallel
from trainplay.roofline.whatif import what_if_lines
from trainplay.workload import profile

__all__ = ["analyze_model"]


def analyze_model(
    model: str,
    cluster: str | ClusterSpec,
    *,
    parallel: Parallel | None = None,
    batch_size: int = 1,
    input_shape: tuple[int, ...] | None = None,
    seq_len: int | None = None,
    dtype: str = "fp32",
    optimizer: str = "sgd",
    show_progress: bool = False,
) -> RooflineResult:
    """Profile ``model`` on ``meta`` (at the batch and twice it, for the what-if lines) and run
    MD-Roofline on ``cluster`` (a :class:`ClusterSpec`, a YAML path, or ``local``)."""
    if batch_size < 1:
        raise UsageError(f"--batch must be a positive integer, got {batch_size}")
    if parallel is not None:
        parallel.check_batch(batch_size)
    spec = (
        resolve_cluster(cluster, show_progress=show_progress)
        if isinstance(cluster, str)
        else cluster
    )
    options = {"input_shape": input_shape, "seq_len": seq_len, "dtype": dtype}
    small = profile(model, batch_size=batch_size, **options)
    result = analyze(small, spec, parallel, optimizer=optimizer)
    large = profile(model, batch_size=2 * batch_size, **options)
    return replace(result, what_if=tuple(what_if_lines(result, small, large)))
