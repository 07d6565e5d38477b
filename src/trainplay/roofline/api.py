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
    """Profile ``model`` on ``meta`` with its training loss (at the batch, at one micro-batch for
    a pipeline, and at twice the batch for the what-if lines) and run MD-Roofline on ``cluster``
    (a :class:`ClusterSpec`, a YAML path, ``local`` measured with as many workers as the layout
    uses, or ``local:N``)."""
    if batch_size < 1:
        raise UsageError(f"--batch must be a positive integer, got {batch_size}")
    parallel = parallel or Parallel()
    spec = (
        resolve_cluster(cluster, workers=parallel.workers, show_progress=show_progress)
        if isinstance(cluster, str)
        else cluster
    )
    micro = None
    if parallel.pp > 1 and batch_size % parallel.mb:
        raise UsageError(
            f"--parallel mb={parallel.mb} must divide --batch {batch_size} (every micro-batch "
            "has the same size); pick a divisor"
        )
    options = {"input_shape": input_shape, "seq_len": seq_len, "dtype": dtype, "loss": True}
    small = profile(model, batch_size=batch_size, **options)
    if parallel.pp > 1 and parallel.mb > 1:
        micro = profile(model, batch_size=batch_size // parallel.mb, **options)
    result = analyze(small, spec, parallel, optimizer=optimizer, micro=micro)
    large = profile(model, batch_size=2 * batch_size, **options)
    return replace(result, what_if=tuple(what_if_lines(result, small, large)))
