"""Pipeline stages that share a node's cores run at their alone rate while their siblings wait
(``plan.simulate``'s fluid simulation): hand-worked schedules, the event simulator as the limit
where alone and busy rates agree, and the planner's use of it."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainplay.plan.costs import CostModel, devices_of, running
from trainplay.plan.layout import Layout, pipeline_work, work_of
from trainplay.plan.simulate import (
    IterationWork,
    PipelineWork,
    gpipe_pipeline_s,
    iteration_s,
    pipeline_s,
    simulate,
)

from .test_alone import ALONE_FLOPS, BUSY_FLOPS, _blocks, _cached

EPS = 1e-9


def _two(fwd, bwd, alone_fwd, alone_bwd, send=0.0, nodes=("n", "n")):
    return PipelineWork(
        ("a", "b"), fwd, bwd, (send,), nodes=nodes, alone_fwd_s=alone_fwd, alone_bwd_s=alone_bwd
    )


def _events(p: PipelineWork, schedule: str, m: int) -> list[tuple]:
    work = IterationWork((p,), m, schedule, (0.0,) * len(p.devices), ((0.0,) * len(p.devices),))
    timeline = simulate(work)
    return sorted((e.lane, e.name, round(e.start_s, 9), round(e.end_s, 9)) for e in timeline.events)


def test_stages_that_take_turns_run_at_their_alone_rate():
    """GPipe, two stages, one micro-batch: F on a, F on b, B on b, B on a, never two at once."""
    p = _two((2.0, 2.0), (4.0, 4.0), (1.0, 1.0), (2.0, 2.0))
    assert pipeline_s(p, "gpipe", 1) == pytest.approx(1 + 1 + 2 + 2)
    assert gpipe_pipeline_s(p, 1) == pytest.approx(2 + 2 + 4 + 4)  # the busy closed form


def test_overlapping_stages_slow_each_other_down():
    """Two micro-batches: a's F1 and b's F0 overlap (busy: 2 each), the rest runs alone.
    Forward: F0 on a [0, 1], then both busy [1, 3], F1 on b [3, 4]; backward likewise from 4:
    B0 on b [4, 5], both busy [5, 7], B1 on a [7, 8]."""
    p = _two((2.0, 2.0), (2.0, 2.0), (1.0, 1.0), (1.0, 1.0))
    assert pipeline_s(p, "gpipe", 2) == pytest.approx(8.0)
    spans = {(lane, name): (s, e) for lane, name, s, e in _events(p, "gpipe", 2)}
    assert spans[("a", "F1")] == (1.0, 3.0) and spans[("b", "F0")] == (1.0, 3.0)
    assert spans[("a", "B1")] == (7.0, 8.0)


def test_a_task_speeds_up_when_its_sibling_finishes():
    """a's F1 (busy 4, alone 1) starts beside b's F0 (busy 2): after 2 s it has done half its
    work, then runs alone for the other half, 0.5 s."""
    p = _two((4.0, 2.0), (1.0, 1.0), (1.0, 1.0), (1.0, 1.0))
    spans = {(lane, name): (s, e) for lane, name, s, e in _events(p, "gpipe", 2)}
    assert spans[("a", "F0")] == (0.0, 1.0)
    assert spans[("b", "F0")] == (1.0, 3.0)
    assert spans[("a", "F1")] == pytest.approx((1.0, 3.5))


def test_stages_on_different_nodes_keep_their_busy_prices():
    p = _two((2.0, 2.0), (2.0, 2.0), (1.0, 1.0), (1.0, 1.0), nodes=("n0", "n1"))
    assert not p.shares_cores
    assert pipeline_s(p, "gpipe", 2) == gpipe_pipeline_s(p, 2)


def test_a_pipeline_needs_alone_prices_for_every_stage_or_none():
    with pytest.raises(ValueError, match="one entry per stage"):
        PipelineWork(("a", "b"), (1.0, 1.0), (1.0, 1.0), (0.0,), alone_fwd_s=(1.0,))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 4),
    st.integers(1, 5),
    st.sampled_from(["gpipe", "1f1b"]),
    st.lists(st.floats(0.05, 3.0), min_size=12, max_size=12),
)
def test_with_alone_rates_equal_to_busy_ones_it_is_the_event_simulator(stages, m, schedule, xs):
    fwd, bwd = tuple(xs[:stages]), tuple(xs[4 : 4 + stages])
    send = tuple(xs[8 : 8 + stages - 1])
    plain = PipelineWork(tuple(f"d{s}" for s in range(stages)), fwd, bwd, send, 0.3)
    shared = PipelineWork(
        plain.devices, fwd, bwd, send, 0.3, nodes=("n",) * stages,
        alone_fwd_s=tuple(f * (1 - EPS) for f in fwd), alone_bwd_s=bwd,
    )  # fmt: skip
    assert shared.shares_cores  # alone a hair faster: the fluid simulation runs
    expected = pipeline_s(plain, schedule, m)
    assert pipeline_s(shared, schedule, m) == pytest.approx(expected, rel=1e-6)
    names = [e[:2] for e in _events(plain, schedule, m)]
    assert [e[:2] for e in _events(shared, schedule, m)] == names


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 4),
    st.integers(1, 6),
    st.sampled_from(["gpipe", "1f1b"]),
    st.lists(st.floats(0.05, 3.0), min_size=8, max_size=8),
    st.floats(0.2, 1.0),
)
def test_a_shared_pipeline_lies_between_all_alone_and_all_busy(stages, m, schedule, xs, ratio):
    fwd, bwd = tuple(xs[:stages]), tuple(xs[4 : 4 + stages])
    send = (0.0,) * (stages - 1)
    devices = tuple(f"d{s}" for s in range(stages))
    alone_f, alone_b = tuple(f * ratio for f in fwd), tuple(b * ratio for b in bwd)
    shared = PipelineWork(
        devices, fwd, bwd, send, nodes=("n",) * stages, alone_fwd_s=alone_f, alone_bwd_s=alone_b
    )
    busy = pipeline_s(PipelineWork(devices, fwd, bwd, send), schedule, m)
    fast = pipeline_s(PipelineWork(devices, alone_f, alone_b, send), schedule, m)
    assert fast * (1 - EPS) <= pipeline_s(shared, schedule, m) <= busy * (1 + EPS)


def test_devices_of_a_node_that_several_replicas_use_lose_their_alone_price(tmp_path, monkeypatch):
    d0, d1 = devices_of(_cached(tmp_path, monkeypatch), "fp32")
    one_replica = running(((d0, d1),))
    assert [d.alone is not None for d in one_replica[0]] == [True, True]
    two_replicas = running(((d0,), (d1,)))
    assert [row[0].alone for row in two_replicas] == [None, None]
    assert running(two_replicas) == two_replicas


def test_the_planner_prices_a_two_stage_pipeline_on_one_cpu_with_its_alone_rates(
    tmp_path, monkeypatch
):
    cluster = _cached(tmp_path, monkeypatch)
    d0, d1 = devices_of(cluster, "fp32")
    cm = CostModel(_blocks(), cluster, "sgd")
    work, prices = pipeline_work(cm, (d0, d1), (0, 2, 4), 8, microbatches=1, schedule="gpipe")
    assert work.nodes == (d0.node, d1.node) and work.shares_cores
    # the blocks' FLOPs at the alone rate are a third of the busy one's (3e11 against 1e11)
    flops = 8 * 3e9 * 2  # one stage's forward and backward
    assert work.alone_fwd_s[0] + work.alone_bwd_s[0] == pytest.approx(flops / ALONE_FLOPS, rel=0.1)
    assert prices[0].fwd_s + prices[0].bwd_s == pytest.approx(flops / BUSY_FLOPS, rel=0.1)
    one = Layout(((d0, d1),), (0, 2, 4), 1, (8,), "gpipe", ((False, False),))
    many = Layout(((d0, d1),), (0, 2, 4), 8, (8,), "gpipe", ((False, False),))
    # one micro-batch: the stages take turns, every task alone; eight: mostly side by side
    t_one, t_many = iteration_s(work_of(cm, one)), iteration_s(work_of(cm, many))
    assert t_one < 2 * flops / BUSY_FLOPS / 2
    assert t_one == pytest.approx(2 * flops / ALONE_FLOPS, rel=0.15)
    assert t_many > t_one
