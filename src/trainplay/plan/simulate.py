"""An event-driven simulator of one pipelined, data-parallel training iteration.

What it models (the planner's cost model of an iteration):

- Each replica is a pipeline of stages, one device each; its first and last stage first take the
  replica's share of the batch (``PipelineWork.fetch_s``, the slower of the two; every stage
  starts that much later, a bound for the stages past the first), then
  every micro-batch runs forward through the stages and backward in reverse. A device does one
  thing at a time, in the order its schedule gives (``torch.distributed.pipelining``'s
  ``ScheduleGPipe``: all forwards, then all backwards; ``Schedule1F1B``: ``S - s - 1`` warm-up
  forwards, then one forward and one backward in turn, then the remaining backwards).
- Between consecutive stages a link carries the activation forward and its gradient back; each
  direction is its own resource (full duplex), first come first served, and a transfer overlaps
  the devices' compute.
- When every replica has flushed its pipeline, each stage's gradients are all-reduced over that
  stage's replicas (the stages at once, on disjoint device groups), and then every device steps
  its optimizer. The iteration ends when the last device has stepped. (An all-reduce could start
  when its own stage has finished; waiting for the flush is a slight upper bound that keeps the
  GPipe time in closed form.)

For GPipe this gives exactly the flow-shop makespan of identical jobs, per phase, after the
fetch: ``fetch + sum(f) + (M-1)·max(f) + sum(b) + (M-1)·max(b)``, where ``f`` and ``b`` run over
the stages and the links between them (:func:`gpipe_pipeline_s`; the tests hold the simulator to
it). 1F1B has no closed form with uneven stages; the simulator gives its time.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "SCHEDULES",
    "Event",
    "IterationWork",
    "PipelineWork",
    "Timeline",
    "flush_s",
    "gpipe_pipeline_s",
    "iteration_s",
    "sample_stages",
    "simulate",
    "to_chrome_trace",
]

SCHEDULES = ("gpipe", "1f1b")


def sample_stages(stages: int) -> tuple[int, ...]:
    """The stages of a replica of ``stages`` that take its samples each step: the first (the
    inputs) and the last (the targets, for the loss); a stage between them takes activations.
    The runtime fetches by this rule, and the cost model, the simulator and the journal's
    predicted times price by it."""
    return tuple(sorted({0, stages - 1})) if stages > 0 else ()


@dataclass(frozen=True)
class PipelineWork:
    """One replica: per stage, device and per-micro-batch forward and backward seconds; per cut,
    the seconds to send one micro-batch's activation (and, back, its gradient); and the seconds
    its first and last stage take to fetch their share of the batch before any stage starts."""

    devices: tuple[str, ...]
    fwd_s: tuple[float, ...]
    bwd_s: tuple[float, ...]
    send_s: tuple[float, ...]
    fetch_s: float = 0.0

    def __post_init__(self) -> None:
        s = len(self.devices)
        if not (len(self.fwd_s) == len(self.bwd_s) == s and len(self.send_s) == s - 1):
            raise ValueError("a pipeline needs fwd_s, bwd_s per stage and send_s per cut")


@dataclass(frozen=True)
class IterationWork:
    """Everything one iteration does, priced."""

    replicas: tuple[PipelineWork, ...]
    microbatches: int
    schedule: str
    allreduce_s: tuple[float, ...]
    """Per stage: all-reduce of its gradients over the replicas (0 with one replica)."""
    optimizer_s: tuple[tuple[float, ...], ...]
    """Per replica, per stage: the optimizer step on that device."""

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.microbatches < 1:
            raise ValueError(f"microbatches must be at least 1, got {self.microbatches}")
        if not self.replicas:
            raise ValueError("an iteration needs at least one replica")
        stages = len(self.replicas[0].devices)
        if any(len(p.devices) != stages for p in self.replicas):
            raise ValueError("every replica needs the same number of stages")
        if len(self.allreduce_s) != stages:
            raise ValueError(f"allreduce_s needs one entry per stage ({stages})")
        if len(self.optimizer_s) != len(self.replicas) or any(
            len(row) != stages for row in self.optimizer_s
        ):
            raise ValueError("optimizer_s needs one row per replica, one entry per stage")


@dataclass(frozen=True)
class Event:
    """One interval on one resource of the simulated timeline."""

    lane: str
    """A device id, or ``link r:s->s+1 fwd|bwd``."""
    name: str
    """``data`` (taking the batch), ``F3`` (forward of micro-batch 3), ``B3``, ``send F3``,
    ``allreduce``, ``optimizer``."""
    replica: int
    stage: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class Timeline:
    events: tuple[Event, ...]
    pipeline_s: tuple[float, ...]
    """Per replica, when its pipeline flushed."""
    iteration_s: float


def gpipe_pipeline_s(p: PipelineWork, microbatches: int) -> float:
    """GPipe flush time of one replica: forward then backward flow shop of identical jobs."""
    fwd = [*p.fwd_s, *p.send_s]
    bwd = [*p.bwd_s, *p.send_s]
    m1 = microbatches - 1
    return p.fetch_s + sum(fwd) + m1 * max(fwd) + sum(bwd) + m1 * max(bwd)


def _tail_s(work: IterationWork) -> float:
    stages = len(work.allreduce_s)
    return max(work.allreduce_s[s] + max(opt[s] for opt in work.optimizer_s) for s in range(stages))


def iteration_s(work: IterationWork) -> float:
    """Iteration time: closed form for GPipe, simulated for 1F1B."""
    if work.schedule == "gpipe":
        pipe = max(gpipe_pipeline_s(p, work.microbatches) for p in work.replicas)
        return pipe + _tail_s(work)
    return simulate(work, keep_events=False).iteration_s


def _order(schedule: str, stages: int, stage: int, m: int) -> list[tuple[str, int]]:
    if schedule == "gpipe":
        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
    warmup = min(stages - stage - 1, m)
    order = [("F", i) for i in range(warmup)]
    nf, nb = warmup, 0
    while nb < m:
        if nf < m:
            order.append(("F", nf))
            nf += 1
        order.append(("B", nb))
        nb += 1
    return order


def _pipeline(p: PipelineWork, r: int, schedule: str, m: int, keep: bool) -> tuple[float, list]:
    stages = len(p.devices)
    events: list[Event] = []
    orders = [_order(schedule, stages, s, m) for s in range(stages)]
    pos, free = [0] * stages, [p.fetch_s] * stages
    if keep and p.fetch_s:
        events += [Event(p.devices[s], "data", r, s, 0.0, p.fetch_s) for s in sample_stages(stages)]
    link_free = {("F", s): 0.0 for s in range(stages - 1)} | {
        ("B", s): 0.0 for s in range(stages - 1)
    }
    arrive: dict[tuple[str, int, int], float] = {}
    fwd_done: dict[tuple[int, int], float] = {}
    remaining = sum(len(o) for o in orders)
    while remaining:
        moved = False
        for s in range(stages):
            while pos[s] < len(orders[s]):
                kind, i = orders[s][pos[s]]
                if kind == "F":
                    if s > 0 and ("F", s, i) not in arrive:
                        break
                    ready, length = arrive.get(("F", s, i), 0.0), p.fwd_s[s]
                else:
                    if s < stages - 1 and ("B", s, i) not in arrive:
                        break
                    ready, length = arrive.get(("B", s, i), fwd_done[(s, i)]), p.bwd_s[s]
                start = max(free[s], ready)
                end = start + length
                free[s] = end
                if keep:
                    events.append(Event(p.devices[s], f"{kind}{i}", r, s, start, end))
                if kind == "F":
                    fwd_done[(s, i)] = end
                cut = s if kind == "F" else s - 1
                if 0 <= cut < stages - 1:
                    begin = max(end, link_free[(kind, cut)])
                    done = begin + p.send_s[cut]
                    link_free[(kind, cut)] = done
                    arrive[(kind, cut + 1 if kind == "F" else cut, i)] = done
                    if keep and p.send_s[cut]:
                        lane = f"link {r}:{cut}->{cut + 1} {'fwd' if kind == 'F' else 'bwd'}"
                        events.append(Event(lane, f"send {kind}{i}", r, s, begin, done))
                pos[s] += 1
                remaining -= 1
                moved = True
        if not moved:
            raise RuntimeError("pipeline schedule deadlocked")  # a bug in _order, never input
    return max(free), events


@lru_cache(maxsize=1 << 16)
def flush_s(
    fwd_s: tuple[float, ...],
    bwd_s: tuple[float, ...],
    send_s: tuple[float, ...],
    schedule: str,
    microbatches: int,
) -> float:
    """When one replica's pipeline with these stage and link times flushes under ``schedule``
    (memoised: the search prices the same pipeline on many grids)."""
    p = PipelineWork(tuple(str(s) for s in range(len(fwd_s))), fwd_s, bwd_s, send_s)
    return _pipeline(p, 0, schedule, microbatches, False)[0]


def simulate(work: IterationWork, *, keep_events: bool = True) -> Timeline:
    """Run the iteration event by event; see the module docstring for what is modelled."""
    events: list[Event] = []
    flush = []
    for r, p in enumerate(work.replicas):
        end, evs = _pipeline(p, r, work.schedule, work.microbatches, keep_events)
        flush.append(end)
        events.extend(evs)
    barrier = max(flush)
    finish = barrier
    for r, p in enumerate(work.replicas):
        for s, device in enumerate(p.devices):
            t = barrier
            if work.allreduce_s[s]:
                if keep_events:
                    events.append(Event(device, "allreduce", r, s, t, t + work.allreduce_s[s]))
                t += work.allreduce_s[s]
            if keep_events and work.optimizer_s[r][s]:
                events.append(Event(device, "optimizer", r, s, t, t + work.optimizer_s[r][s]))
            finish = max(finish, t + work.optimizer_s[r][s])
    return Timeline(tuple(events), tuple(flush), finish)


def to_chrome_trace(timeline: Timeline, *, title: str = "trainplay plan") -> dict[str, Any]:
    """The timeline as Chrome trace JSON (Perfetto and chrome://tracing open it): one process per
    replica, one thread per device or link direction, microseconds."""
    lanes: dict[tuple[int, str], int] = {}
    trace: list[dict[str, Any]] = []
    for e in timeline.events:
        key = (e.replica, e.lane)
        if key not in lanes:
            lanes[key] = len(lanes) + 1
            trace.append(
                {"ph": "M", "name": "thread_name", "pid": e.replica, "tid": lanes[key],
                 "args": {"name": e.lane}}
            )  # fmt: skip
    for r in sorted({e.replica for e in timeline.events}):
        trace.append(
            {"ph": "M", "name": "process_name", "pid": r, "args": {"name": f"{title}: replica {r}"}}
        )
    for e in timeline.events:
        kind = {"F": "forward", "B": "backward"}.get(e.name[0], e.name.split()[0])
        trace.append(
            {
                "ph": "X",
                "name": e.name,
                "cat": kind,
                "pid": e.replica,
                "tid": lanes[(e.replica, e.lane)],
                "ts": e.start_s * 1e6,
                "dur": (e.end_s - e.start_s) * 1e6,
                "args": {"stage": e.stage},
            }
        )
    return {
        "traceEvents": trace,
        "displayTimeUnit": "ms",
        "otherData": {"iteration_s": timeline.iteration_s, "generator": "trainplay plan"},
    }
