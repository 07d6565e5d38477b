"""The parallel layout an analysis assumes: data-parallel replicas, pipeline stages, micro-batches."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from trainplay.errors import UsageError

__all__ = ["DDP_BUCKET_BYTES", "DDP_FIRST_BUCKET_BYTES", "Parallel", "balanced_stages"]

DDP_BUCKET_BYTES = 25 * 2**20
"""DistributedDataParallel's default ``bucket_cap_mb`` (25 MiB)."""
DDP_FIRST_BUCKET_BYTES = 1 * 2**20
"""DDP's first bucket is capped at 1 MiB so the first all-reduce starts early
(``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES``)."""


@dataclass(frozen=True, kw_only=True)
class Parallel:
    """How one training iteration is spread over workers."""

    dp: int = 1
    """Data-parallel replicas; each processes the analysed batch."""
    pp: int = 1
    """Pipeline stages: contiguous block ranges, one worker each (per replica)."""
    microbatches: int | None = None
    """Micro-batches per iteration in the pipeline (GPipe); default: one per stage."""
    bucket_bytes: int = DDP_BUCKET_BYTES
    """Gradient bucket size of the data-parallel all-reduce."""
    overlap: bool | None = None
    """Whether gradient all-reduces overlap the backward pass; default: yes on GPUs, no on CPUs,
    where gloo reduces on the same cores that compute."""

    def __post_init__(self) -> None:
        for name in ("dp", "pp"):
            if getattr(self, name) < 1:
                raise UsageError(f"--parallel {name} must be at least 1, got {getattr(self, name)}")
        if self.microbatches is not None and self.microbatches < 1:
            raise UsageError(f"--parallel mb must be at least 1, got {self.microbatches}")

    @property
    def workers(self) -> int:
        return self.dp * self.pp

    @property
    def mb(self) -> int:
        return self.microbatches or self.pp

    @classmethod
    def parse(cls, text: str) -> Parallel:
        """``"dp=4,pp=2,mb=8"`` (any subset, any order, each key once)."""
        names = {"dp": "dp", "pp": "pp", "mb": "microbatches"}
        values: dict[str, int] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, _, value = (x.strip() for x in part.partition("="))
            if key not in names or not (value.isascii() and value.isdigit()):
                raise UsageError(
                    f"--parallel takes dp=N,pp=S[,mb=M] with whole numbers, got {text!r}"
                )
            if names[key] in values:
                raise UsageError(f"--parallel gives {key} twice in {text!r}; give it once")
            values[names[key]] = int(value)
        return cls(**values)

    def check_batch(self, batch_size: int) -> None:
        """Every micro-batch holds the same whole number of samples (as ``plan`` requires)."""
        if batch_size % self.mb == 0:
            return
        given = (
            f"mb={self.mb}" if self.microbatches else f"pp={self.pp} (one micro-batch per stage)"
        )
        fix = "fewer micro-batches" if self.mb > batch_size else f"a divisor of {batch_size}"
        raise UsageError(
            f"--parallel {given} cuts --batch {batch_size} into {self.mb} micro-batches of "
            f"{batch_size}/{self.mb} samples, but micro-batches hold the same whole number of "
            f"samples: give mb= as {fix}, or a --batch that {self.mb} divides"
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["microbatches"] = self.mb
        return data


def balanced_stages(times: list[float], stages: int) -> list[int]:
    """Split ``times`` (per block, in order) into ``stages`` contiguous ranges minimising the
    largest sum; returns each block's stage. Binary search on the answer with a greedy check."""
    if stages > len(times):
        raise UsageError(
            f"--parallel pp={stages} needs at least {stages} blocks; the model has {len(times)}"
        )
    lo, hi = max(times), sum(times)
    for _ in range(100):
        mid = (lo + hi) / 2
        if _pieces(times, mid) <= stages:
            hi = mid
        else:
            lo = mid
    assignment: list[int] = []
    stage, acc = 0, 0.0
    for i, t in enumerate(times):
        # a new stage when this one would exceed the cap, or when every later stage needs a block
        full = acc + t > hi * (1 + 1e-12)
        forced = len(times) - i <= stages - 1 - stage
        if assignment and stage < stages - 1 and (full or forced):
            stage, acc = stage + 1, 0.0
        assignment.append(stage)
        acc += t
    return assignment


def _pieces(times: list[float], cap: float) -> int:
    pieces, acc = 1, 0.0
    for t in times:
        if acc + t > cap and acc > 0:
            pieces, acc = pieces + 1, 0.0
        acc += t
    return pieces
