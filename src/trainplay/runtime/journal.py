"""The run's journal: one JSON object per line, appended by the worker that leads the plan.

Events (``"event"`` names them, ``"time_s"`` is Unix time on the writer's clock):

- ``start``: a worker group began — ``world_size``, ``plan_id``, ``devices``, ``step`` (the next
  step), ``restart`` (torchrun's restart count), ``predicted_step_s``, ``timer_fields`` (the
  columns of ``step.timers_s``) and ``ranks``: every rank of the plan (``rank``, ``device``,
  ``node``, ``stage``, ``replica``, ``share``) with ``predicted``, the cost model's seconds per step
  for it (``fwd_s``, ``bwd_s``, ``allreduce_s``, ``optimizer_s``, ``data_s``: taking its share of
  the batch; ``compute_s`` and ``memory_s``: its forward and backward split by MD-Roofline
  bound), or ``null`` (:mod:`trainplay.runtime.measured`); ``data_fetch_s``: device id ->
  ``[fixed_s, per_sample_s]`` of taking samples on its rank, as measured before planning
  (:mod:`trainplay.runtime.fetch`).
- ``replan``: the plan changed (or a change was declined) — ``reason`` (``leave``, ``join``,
  ``calibration``: the measured speeds call for another plan, :mod:`trainplay.runtime.
  calibration`), ``from_plan_id``, ``to_plan_id``, ``switch``, the makespan figures of the
  decision.
- ``calibration``: some device ran beyond the tolerance off its price — ``step``, ``measured``
  (device id -> busy over predicted busy over the last steps), ``scales`` (device id -> the scale
  used from now on), ``decision`` (the makespan figures, when a plan was weighed).
- ``restore``: where a worker group after the first starts — ``step``, ``checkpoint`` (``null``:
  a restart before any checkpoint, from step 0), ``skipped`` (damaged newer checkpoints, each
  with ``why``), ``recovery_s`` (seconds from the agent detecting the failure or the joining node
  to the end of the first step after the restore), ``cause`` (``failure``: this node's worker
  failed; ``membership``: another node waited in the rendezvous; ``restart``: a new
  ``trainplay train`` on the same checkpoints; ``replan``: the workers checkpointed for a plan
  that suits the measured speeds). Every ``start`` after a job's first is followed
  by a ``restore`` (and by a ``replan`` when the devices changed).
- ``step``: ``step`` (from 0), ``world_size``, ``plan_id``, ``samples`` (global positions
  ``[start, end)``), ``loss`` (mean over the global batch), ``step_s`` (seconds from the previous
  step's end to this one's, or from the worker group's loop start for its first: the period of the
  training loop, so the steps' sum is the loop's time, its journal writes, progress, checkpoint
  polls and stop agreements included), ``timers_s``: one row per rank of ``start.ranks``, the
  ``timer_fields`` of that rank's step (:mod:`trainplay.runtime.timers`; their ``step_s`` is the
  step's own work, from taking the batch to the timers' end).
- ``timing``: at the end of a worker group (or before its ``stop``) — ``plan_id``, ``ranks``: per
  rank the median of each timer over the group's steps.
- ``checkpoint``: a checkpoint complete (sealed) — ``step`` (steps completed), ``path``,
  ``seconds`` (from its start to its end), ``stall_s`` (how long training waited for it: all of
  it when synchronous; with ``--checkpoint-async`` the copy to memory, the write journaled at the
  step boundary where it is seen done).
- ``stop``: a planned stop (:mod:`trainplay.runtime.stopping`) — ``step`` (steps completed),
  ``signal`` (``SIGTERM`` from an agent restarting or shutting down, ``SIGINT`` for Ctrl-C),
  ``checkpoint`` (its path, or ``null`` without ``--checkpoint-dir``).
- ``memory``: one per rank that trains, at the end of the worker group — ``rank``, ``device``,
  ``peak_bytes`` (measured: :mod:`trainplay.runtime.memory`), ``plan_bytes`` (the planner's figure
  for its stage), ``capacity_bytes`` (its device's memory).
- ``done``: ``steps``, ``seconds`` (the job's wall time, from its first start — kept in the
  checkpoint directory's ``run.json`` across restarts and reruns — to the end), ``group_seconds``
  (this worker group's), ``steps_redone`` (steps journaled more than once since the job began:
  trained again after a restore).

A step that reappears after a restore supersedes the earlier record of it: the final trajectory
is the last record of each step.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from trainplay.roofline.measured import MeasuredRun, RankSteps

__all__ = ["Journal", "measured_runs", "read_journal", "trajectory"]


class Journal:
    """Appends events to ``path`` (nothing when ``path`` is ``None``); each line is flushed."""

    def __init__(self, path: Path | None):
        self.path = path
        self._file = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8")

    def write(self, event: str, **fields: Any) -> dict[str, Any]:
        record = {"event": event, "time_s": round(time.time(), 6), **fields}
        if self._file is not None:
            self._file.write(json.dumps(record) + "\n")
            self._file.flush()
        return record

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_journal(path: Path) -> list[dict[str, Any]]:
    """Every complete line of a journal (a line cut short by a crash is skipped)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def trajectory(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The final record of each step, in step order."""
    last: dict[int, dict[str, Any]] = {}
    for e in events:
        if e.get("event") == "step":
            last[e["step"]] = e
    return [last[k] for k in sorted(last)]


def measured_runs(events: list[dict[str, Any]]) -> list[MeasuredRun]:
    """Each worker group's timed steps, in journal order (groups without timers are left out:
    journals written before the runtime timed its steps)."""
    groups: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    for e in events:
        if e.get("event") == "start":
            groups.append((e, []))
        elif e.get("event") == "step" and groups and e.get("timers_s"):
            groups[-1][1].append(e)
    out = []
    for start, steps in groups:
        fields = start.get("timer_fields")
        described = start.get("ranks")
        if not steps or not fields or not described:
            continue
        floors = start.get("cpu_floors") or {}
        ranks = tuple(
            RankSteps(
                rank=d["rank"],
                device=d["device"],
                node=d.get("node"),
                stage=d["stage"],
                replica=d["replica"],
                share=d["share"],
                predicted=d.get("predicted"),
                cpu_floor=floors.get(d["device"], 1.0),
                steps=tuple(dict(zip(fields, e["timers_s"][i], strict=True)) for e in steps),
            )
            for i, d in enumerate(described)
        )
        out.append(
            MeasuredRun(
                plan_id=start["plan_id"],
                first_step=steps[0]["step"],
                step_s=tuple(e["step_s"] for e in steps),
                predicted_step_s=start.get("predicted_step_s"),
                ranks=ranks,
            )
        )
    return out
