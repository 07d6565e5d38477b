"""Which plan a worker group runs: the same answer on every rank, from the same inputs.

On every start the ranks know the devices present, the job, and (from the checkpoint directory's
``run.json``) the plan the previous worker group ran. Then:

- no previous plan: search one for the devices present (the planner's search);
- ``--plan FILE``: that plan, always;
- the same devices as before (a worker failed and came back, or the plan was chosen, calibrated
  or re-planned with these very devices present, some of them left idle): keep the plan;
- a device of the plan is gone (a node left): re-plan on what remains;
- new devices (a node joined): the planner's makespan rule (``plan.api.decide_on_change``) weighs
  the new plan's shorter iterations over the remaining steps against the reconfiguration, priced
  at the recovery time this job last measured (or the planner's estimate before any), and the
  joining device's availability window; if it does not pay back the old plan stays and the new
  devices idle.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trainplay.errors import UsageError
from trainplay.plan.api import decide_on_change, make_plan
from trainplay.plan.costs import CostModel, Device
from trainplay.plan.plan import Plan
from trainplay.plan.search import SearchOptions, search

__all__ = ["Choice", "RunState", "choose_plan", "load_plan_file"]

RUN_FILE = "run.json"


@dataclass(frozen=True, kw_only=True)
class RunState:
    """What a worker group leaves for the next one, beside the checkpoints."""

    started_at_s: float
    """Unix time the job first started (availability windows count from it)."""
    plan: dict[str, Any]
    recovery_s: float | None = None
    """The last measured failure-to-first-step time."""
    scales: dict[str, float] = field(default_factory=dict)
    """Device id -> how much slower than priced it ran this job (measured by the runtime:
    :mod:`trainplay.runtime.calibration`)."""
    present: list[str] = field(default_factory=list)
    """The ids of the devices present when ``plan`` was chosen (it may leave some idle): the same
    devices at the next start are no change, not a join."""

    @classmethod
    def read(cls, directory: Path | None) -> RunState | None:
        if directory is None:
            return None
        try:
            data = json.loads((directory / RUN_FILE).read_text())
            return cls(
                started_at_s=float(data["started_at_s"]),
                plan=dict(data["plan"]),
                recovery_s=data.get("recovery_s"),
                scales={str(k): float(v) for k, v in data.get("scales", {}).items()},
                present=[str(d) for d in data.get("present", [])],
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, directory: Path) -> None:
        """Write ``run.json``; a directory that refuses it is the user's to fix (one line)."""
        tmp = directory / (RUN_FILE + ".tmp")
        try:
            directory.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(asdict(self)))
            tmp.replace(directory / RUN_FILE)
        except OSError as exc:
            raise UsageError(
                f"cannot write {directory / RUN_FILE} in --checkpoint-dir: "
                f"{exc.strerror or exc}; make the folder writable and run again"
            ) from None


@dataclass(frozen=True)
class Choice:
    plan: Plan
    reason: str
    """``fresh``, ``fixed``, ``same``, ``leave`` or ``join``."""
    previous: Plan | None
    decision: dict[str, Any] | None = None


def load_plan_file(path: Path, *, global_batch: int, block_names: tuple[str, ...]) -> Plan:
    """A plan from ``trainplay plan --format json --out FILE`` (or a bare plan object), checked
    against the job's global batch and the model's blocks."""
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read --plan {str(path)!r}: {exc.strerror}") from None
    except ValueError:
        raise UsageError(
            f"--plan {str(path)!r} is not JSON; write it with `trainplay plan --format json --out`"
        ) from None
    if isinstance(data, dict) and "plan" in data:
        data = data["plan"]
    plan = Plan.from_dict(data)
    if plan.global_batch != global_batch:
        raise UsageError(
            f"--plan {path} splits a global batch of {plan.global_batch}, not "
            f"--global-batch {global_batch}; plan again or change --global-batch"
        )
    if plan.block_names and plan.block_names != block_names:
        raise UsageError(f"--plan {path} was made for another model; plan this one")
    return plan


def choose_plan(
    cm: CostModel,
    present: list[Device],
    *,
    global_batch: int,
    previous: Plan | None,
    fixed: Plan | None,
    now_s: float,
    remaining_steps: int,
    recovery_s: float | None,
    options: SearchOptions,
    previous_present: list[str] | None = None,
) -> Choice:
    """The plan for the devices ``present`` (see the module docstring); ``previous_present``:
    the devices present when ``previous`` was chosen (``RunState.present``)."""
    if fixed is not None:
        return Choice(fixed, "fixed", previous)
    ids = {d.id for d in present}
    if previous is not None and previous.global_batch == global_batch:
        used = set(previous.devices)
        if used == ids or (used <= ids and set(previous_present or ()) == ids):
            return Choice(previous, "same", previous)
        joined = [d for d in present if d.id not in used]
        if used <= ids and joined:
            decision, plan = decide_on_change(
                cm, previous, present, now_s=now_s, remaining_iterations=remaining_steps,
                joined=joined[0], reconfiguration_s=recovery_s, options=options,
            )  # fmt: skip
            return Choice(plan or previous, "join", previous, _record(decision))
        if not used <= ids:
            decision, plan = decide_on_change(
                cm, previous, present, now_s=now_s, remaining_iterations=remaining_steps,
                reconfiguration_s=recovery_s, options=options,
            )  # fmt: skip
            if plan is None:
                raise _no_fit(cm, present)
            return Choice(plan, "leave", previous, _record(decision))
    found = search(cm, present, global_batch, options)
    if found is None:
        raise _no_fit(cm, present)
    return Choice(make_plan(cm, found.layout, cm.blocks.names)[0], "fresh", previous)


def _record(decision: Any) -> dict[str, Any]:
    data = decision.to_dict() if hasattr(decision, "to_dict") else dict(vars(decision))
    return {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in data.items()}


def _no_fit(cm: CostModel, present: list[Device]) -> UsageError:
    return UsageError(
        f"{cm.blocks.model} fits on none of the {len(present)} devices present; "
        "wait for more nodes (--nnodes MIN) or use a smaller model or batch"
    )
