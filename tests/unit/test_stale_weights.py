"""Stale weights: a matrix product or dense convolution whose weight was evicted since its last use
runs at its class's stale rate (measured by a sweep that cycles weight copies), when what the device
streams between two uses of a weight exceeds its cache; when it does not, at its warm rate (copies
cycled through half the cache), where the profile has one."""

import pytest
import torch

from trainplay.hardware import local
from trainplay.hardware.measure.coldcache import Evictor
from trainplay.hardware.measure.quiet import Quiet
from trainplay.hardware.measure.sweeps import SweepResult, _gemm, _norm, _time_case, curves_of
from trainplay.hardware.profile import Curve, PerfProfile
from trainplay.hardware.spec import Peaks
from trainplay.plan.costs import AFFINE_KEYS, AffineOp, BlockCosts, CostModel, devices_of
from trainplay.roofline import cost

from .test_measurement_cluster import _measurement, _worker

COLD, HOT, STALE, WARM = 1e9, 1e10, 4e9, 8e9
CACHE = 2**23


def _profile(**extra) -> PerfProfile:
    return PerfProfile(
        classes={
            "gemm.fwd": Curve(sizes=(1.0,), rates=(COLD,)),
            "gemm.fwd@hot": Curve(sizes=(1.0,), rates=(HOT,)),
            "gemm.fwd@stale": Curve(sizes=(1.0,), rates=(STALE,)),
            "norm.fwd": Curve(sizes=(1.0,), rates=(COLD,)),
            "norm.fwd@hot": Curve(sizes=(1.0,), rates=(HOT,)),
        },
        cache_bytes=CACHE,
        **extra,
    )


def test_the_sweeps_stale_times_become_a_stale_surface():
    def gemm(flops, nbytes, seconds, hot, stale, warm=None):
        return SweepResult(
            "gemm.fwd", "x", "aten.addmm", flops, nbytes, seconds, hot, 0.0, True, stale,
            warm_s=warm,
        )  # fmt: skip

    norm = SweepResult("norm.fwd", "x", "aten.native_layer_norm", 0.0, 1e6, 2e-3, 1e-3, 0.0, True)
    curves = curves_of(
        [gemm(1e9, 1e7, 4e-2, 1e-2, 2e-2), gemm(1e8, 1e6, 4e-3, 1e-3, 3e-3, 1.5e-3), norm],
        0.0, asynchronous=False,
    )  # fmt: skip
    assert curves["gemm.fwd@warm"].rate(1e8, 100.0) == pytest.approx(1e8 / 1.5e-3)
    assert "norm.fwd@warm" not in curves
    assert curves["gemm.fwd@stale"].rate(1e9, 100.0) == pytest.approx(1e9 / 2e-2)
    assert curves["gemm.fwd@stale"].rate(1e8, 100.0) == pytest.approx(1e8 / 3e-3)
    assert curves["gemm.fwd"].rate(1e9, 100.0) == pytest.approx(1e9 / 4e-2)  # cold unchanged
    assert "norm.fwd@stale" not in curves  # no weight: never timed stale
    assert "norm.fwd@hot" in curves


def test_a_small_call_with_stale_weights_runs_at_the_stale_rate():
    peaks = Peaks(apf=1e11, apm=1e10, profile=_profile())
    small, large = CACHE / 4, CACHE
    flops = 1e8

    def seconds(cls, nbytes, stale):
        work = flops if cls == "gemm" else 0.0
        return cost.call_s(cls, "fwd", work, nbytes, peaks, None, stale).total_s

    assert seconds("gemm", small, False) == pytest.approx(flops / HOT)
    assert seconds("gemm", small, True) == pytest.approx(flops / STALE)
    # a call larger than half the cache is cold either way
    assert seconds("gemm", large, True) == pytest.approx(flops / COLD)
    assert seconds("gemm", large, False) == pytest.approx(flops / COLD)
    # a class the sweep did not time stale keeps its hot rate
    assert seconds("norm", small, True) == seconds("norm", small, False)
    assert seconds("norm", small, True) == pytest.approx(small / HOT)


def test_a_small_call_whose_weights_stay_cached_runs_at_the_warm_rate():
    profile = _profile()
    warm = PerfProfile(
        classes={**profile.classes, "gemm.fwd@warm": Curve(sizes=(1.0,), rates=(WARM,))},
        cache_bytes=CACHE,
    )
    peaks = Peaks(apf=1e11, apm=1e10, profile=warm)
    small, large, flops = CACHE / 4, CACHE, 1e8

    def seconds(cls, nbytes, stale):
        work = flops if cls == "gemm" else 0.0
        return cost.call_s(cls, "fwd", work, nbytes, peaks, None, stale).total_s

    assert seconds("gemm", small, False) == pytest.approx(flops / WARM)  # not back to back
    assert seconds("gemm", small, True) == pytest.approx(flops / STALE)  # evicted: stale
    assert seconds("gemm", large, False) == pytest.approx(flops / COLD)  # too large: cold
    assert seconds("norm", small, False) == pytest.approx(small / HOT)  # no weight: hot


def test_weights_go_stale_when_optimizer_state_and_saved_activations_outgrow_the_cache():
    profile = _profile()
    assert not cost.stale_weights(CACHE / 4, 0.0, "sgd", profile)  # 3/4 of the cache
    assert cost.stale_weights(CACHE / 3 + 1, 0.0, "sgd", profile)
    assert cost.stale_weights(CACHE / 4, CACHE / 4 + 1, "sgd", profile)  # saved activations too
    assert cost.stale_weights(CACHE / 4 + 1, 0.0, "adam", profile)  # two moments: four tensors
    assert not cost.stale_weights(1e12, 0.0, "sgd", PerfProfile(classes={}))  # no cache measured
    assert not cost.stale_weights(1e12, 0.0, "sgd", None)  # a datasheet device


def _blocks(n: int) -> BlockCosts:
    """``n`` blocks, each one small matrix product per phase and 1 MiB of parameters."""
    zeros = tuple(0.0 for _ in range(n))
    per = dict.fromkeys(AFFINE_KEYS, zeros) | {
        "fwd_flops": (1e8,) * n,
        "bwd_flops": (1e8,) * n,
        "fwd_bytes": (1e5,) * n,
        "bwd_bytes": (1e5,) * n,
        "saved_bytes": (1e3,) * n,
    }
    ops = ((AffineOp("gemm", "fwd", "aten.addmm", (0.0, 1e8), (0.0, 1e5), 1),),) * n
    return BlockCosts(
        model="synthetic", dtype="fp32", names=tuple(f"b{i}" for i in range(n)),
        fixed=dict.fromkeys(AFFINE_KEYS, zeros), per_sample=per, param_bytes=(2**20,) * n,
        input_bytes_per_sample=1e3, ops=ops,
    )  # fmt: skip


def test_the_planner_prices_a_stage_stale_when_its_parameters_outgrow_the_cache(
    tmp_path, monkeypatch
):
    """Eight blocks of 1 MiB of parameters against an 8 MiB cache: SGD streams 24 MiB between two
    uses of a weight on one device holding all eight, 6 MiB on one holding two."""
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    worker = _worker(0, local.fingerprint()["host"], profile=_profile(workers=1).to_dict())
    local.save_cached(_measurement(worker))
    cluster = local.local_cluster(1, measure_if_missing=False)
    cm = CostModel(_blocks(8), cluster, "sgd")
    (device,) = devices_of(cluster, "fp32")
    fixed = cost.call_s("gemm", "fwd", 0.0, 0.0, device.priced()).total_s  # per-call cost alone
    assert cm.stale(device, 1, 0, 8) and not cm.stale(device, 1, 0, 2)
    assert cm.fwd_s(device, 1, 0, 8) == pytest.approx(8 * (fixed + 1e8 / STALE))
    assert cm.fwd_s(device, 1, 0, 2) == pytest.approx(2 * (fixed + 1e8 / HOT))
    assert cm.split_s(device, 1, 0, 8).total_s == pytest.approx(cm.fwd_s(device, 1, 0, 8))


def test_a_sweep_times_products_stale_by_cycling_weight_copies():
    """On this CPU: a small product's stale time is a real measurement, never below its hot
    time; a normalisation (no weight) is not timed stale."""
    evictor = Evictor(2**20)
    device = torch.device("cpu")
    case = _gemm(16, 64, 64, "fwd")
    assert case.fresh == 1  # addmm(bias, input, weight.t()): the input is what just got written
    got = _time_case(case, device, torch.float32, Quiet(), 2, 0.002, evictor)
    assert got.stale_s is not None and got.stale_s >= got.hot_s > 0
    assert got.warm_s is None  # no warm footprint given
    warm = _time_case(case, device, torch.float32, Quiet(), 2, 0.002, evictor, 2**20)
    assert warm.warm_s is not None and warm.warm_s >= warm.hot_s > 0
    # 64x64 weight and bias: 16.6 KB, twice that does not fit in 16 KB
    tight = _time_case(case, device, torch.float32, Quiet(), 2, 0.002, evictor, 2**14)
    assert tight.warm_s is None
    norm = _time_case(
        _norm("layer", (4, 64), "fwd"), device, torch.float32, Quiet(), 2, 0.002, evictor, 2**20
    )
    assert norm.stale_s is None and norm.warm_s is None
