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

**Stages that share a node's cores** (:attr:`PipelineWork.alone_fwd_s`): two workers of one CPU
share its caches, its memory bandwidth and, where their threads outnumber the cores, the cores.
``trainplay hw measure --nproc N`` measures a worker with every worker busy and one with the
others idle (:attr:`~trainplay.hardware.spec.Peaks.alone`). A pipeline over such workers is
neither: in GPipe's fill and drain, and wherever a stage waits for its neighbour, one stage
computes while its sibling idles. Priced busy throughout, two-stage ResNet-18 pipelines on this
project's two-core machine were over-priced by 20-33%
(``benchmarks/results/train_plan_choice_rows64b-1206.md``). Such a pipeline is simulated as a
processor-sharing ("fluid") system (:func:`_shared_pipeline`): each forward or backward of a
micro-batch is a fixed amount of work that progresses at its *alone* rate while no other stage of
its node computes and at its *busy* rate while one does; a task starting or ending changes its
siblings' rates from then on. The links and the fetch do not count as computing (the fetch runs on
every sampling stage at once, priced busy). With three or more workers on a node the busy rate,
measured with all of them busy, holds as soon as one sibling computes: an upper bound. With alone
rates equal to the busy ones it is the simulator above, event for event (the tests hold it to
that); there is no closed form, so GPipe is simulated too.
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
    "pipeline_s",
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
    nodes: tuple[str, ...] = ()
    """Per stage, its device's node (stages on one node share its cores); ``()``: each its own."""
    alone_fwd_s: tuple[float, ...] = ()
    """Per stage, ``fwd_s`` as priced while no other stage of its node computes (``()``: not
    measured; a stage alone on its node, or measured only busy, repeats ``fwd_s``)."""
    alone_bwd_s: tuple[float, ...] = ()
    """Per stage, ``bwd_s`` likewise."""

    def __post_init__(self) -> None:
        s = len(self.devices)
        if not (len(self.fwd_s) == len(self.bwd_s) == s and len(self.send_s) == s - 1):
            raise ValueError("a pipeline needs fwd_s, bwd_s per stage and send_s per cut")
        if any(len(t) not in (0, s) for t in (self.nodes, self.alone_fwd_s, self.alone_bwd_s)):
            raise ValueError("nodes, alone_fwd_s and alone_bwd_s need one entry per stage or none")

    @property
    def shares_cores(self) -> bool:
        """Whether two of its stages share a node and some stage runs faster alone on it: then
        only the simulator prices it (module docstring)."""
        if not (self.nodes and self.alone_fwd_s and self.alone_bwd_s):
            return False
        if len(set(self.nodes)) == len(self.nodes):
            return False
        return self.alone_fwd_s != self.fwd_s or self.alone_bwd_s != self.bwd_s


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
    """GPipe flush time of one replica: forward then backward flow shop of identical jobs (stages
    priced busy throughout; :func:`pipeline_s` simulates stages that share a node's cores)."""
    fwd = [*p.fwd_s, *p.send_s]
    bwd = [*p.bwd_s, *p.send_s]
    m1 = microbatches - 1
    return p.fetch_s + sum(fwd) + m1 * max(fwd) + sum(bwd) + m1 * max(bwd)


def _tail_s(work: IterationWork) -> float:
    stages = len(work.allreduce_s)
    return max(work.allreduce_s[s] + max(opt[s] for opt in work.optimizer_s) for s in range(stages))


def pipeline_s(p: PipelineWork, schedule: str, microbatches: int) -> float:
    """When one replica's pipeline flushes, its fetch included: closed form for GPipe, simulated
    for 1F1B and for stages that share a node's cores."""
    if p.shares_cores:
        return _shared_pipeline(p, 0, schedule, microbatches, False)[0]
    if schedule == "gpipe":
        return gpipe_pipeline_s(p, microbatches)
    return p.fetch_s + flush_s(p.fwd_s, p.bwd_s, p.send_s, schedule, microbatches)


def iteration_s(work: IterationWork) -> float:
    """Iteration time: the slowest replica's flush (:func:`pipeline_s`), then the all-reduces and
    optimizer steps."""
    pipe = max(pipeline_s(p, work.schedule, work.microbatches) for p in work.replicas)
    return pipe + _tail_s(work)


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


def _send(
    p: PipelineWork,
    r: int,
    s: int,
    kind: str,
    i: int,
    end: float,
    link_free: dict[tuple[str, int], float],
    arrive: dict[tuple[str, int, int], float],
    events: list[Event] | None,
) -> None:
    """Stage ``s`` finished ``kind`` of micro-batch ``i`` at ``end``: send its activation on
    (forward) or its gradient back (backward) over the link of that direction, first come first
    served, and note when it arrives."""
    stages = len(p.devices)
    cut = s if kind == "F" else s - 1
    if not 0 <= cut < stages - 1:
        return
    begin = max(end, link_free[(kind, cut)])
    done = begin + p.send_s[cut]
    link_free[(kind, cut)] = done
    arrive[(kind, cut + 1 if kind == "F" else cut, i)] = done
    if events is not None and p.send_s[cut]:
        lane = f"link {r}:{cut}->{cut + 1} {'fwd' if kind == 'F' else 'bwd'}"
        events.append(Event(lane, f"send {kind}{i}", r, s, begin, done))


def _pipeline(p: PipelineWork, r: int, schedule: str, m: int, keep: bool) -> tuple[float, list]:
    if p.shares_cores:
        return _shared_pipeline(p, r, schedule, m, keep)
    stages = len(p.devices)
    events: list[Event] = []
    orders = [_order(schedule, stages, s, m) for s in range(stages)]
    pos, free = [0] * stages, [p.fetch_s] * stages
    if keep and p.fetch_s:
        events += [Event(p.devices[s], "data", r, s, 0.0, p.fetch_s) for s in sample_stages(stages)]
    link_free = {(kind, c): 0.0 for kind in "FB" for c in range(stages - 1)}
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
                _send(p, r, s, kind, i, end, link_free, arrive, events if keep else None)
                pos[s] += 1
                remaining -= 1
                moved = True
        if not moved:
            raise RuntimeError("pipeline schedule deadlocked")  # a bug in _order, never input
    return max(free), events


_DONE = 1e-12
"""Work left below which a task of the fluid simulation has finished (a fraction of the task)."""


def _shared_pipeline(
    p: PipelineWork, r: int, schedule: str, m: int, keep: bool
) -> tuple[float, list[Event]]:
    """The pipeline of stages that share a node's cores, simulated as a fluid (module
    docstring): between two events each running task progresses at its alone rate or its busy
    rate, by whether another stage of its node is running."""
    stages = len(p.devices)
    orders = [_order(schedule, stages, s, m) for s in range(stages)]
    pos = [0] * stages
    events: list[Event] = []
    if keep and p.fetch_s:
        events += [Event(p.devices[s], "data", r, s, 0.0, p.fetch_s) for s in sample_stages(stages)]
    link_free = {(kind, c): 0.0 for kind in "FB" for c in range(stages - 1)}
    arrive: dict[tuple[str, int, int], float] = {}
    fwd_done: dict[tuple[int, int], float] = {}
    running: dict[int, list] = {}  # stage -> [kind, micro-batch, work left (1 -> 0), start]
    now = finish = p.fetch_s

    def ready(s: int) -> bool:
        kind, i = orders[s][pos[s]]
        if kind == "F":
            when = 0.0 if s == 0 else arrive.get(("F", s, i))
        else:
            when = fwd_done.get((s, i)) if s == stages - 1 else arrive.get(("B", s, i))
        return when is not None and when <= now

    def length(s: int) -> float:
        busy = any(p.nodes[o] == p.nodes[s] for o in running if o != s)
        if running[s][0] == "F":
            return p.fwd_s[s] if busy else p.alone_fwd_s[s]
        return p.bwd_s[s] if busy else p.alone_bwd_s[s]

    while True:
        for s in range(stages):
            if s not in running and pos[s] < len(orders[s]) and ready(s):
                running[s] = [*orders[s][pos[s]], 1.0, now]
        later = [t for t in arrive.values() if t > now]
        if not running:
            if not later:
                break
            now = min(later)
            continue
        seconds = {s: length(s) for s in running}
        step = min([task[2] * seconds[s] for s, task in running.items()] + [t - now for t in later])
        now += step
        for s in sorted(running):
            task = running[s]
            task[2] = task[2] - step / seconds[s] if seconds[s] else 0.0
            if task[2] > _DONE:
                continue
            kind, i, _, start = running.pop(s)
            pos[s] += 1
            finish = now
            if keep:
                events.append(Event(p.devices[s], f"{kind}{i}", r, s, start, now))
            if kind == "F":
                fwd_done[(s, i)] = now
            _send(p, r, s, kind, i, now, link_free, arrive, events if keep else None)
    if any(pos[s] < len(orders[s]) for s in range(stages)):
        raise RuntimeError("pipeline schedule deadlocked")  # a bug in _order, never input
    return finish, events


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
