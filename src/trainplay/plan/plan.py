"""The :class:`Plan` value: what the runtime executes, validated before any process starts.

A plan is ``R`` pipelines with the same stage boundaries. Stage ``s`` runs blocks
``blocks[0]..blocks[1]`` (inclusive) on ``devices[r]`` for replica ``r``; replica ``r`` takes
``batch_shares[r]`` samples of every global batch (the same on every stage), a multiple of
``microbatches``, cut into that many micro-batches of equal size. ``plan_id`` is a digest of the layout, so
every rank that derives the same plan names it the same way in the journal.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from trainplay.errors import UsageError
from trainplay.plan.simulate import SCHEDULES

__all__ = ["Plan", "PlanStage"]


_WRITE_ONE = "`trainplay plan MODEL --cluster ... --global-batch B --out plan.json`"


@dataclass(frozen=True, kw_only=True)
class PlanStage:
    blocks: tuple[int, int]
    """First and last block (inclusive, 0-based) of the stage."""
    devices: tuple[str, ...]
    """The device running this stage in each replica."""
    batch_shares: tuple[int, ...]
    """Samples of the global batch each replica takes (identical on every stage)."""
    recompute: bool = False
    """Whether the stage recomputes activations in backward (in every replica)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "blocks": list(self.blocks),
            "devices": list(self.devices),
            "batch_shares": list(self.batch_shares),
        }


@dataclass(frozen=True, kw_only=True)
class Plan:
    stages: tuple[PlanStage, ...]
    microbatches: int
    """Micro-batches per replica per iteration."""
    schedule: str
    """``gpipe`` or ``1f1b`` (``torch.distributed.pipelining``'s ScheduleGPipe / Schedule1F1B)."""
    predicted_iteration_s: float
    predicted_makespan_s: float | None = None
    """Whole job, reconfigurations included; ``None`` without a data set size."""
    block_names: tuple[str, ...] = field(default_factory=tuple)
    """Names of the model's blocks, so the plan can be checked against the model it was made for."""

    def __post_init__(self) -> None:
        if not self.stages:
            raise UsageError("a plan needs at least one stage")
        if self.schedule not in SCHEDULES:
            raise UsageError(
                f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}"
            )
        if self.microbatches < 1:
            raise UsageError(f"microbatches must be at least 1, got {self.microbatches}")
        first = self.stages[0]
        if not first.devices or len(first.batch_shares) != len(first.devices):
            raise UsageError(
                f"stage 0 has {len(first.devices)} devices and {len(first.batch_shares)} batch "
                "shares; give one device and one share per replica (at least one)"
            )
        expected = 0
        seen: set[str] = set()
        for k, stage in enumerate(self.stages):
            lo, hi = stage.blocks
            if lo != expected or hi < lo:
                raise UsageError(
                    f"stage {k} covers blocks {lo}..{hi}; stages must be contiguous from block "
                    f"{expected}"
                )
            expected = hi + 1
            if len(stage.devices) != len(first.devices) or stage.batch_shares != first.batch_shares:
                raise UsageError(f"stage {k} must have one device and the same share per replica")
            if seen & set(stage.devices) or len(set(stage.devices)) != len(stage.devices):
                raise UsageError(f"stage {k} reuses a device; each device runs one stage")
            seen |= set(stage.devices)
        if any(x < self.microbatches or x % self.microbatches for x in first.batch_shares):
            raise UsageError(
                f"every replica's share must be a positive multiple of the {self.microbatches} "
                f"micro-batches (all micro-batches of a replica have one size), got shares "
                f"{list(first.batch_shares)}"
            )
        if self.block_names and len(self.block_names) != expected:
            raise UsageError(
                f"the plan covers {expected} blocks but names {len(self.block_names)}; "
                "it was made for another model"
            )

    @property
    def replicas(self) -> int:
        return len(self.stages[0].devices)

    @property
    def global_batch(self) -> int:
        return sum(self.stages[0].batch_shares)

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(d for stage in self.stages for d in stage.devices)

    @property
    def recompute(self) -> tuple[bool, ...]:
        return tuple(s.recompute for s in self.stages)

    def renamed(self, names: Mapping[str, str]) -> Plan:
        """The same plan on other devices: each device id ``d`` becomes ``names[d]`` (kept where
        ``names`` lacks it)."""
        stages = tuple(
            replace(st, devices=tuple(names.get(d, d) for d in st.devices)) for st in self.stages
        )
        return replace(self, stages=stages)

    @property
    def plan_id(self) -> str:
        layout = {
            "stages": [s.to_dict() for s in self.stages],
            "microbatches": self.microbatches,
            "schedule": self.schedule,
            "recompute": list(self.recompute),
        }
        return hashlib.sha256(json.dumps(layout, sort_keys=True).encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan_id": self.plan_id,
            "stages": [s.to_dict() for s in self.stages],
            "microbatches": self.microbatches,
            "schedule": self.schedule,
            "recompute": list(self.recompute),
            "predicted_iteration_s": self.predicted_iteration_s,
            "predicted_makespan_s": self.predicted_makespan_s,
            "block_names": list(self.block_names),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        if not isinstance(data, dict):
            raise UsageError(
                f"not a trainplay plan: expected a JSON object, got {type(data).__name__}; "
                f"write one with {_WRITE_ONE}"
            )
        try:
            recompute = list(data.get("recompute") or [False] * len(data["stages"]))
            stages = tuple(
                PlanStage(
                    blocks=(int(s["blocks"][0]), int(s["blocks"][1])),
                    devices=tuple(s["devices"]),
                    batch_shares=tuple(int(x) for x in s["batch_shares"]),
                    recompute=bool(recompute[k]),
                )
                for k, s in enumerate(data["stages"])
            )
            plan = cls(
                stages=stages,
                microbatches=int(data["microbatches"]),
                schedule=data["schedule"],
                predicted_iteration_s=float(data["predicted_iteration_s"]),
                predicted_makespan_s=data.get("predicted_makespan_s"),
                block_names=tuple(data.get("block_names", ())),
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            if isinstance(exc, UsageError):
                raise
            raise UsageError(
                f"not a trainplay plan ({type(exc).__name__}: {exc}); write one with {_WRITE_ONE}"
            ) from None
        if "plan_id" in data and data["plan_id"] != plan.plan_id:
            raise UsageError("plan_id does not match the plan's layout; the plan was edited")
        return plan
