"""Mixed precision (autocast, fp16 loss scaling) and the per-rank peak memory meter."""

from __future__ import annotations

import mmap

import pytest
import torch
from torch import nn

from trainplay.runtime import precision as amp
from trainplay.runtime.memory import MemoryReport, PeakMeter, over_capacity
from trainplay.runtime.precision import Precision

CPU = torch.device("cpu")


def stepped(p: Precision, grad: float) -> tuple[bool, float]:
    w = nn.Parameter(torch.ones(2))
    optimizer = torch.optim.SGD([w], lr=1.0)
    w.grad = torch.full((2,), grad * p.scale)  # what a scaled loss would give
    ok = p.step(optimizer, [w], None)
    return ok, float(w.detach()[0])


def test_fp32_and_bf16_do_not_scale():
    for dtype in ("fp32", "bf16"):
        p = Precision(dtype, CPU)
        assert p.scale == 1.0 and p.state() == {}
        assert stepped(p, 0.5) == (True, 0.5)


def test_autocast_runs_matmuls_in_half_precision_and_keeps_fp32_weights():
    layer = nn.Linear(4, 4)
    for dtype, want in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)):
        with Precision(dtype, CPU).autocast():
            out = layer(torch.randn(2, 4))
            loss = nn.functional.cross_entropy(out, torch.tensor([0, 1]))
        assert out.dtype == want and loss.dtype == torch.float32
        assert layer.weight.dtype == torch.float32


def test_fp16_unscales_skips_non_finite_steps_and_backs_off():
    p = Precision("fp16", CPU)
    assert p.scale == 2.0**16
    ok, value = stepped(p, 0.25)
    assert ok and value == pytest.approx(0.75)  # the gradient was unscaled before the step
    ok, value = stepped(p, float("inf"))
    assert not ok and value == 1.0 and p.scale == 2.0**15  # skipped, scale halved
    assert int(p.state()["amp.growth"]) == 0


def test_fp16_grows_after_clean_steps(monkeypatch):
    monkeypatch.setattr(amp, "GROWTH_INTERVAL", 3)
    p = Precision("fp16", CPU)
    for _ in range(3):
        assert stepped(p, 0.1)[0]
    assert p.scale == 2.0**17
    state = p.state()
    state["amp.scale"].fill_(8.0)  # loading a checkpoint fills the state in place
    assert p.scale == 8.0


def test_the_meter_sees_what_was_allocated_after_its_start():
    # fresh anonymous pages (an allocator may reuse what an earlier test freed without growing)
    size, chunk = 64 * 2**20, b"x" * 2**20
    hold = mmap.mmap(-1, 4 * 2**20)
    for _ in range(4):
        hold.write(chunk)  # before the start: not counted
    meter = PeakMeter(CPU)
    meter.start()
    block = mmap.mmap(-1, size)
    for _ in range(64):
        block.write(chunk)
    peak = meter.peak_bytes()
    block.close()
    assert size - 2**20 < peak < size + 16 * 2**20
    # a peak, not the current size (the kernel's per-thread counters lag by a few pages)
    assert meter.peak_bytes() > peak - 2**20
    hold.close()


def test_a_rank_over_its_capacity_says_so():
    fine = MemoryReport(0, "n/cpu:0", peak_bytes=100, plan_bytes=90, capacity_bytes=200)
    assert over_capacity(fine) is None
    over = MemoryReport(1, "n/small:1", peak_bytes=300 * 2**20, plan_bytes=200 * 2**20,
                        capacity_bytes=256 * 2**20)  # fmt: skip
    line = over_capacity(over)
    assert line is not None and "\n" not in line
    assert "rank 1 used 300 MiB on n/small:1, over its capacity of 256 MiB" in line
    assert fine.to_dict() == {"rank": 0, "device": "n/cpu:0", "peak_bytes": 100,
                              "plan_bytes": 90, "capacity_bytes": 200}  # fmt: skip
