"""Per-stage memory accounting, every number derived by hand."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainplay.plan.memory import (
    GRAD_FACTOR,
    STATE_FACTOR,
    WORKSPACE_FRACTION,
    StageMemory,
    in_flight,
    stage_memory,
    state_bytes,
    usable_bytes,
)
from trainplay.plan.simulate import IterationWork, PipelineWork, simulate

MILLION = 1_000_000


def memory(params: int, bytes_per_param: int, optimizer: str, dtype: str, **kw) -> StageMemory:
    args = {"saved_bytes": 0.0, "input_bytes": 0.0, "held": 1, "recompute": False} | kw
    return stage_memory(
        param_bytes=params * bytes_per_param, optimizer=optimizer, dtype=dtype, **args
    )


def test_fp32_sgd_keeps_one_momentum_buffer():
    # 1M fp32 parameters = 4 MB; gradients 4 MB; momentum 4 MB (1x).
    m = memory(MILLION, 4, "sgd", "fp32")
    assert (m.params_bytes, m.grads_bytes, m.optimizer_bytes) == (4e6, 4e6, 4e6)
    assert m.total_bytes == 12e6


def test_fp32_adam_keeps_two_moments():
    # Adam's exp_avg and exp_avg_sq, 4 bytes each per parameter: 8 MB for 1M parameters (2x).
    m = memory(MILLION, 4, "adam", "fp32")
    assert m.optimizer_bytes == 8e6
    assert m.total_bytes == 4e6 + 4e6 + 8e6


def test_mixed_precision_adam_is_eighteen_bytes_per_parameter():
    # autocast over fp32 master weights, per parameter: the bf16 copy autocast keeps for the step
    # 2, fp32 gradients 4, fp32 master 4 + Adam's moments 8 (ZeRO's 12 bytes of optimizer state,
    # SC 2020, 3.1) = 18 bytes; in units of the 2-byte parameter 1x, 2x, 6x.
    m = memory(MILLION, 2, "adam", "bf16")
    assert (m.params_bytes, m.grads_bytes, m.optimizer_bytes) == (2e6, 4e6, 12e6)
    assert m.total_bytes == 18 * MILLION
    assert memory(MILLION, 2, "adam", "fp16").total_bytes == 18 * MILLION
    assert state_bytes(2 * MILLION, "adam", "bf16") == 18 * MILLION
    assert state_bytes(4 * MILLION, "adam", "fp32") == 16 * MILLION


def test_half_precision_sgd_keeps_master_and_momentum():
    # fp32 master copy 4 + fp32 momentum 4 = 8 bytes per 2-byte parameter, 4x.
    assert memory(MILLION, 2, "sgd", "bf16").optimizer_bytes == 8e6
    assert memory(MILLION, 2, "sgd", "fp16").total_bytes == 14 * MILLION
    assert set(STATE_FACTOR) == {(o, d) for o in ("sgd", "adam") for d in ("fp32", "bf16", "fp16")}
    assert GRAD_FACTOR == {"fp32": 1.0, "bf16": 2.0, "fp16": 2.0}


def test_one_more_gradient_of_the_largest_parameter():
    # micro-batches after the first compute a fresh gradient before adding it: fp32 4 MB for a
    # 1M-parameter weight; with mixed precision the gradient is fp32, 2x the 2-byte parameter
    m = memory(MILLION, 4, "sgd", "fp32", largest_param_bytes=4e6)
    assert m.scratch_bytes == 4e6 and m.total_bytes == 16e6
    assert memory(MILLION, 2, "sgd", "bf16", largest_param_bytes=2e6).scratch_bytes == 4e6


def test_activations_without_recomputation():
    # 3 micro-batches in flight, each saving 1 MB and holding its 0.2 MB input: 3.6 MB.
    m = memory(0, 4, "sgd", "fp32", saved_bytes=1e6, input_bytes=2e5, held=3)
    assert m.activations_bytes == pytest.approx(3.6e6, rel=1e-12)
    assert m.total_bytes == pytest.approx(3.6e6, rel=1e-12)


def test_activations_with_recomputation():
    # 4 in flight keep only their 0.2 MB inputs (0.8 MB); one micro-batch's 1 MB is rebuilt at a
    # time during its backward: 1.8 MB, against 4 × 1.2 = 4.8 MB without recomputation.
    kw = {"saved_bytes": 1e6, "input_bytes": 2e5, "held": 4}
    with_rc = memory(0, 4, "sgd", "fp32", recompute=True, **kw)
    without = memory(0, 4, "sgd", "fp32", recompute=False, **kw)
    assert with_rc.activations_bytes == pytest.approx(1.8e6, rel=1e-12)
    assert without.activations_bytes == pytest.approx(4.8e6, rel=1e-12)
    # With one micro-batch in flight recomputation saves nothing (it still holds its input).
    one = memory(0, 4, "sgd", "fp32", saved_bytes=1e6, input_bytes=2e5, held=1, recompute=True)
    assert one.activations_bytes == pytest.approx(1.2e6, rel=1e-12)


def test_whole_stage_hand_worked():
    # 10M parameters, mixed-precision Adam (180 MB), GPipe with 8 micro-batches of 5 MB saved +
    # 1 MB input: 180 MB + 48 MB = 228 MB.
    m = stage_memory(
        param_bytes=2 * 10 * MILLION,
        saved_bytes=5e6,
        input_bytes=1e6,
        held=in_flight("gpipe", 8, 4, 0),
        recompute=False,
        optimizer="adam",
        dtype="bf16",
    )
    assert m.total_bytes == pytest.approx(228e6, rel=1e-12)


def test_in_flight_gpipe_holds_every_microbatch():
    assert [in_flight("gpipe", 8, 4, s) for s in range(4)] == [8, 8, 8, 8]
    assert in_flight("gpipe", 1, 3, 2) == 1


def test_in_flight_1f1b_first_stage_holds_most():
    # S = 4: stage s holds S - s micro-batches, capped at M.
    assert [in_flight("1f1b", 8, 4, s) for s in range(4)] == [4, 3, 2, 1]
    assert [in_flight("1f1b", 2, 4, s) for s in range(4)] == [2, 2, 2, 1]
    assert in_flight("1f1b", 1, 1, 0) == 1


def peak_in_flight(order: list[str]) -> int:
    """Micro-batches forwarded and not yet backwarded, at the worst point of a device's order."""
    held = peak = 0
    for name in order:
        held += 1 if name[0] == "F" else -1
        peak = max(peak, held)
    return peak


@settings(max_examples=40, deadline=None)
@given(
    stages=st.integers(1, 6),
    microbatches=st.integers(1, 12),
    schedule=st.sampled_from(["gpipe", "1f1b"]),
    data=st.data(),
)
def test_in_flight_matches_the_simulated_schedule(stages, microbatches, schedule, data):
    # The memory model's count is the peak the simulator's schedule actually reaches.
    times = st.lists(st.floats(0.01, 10.0), min_size=stages, max_size=stages)
    pipe = PipelineWork(
        tuple(f"d{s}" for s in range(stages)),
        tuple(data.draw(times)),
        tuple(data.draw(times)),
        (0.0,) * (stages - 1),
    )
    work = IterationWork((pipe,), microbatches, schedule, (0.0,) * stages, ((0.0,) * stages,))
    events = simulate(work).events
    for s in range(stages):
        order = [e.name for e in sorted(events, key=lambda e: e.start_s) if e.lane == f"d{s}"]
        assert peak_in_flight(order) == in_flight(schedule, microbatches, stages, s)


def test_usable_bytes_keeps_ten_percent():
    assert WORKSPACE_FRACTION == 0.10
    assert usable_bytes(80e9) == pytest.approx(72e9, rel=1e-12)
    assert usable_bytes(24 * 2**30) == pytest.approx(0.9 * 24 * 2**30, rel=1e-12)
    assert usable_bytes(0) == 0
