"""The iteration simulator: hand-worked schedules, the GPipe closed form, event invariants."""

import itertools
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainplay.plan.simulate import (
    Event,
    IterationWork,
    PipelineWork,
    Timeline,
    gpipe_pipeline_s,
    iteration_s,
    simulate,
    to_chrome_trace,
)

EPS = 1e-9


def one_replica(fwd, bwd, send, microbatches, schedule, allreduce=None, optimizer=None):
    stages = len(fwd)
    work = PipelineWork(tuple(f"d{s}" for s in range(stages)), fwd, bwd, send)
    return IterationWork(
        (work,),
        microbatches,
        schedule,
        allreduce or (0.0,) * stages,
        (optimizer or (0.0,) * stages,),
    )


def spans(timeline: Timeline, lane: str) -> dict[str, tuple[float, float]]:
    return {e.name: (e.start_s, e.end_s) for e in timeline.events if e.lane == lane}


def torch_order(schedule: str, stages: int, stage: int, m: int) -> list[str]:
    """The order ``torch.distributed.pipelining`` runs a stage's work, written the way torch does:
    ScheduleGPipe runs every forward, then every backward. Schedule1F1B runs
    ``min(M, S - s)`` warm-up forwards, then "1B1F" (one backward, then one forward while forwards
    remain), then the remaining backwards."""
    if schedule == "gpipe":
        return [f"F{i}" for i in range(m)] + [f"B{i}" for i in range(m)]
    warmup = min(m, stages - stage)
    order = [f"F{i}" for i in range(warmup)]
    f, b = warmup, 0
    while True:
        order.append(f"B{b}")
        b += 1
        if f == m:
            break
        order.append(f"F{f}")
        f += 1
    order += [f"B{i}" for i in range(b, m)]
    return order


# Hand-worked schedules. Times are integers so every sum below is exact.


def test_two_stages_gpipe_hand_worked():
    # f = b = (1, 3), no link cost, M = 2.
    #   d0: F0 [0,1] F1 [1,2]
    #   d1: F0 [1,4] F1 [4,7] B0 [7,10] B1 [10,13]
    #   d0: B0 [10,11] (gradient of 0 arrives at 10), B1 [13,14]
    # Closed form: forward 1+3 + (2-1)·3 = 7, backward the same, 14.
    work = one_replica((1.0, 3.0), (1.0, 3.0), (0.0,), 2, "gpipe")
    tl = simulate(work)
    assert tl.iteration_s == 14.0
    assert iteration_s(work) == 14.0
    assert spans(tl, "d1") == {"F0": (1, 4), "F1": (4, 7), "B0": (7, 10), "B1": (10, 13)}
    assert spans(tl, "d0") == {"F0": (0, 1), "F1": (1, 2), "B0": (10, 11), "B1": (13, 14)}


def test_two_stages_1f1b_hand_worked():
    # Same pipeline, 1F1B. torch's order: stage 0 warms up with min(M, S-s) = 2 forwards, then
    # backwards: F0 F1 B0 B1. Stage 1 (last) warms up with 1 forward, then B0, F1, B1.
    #   d0: F0 [0,1] F1 [1,2]
    #   d1: F0 [1,4] B0 [4,7] F1 [7,10] (F1 arrived at 2 but d1 is busy until 7) B1 [10,13]
    #   d0: B0 [7,8] (gradient arrives 7), B1 [13,14]
    # 14, the same as GPipe: the slow last stage runs 2·(3+3) = 12 back to back either way,
    # after 1 s of stage 0 in front and before 1 s behind.
    work = one_replica((1.0, 3.0), (1.0, 3.0), (0.0,), 2, "1f1b")
    tl = simulate(work)
    assert tl.iteration_s == 14.0
    assert iteration_s(work) == 14.0
    assert spans(tl, "d1") == {"F0": (1, 4), "B0": (4, 7), "F1": (7, 10), "B1": (10, 13)}
    assert spans(tl, "d0") == {"F0": (0, 1), "F1": (1, 2), "B0": (7, 8), "B1": (13, 14)}


def test_three_stages_1f1b_beats_gpipe():
    # f = (1,1,1), b = (1,5,1), M = 2, no link cost.
    # GPipe: forward 3 + 1·1 = 4; backward 7 + 1·5 = 12; 16.
    # 1F1B orders (warm-up min(2, 3-s)): d0 F0 F1 B0 B1; d1 F0 F1 B0 B1; d2 F0 B0 F1 B1.
    #   d0: F0 [0,1] F1 [1,2]
    #   d1: F0 [1,2] F1 [2,3]
    #   d2: F0 [2,3] B0 [3,4] F1 [4,5] B1 [5,6]
    #   d1: B0 [4,9] B1 [9,14]     (the last stage's B1 is done at 6, long before d1 is free)
    #   d0: B0 [9,10] B1 [14,15]
    # 15: the last stage's second forward and backward hide under the slow middle backward,
    # where GPipe makes d1 wait for both forwards of d2 first.
    gpipe = one_replica((1.0, 1.0, 1.0), (1.0, 5.0, 1.0), (0.0, 0.0), 2, "gpipe")
    ofob = one_replica((1.0, 1.0, 1.0), (1.0, 5.0, 1.0), (0.0, 0.0), 2, "1f1b")
    assert simulate(gpipe).iteration_s == iteration_s(gpipe) == 16.0
    tl = simulate(ofob)
    assert tl.iteration_s == iteration_s(ofob) == 15.0
    assert spans(tl, "d2") == {"F0": (2, 3), "B0": (3, 4), "F1": (4, 5), "B1": (5, 6)}
    assert spans(tl, "d1") == {"F0": (1, 2), "F1": (2, 3), "B0": (4, 9), "B1": (9, 14)}
    assert spans(tl, "d0") == {"F0": (0, 1), "F1": (1, 2), "B0": (9, 10), "B1": (14, 15)}


def test_transfer_overlaps_compute():
    # f = b = (1,1), sending one micro-batch across the cut takes 1 s, M = 2, GPipe.
    #   d0: F0 [0,1] F1 [1,2]        link fwd: F0 [1,2] F1 [2,3]
    #   d1: F0 [2,3] F1 [3,4] B0 [4,5] B1 [5,6]
    #   link bwd: B0 [5,6] B1 [6,7]  d0: B0 [6,7] B1 [7,8]
    # 8 = closed form (3 + 1·1) + (3 + 1·1). Were a send to hold its device, d0 would send F0
    # during [1,2] and start F1 only at 2, and the iteration would take longer.
    work = one_replica((1.0, 1.0), (1.0, 1.0), (1.0,), 2, "gpipe")
    tl = simulate(work)
    assert tl.iteration_s == iteration_s(work) == 8.0
    fwd_link = spans(tl, "link 0:0->1 fwd")
    bwd_link = spans(tl, "link 0:0->1 bwd")
    assert fwd_link == {"send F0": (1, 2), "send F1": (2, 3)}
    assert bwd_link == {"send B0": (5, 6), "send B1": (6, 7)}
    assert spans(tl, "d0")["F1"] == (1, 2)  # computes while F0 is on the wire
    assert spans(tl, "d0")["B0"] == (6, 7)
    assert spans(tl, "d1")["F0"] == (2, 3)


def test_slow_link_is_the_bottleneck():
    # f = b = (1,1), send 3 s, M = 3. The link is the slowest "machine" of the flow shop:
    # forward 1+3+1 + 2·3 = 11, backward the same, 22. The link queues: sends at [1,4] [4,7] [7,10].
    work = one_replica((1.0, 1.0), (1.0, 1.0), (3.0,), 3, "gpipe")
    tl = simulate(work)
    assert tl.iteration_s == iteration_s(work) == 22.0
    assert spans(tl, "link 0:0->1 fwd") == {
        "send F0": (1, 4),
        "send F1": (4, 7),
        "send F2": (7, 10),
    }


def test_replicas_and_tail_hand_worked():
    # Two replicas of 2 stages each, GPipe, M = 1.
    # Replica 0: f = (1,1), b = (2,2): flush 1+1 + 2+2 = 6. Replica 1: f = (2,2), b = (2,2): 8.
    # Tail per stage: stage 0 all-reduce 2 + max(opt 0.5, 1) = 3; stage 1: 1 + max(3, 0.5) = 4.
    # Iteration: all-reduce starts when the slower replica flushes, 8 + 4 = 12.
    r0 = PipelineWork(("a0", "a1"), (1.0, 1.0), (2.0, 2.0), (0.0,))
    r1 = PipelineWork(("b0", "b1"), (2.0, 2.0), (2.0, 2.0), (0.0,))
    work = IterationWork((r0, r1), 1, "gpipe", (2.0, 1.0), ((0.5, 3.0), (1.0, 0.5)))
    tl = simulate(work)
    assert tl.pipeline_s == (6.0, 8.0)
    assert tl.iteration_s == iteration_s(work) == 12.0
    # a0 waits for b's flush (8), all-reduces [8,10], then steps [10,10.5].
    assert spans(tl, "a0")["allreduce"] == (8.0, 10.0)
    assert spans(tl, "a0")["optimizer"] == (10.0, 10.5)
    assert spans(tl, "a1")["optimizer"] == (9.0, 12.0)


def test_one_stage_one_microbatch():
    # No pipeline at all: forward then backward then optimizer, 2 + 3 + 0.5.
    for schedule in ("gpipe", "1f1b"):
        work = one_replica((2.0,), (3.0,), (), 1, schedule, optimizer=(0.5,))
        assert simulate(work).iteration_s == iteration_s(work) == 5.5


def test_more_stages_than_microbatches_1f1b():
    # S = 4, M = 1, all times 1: a single micro-batch goes down and back, 4 + 4 = 8,
    # whichever schedule (warm-up on the first stages is capped at M).
    for schedule in ("gpipe", "1f1b"):
        work = one_replica((1.0,) * 4, (1.0,) * 4, (0.0,) * 3, 1, schedule)
        assert simulate(work).iteration_s == 8.0


# Properties over random pipelines.

positive = st.floats(min_value=0.01, max_value=10.0, allow_nan=False, allow_infinity=False)
link = st.one_of(st.just(0.0), positive)


@st.composite
def iterations(draw, schedule=None):
    stages = draw(st.integers(1, 6))
    replicas = draw(st.integers(1, 3))
    m = draw(st.integers(1, 12))
    sched = schedule or draw(st.sampled_from(["gpipe", "1f1b"]))
    vec = lambda strat, n: tuple(draw(st.lists(strat, min_size=n, max_size=n)))  # noqa: E731
    pipes = tuple(
        PipelineWork(
            tuple(f"r{r}s{s}" for s in range(stages)),
            vec(positive, stages),
            vec(positive, stages),
            vec(link, stages - 1),
        )
        for r in range(replicas)
    )
    tails = st.one_of(st.just(0.0), positive)
    allreduce = vec(tails, stages) if replicas > 1 else (0.0,) * stages
    optimizer = tuple(vec(tails, stages) for _ in range(replicas))
    return IterationWork(pipes, m, sched, allreduce, optimizer)


def closed_form(work: IterationWork) -> float:
    """The brief's closed form, written out again rather than calling the library's."""
    m1 = work.microbatches - 1
    flush = []
    for p in work.replicas:
        f = list(p.fwd_s) + list(p.send_s)
        b = list(p.bwd_s) + list(p.send_s)
        flush.append(sum(f) + m1 * max(f) + sum(b) + m1 * max(b))
    tail = max(
        work.allreduce_s[s] + max(opt[s] for opt in work.optimizer_s)
        for s in range(len(work.allreduce_s))
    )
    return max(flush) + tail


@settings(max_examples=80, deadline=None)
@given(iterations(schedule="gpipe"))
def test_gpipe_simulation_matches_closed_form(work):
    simulated = simulate(work).iteration_s
    expected = closed_form(work)
    assert math.isclose(simulated, expected, rel_tol=1e-9)
    assert math.isclose(iteration_s(work), expected, rel_tol=1e-9)
    for p, flush in zip(work.replicas, simulate(work).pipeline_s, strict=True):
        assert math.isclose(gpipe_pipeline_s(p, work.microbatches), flush, rel_tol=1e-9)


def check_events(work: IterationWork, tl: Timeline) -> None:
    m = work.microbatches
    last_end = 0.0
    for r, p in enumerate(work.replicas):
        stages = len(p.devices)
        fwd: dict[tuple[int, int], Event] = {}
        bwd: dict[tuple[int, int], Event] = {}
        flush = 0.0
        for s, device in enumerate(p.devices):
            mine = sorted((e for e in tl.events if e.lane == device), key=lambda e: e.start_s)
            assert all(e.replica == r and e.stage == s for e in mine)
            # One thing at a time on a device.
            for a, b in itertools.pairwise(mine):
                assert a.end_s <= b.start_s + EPS, (device, a, b)
            compute = [e for e in mine if e.name[0] in "FB"]
            assert [e.name for e in compute] == torch_order(work.schedule, stages, s, m)
            for e in compute:
                i = int(e.name[1:])
                length = p.fwd_s[s] if e.name[0] == "F" else p.bwd_s[s]
                assert math.isclose(e.end_s - e.start_s, length, rel_tol=1e-9, abs_tol=1e-9)
                (fwd if e.name[0] == "F" else bwd)[(s, i)] = e
            flush = max(flush, max(e.end_s for e in compute))
        assert math.isclose(tl.pipeline_s[r], flush, rel_tol=1e-12)
        for s in range(stages):
            for i in range(m):
                # A backward needs its own forward, and the gradient from the next stage over
                # the link.
                assert bwd[(s, i)].start_s >= fwd[(s, i)].end_s - EPS
                if s < stages - 1:
                    arrive = bwd[(s + 1, i)].end_s + p.send_s[s]
                    assert bwd[(s, i)].start_s >= arrive - EPS
                if s > 0:
                    arrive = fwd[(s - 1, i)].end_s + p.send_s[s - 1]
                    assert fwd[(s, i)].start_s >= arrive - EPS
        for cut in range(stages - 1):
            for direction in ("fwd", "bwd"):
                sends = sorted(
                    (e for e in tl.events if e.lane == f"link {r}:{cut}->{cut + 1} {direction}"),
                    key=lambda e: e.start_s,
                )
                assert len(sends) == (m if p.send_s[cut] else 0)
                for a, b in itertools.pairwise(sends):
                    assert a.end_s <= b.start_s + EPS
        last_end = max(last_end, flush)
    ends = [e.end_s for e in tl.events]
    assert math.isclose(tl.iteration_s, max([last_end, *ends]), rel_tol=1e-12)


@settings(max_examples=60, deadline=None)
@given(iterations())
def test_events_respect_devices_and_dependencies(work):
    tl = simulate(work)
    check_events(work, tl)
    assert math.isclose(simulate(work, keep_events=False).iteration_s, tl.iteration_s)
    assert simulate(work, keep_events=False).events == ()
    assert math.isclose(iteration_s(work), tl.iteration_s, rel_tol=1e-9)


@settings(max_examples=40, deadline=None)
@given(iterations())
def test_no_schedule_beats_the_busiest_device(work):
    # Every device must do M forwards and M backwards and its tail: a lower bound that an
    # overlapping or work-dropping simulator would break.
    tl = simulate(work)
    for r, p in enumerate(work.replicas):
        for s in range(len(p.devices)):
            busy = work.microbatches * (p.fwd_s[s] + p.bwd_s[s])
            tail = work.allreduce_s[s] + work.optimizer_s[r][s]
            assert tl.iteration_s >= busy + tail - EPS


# Chrome trace.


@settings(max_examples=30, deadline=None)
@given(iterations())
def test_chrome_trace(work):
    tl = simulate(work)
    trace = json.loads(json.dumps(to_chrome_trace(tl, title="t")))
    assert trace["otherData"]["iteration_s"] == tl.iteration_s
    events = trace["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    lanes = {(e.replica, e.lane) for e in tl.events}
    assert sorted(names.values()) == sorted(lane for _, lane in lanes)
    assert {e["pid"] for e in events if e["name"] == "process_name"} == set(
        range(len(work.replicas))
    )
    spans_ = [e for e in events if e["ph"] == "X"]
    assert len(spans_) == len(tl.events)
    for x, e in zip(spans_, tl.events, strict=True):
        assert names[(x["pid"], x["tid"])] == e.lane
        assert x["name"] == e.name
        assert math.isclose(x["ts"], e.start_s * 1e6, rel_tol=1e-12)
        assert math.isclose(x["dur"], (e.end_s - e.start_s) * 1e6, rel_tol=1e-9, abs_tol=1e-6)
    # Per device, the trace's durations add up to the work it was given.
    for r, p in enumerate(work.replicas):
        for s, device in enumerate(p.devices):
            busy_us = sum(
                x["dur"] for x in spans_ if x["pid"] == r and names[(r, x["tid"])] == device
            )
            busy_s = (
                work.microbatches * (p.fwd_s[s] + p.bwd_s[s])
                + work.allreduce_s[s]
                + work.optimizer_s[r][s]
            )
            assert math.isclose(busy_us, busy_s * 1e6, rel_tol=1e-9)


def test_chrome_trace_hand_worked():
    work = one_replica((1.0, 3.0), (1.0, 3.0), (0.5,), 1, "gpipe", optimizer=(0.25, 0.0))
    trace = to_chrome_trace(simulate(work))
    x = {e["name"] + "@" + str(e["tid"]): e for e in trace["traceEvents"] if e["ph"] == "X"}
    tids = {e["args"]["name"]: e["tid"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert set(tids) == {"d0", "d1", "link 0:0->1 fwd", "link 0:0->1 bwd"}
    # d1's forward starts after 1 s of d0 and 0.5 s on the wire: 1.5 s = 1.5e6 µs, lasting 3 s.
    f1 = x[f"F0@{tids['d1']}"]
    assert (f1["ts"], f1["dur"], f1["cat"]) == (1.5e6, 3e6, "forward")
    # Flush: 1 + 0.5 + 3 + 3 + 0.5 + 1 = 9; then d0's optimizer 0.25 s.
    opt = x[f"optimizer@{tids['d0']}"]
    assert (opt["ts"], opt["dur"], opt["cat"]) == (9e6, 0.25e6, "optimizer")
    assert x[f"send F0@{tids['link 0:0->1 fwd']}"]["cat"] == "send"


# Invalid inputs.


@pytest.mark.parametrize(
    ("fwd", "bwd", "send"),
    [
        ((1.0, 1.0), (1.0,), (0.0,)),  # one backward short
        ((1.0,), (1.0, 1.0), (0.0,)),  # one forward short
        ((1.0, 1.0), (1.0, 1.0), ()),  # a cut without a link
        ((1.0, 1.0), (1.0, 1.0), (0.0, 0.0)),  # a link too many
    ],
)
def test_pipeline_lengths_checked(fwd, bwd, send):
    with pytest.raises(ValueError, match="per stage"):
        PipelineWork(("a", "b"), fwd, bwd, send)


def test_unknown_schedule_and_no_microbatches():
    with pytest.raises(ValueError, match="schedule must be one of"):
        one_replica((1.0,), (1.0,), (), 1, "interleaved")
    with pytest.raises(ValueError, match="microbatches must be at least 1, got 0"):
        one_replica((1.0,), (1.0,), (), 0, "gpipe")


def test_allreduce_length_checked():
    pipe = PipelineWork(("a", "b", "c"), (1.0,) * 3, (1.0,) * 3, (0.0, 0.0))
    with pytest.raises(ValueError):
        IterationWork((pipe,), 2, "gpipe", (5.0,), ((0.0,) * 3,))


def test_optimizer_shape_checked():
    pipes = tuple(
        PipelineWork((f"{r}a", f"{r}b"), (1.0,) * 2, (1.0,) * 2, (0.0,)) for r in range(2)
    )
    with pytest.raises(ValueError):
        IterationWork(pipes, 2, "gpipe", (0.0, 0.0), ((0.0, 0.0),))
