"""A layout measured at several moments is priced with them pooled: each point the median of its
times (trainplay.hardware.moments), kept per layout by the local cache."""

import json

import pytest

from trainplay.cli import main
from trainplay.hardware import local
from trainplay.hardware.measurement import Measurement, WorkerPeaks
from trainplay.hardware.moments import described, moved, pooled
from trainplay.hardware.profile import Curve, PerfProfile, Surface
from trainplay.hardware.spec import Peaks

HOST = local.fingerprint()["host"]


def _measurement(
    at, speed=1.0, *, quick=False, threads=2, placement="shared", extra=None, cache_bytes=None
):
    """One worker whose every rate is ``speed`` times a base one, finished at hour ``at``."""
    classes = {
        "gemm.fwd": Surface(
            sizes=(1e6, 1e9), intensities=(10.0, 100.0), rates=(1e10 * speed, 5e10 * speed)
        ),
        "elementwise.fwd": Curve(sizes=(1e3, 1e6), rates=(1e9 * speed, 2e10 * speed)),
        **(extra or {}),
    }
    profile = PerfProfile(
        classes=classes,
        overhead_s={"fwd": 4e-6 / speed},
        threads=threads,
        source="trainplay hw measure",
        placement=placement,
        cache_bytes=cache_bytes,
    )
    peaks = Peaks(
        apf=1e11 * speed,
        apm=2e10 * speed,
        apf_by_dtype={"fp32": 1e11 * speed},
        profile=profile,
        spread={"apf": 0.01 * speed},
    )
    worker = WorkerPeaks(
        rank=0,
        host=HOST,
        device="Test CPU",
        device_type="cpu",
        threads=threads,
        apf_gemm_size=1024,
        apm_tensor_bytes=2**26,
        mem_bytes=2**33,
        peaks=peaks,
    )
    return Measurement(
        workers=(worker,),
        backend="gloo",
        quick=quick,
        seconds=60.0,
        torch_version="2.14.1",
        measured_at=f"2026-12-07T{at:02d}:00:00+00:00",
        reference={"compute": 1e11 * speed, "memory": 2e10 * speed},
    )


def _rates(m, key="elementwise.fwd"):
    return m.workers[0].peaks.profile.classes[key].rates


def test_two_moments_give_each_point_the_rate_of_their_mean_time():
    m = pooled([_measurement(6, 1.0), _measurement(9, 3.0)])
    # times 1 and 1/3 of the base: their median (mean of two) 2/3, so rates x1.5
    assert _rates(m) == pytest.approx((1.5e9, 3e10))
    assert m.workers[0].peaks.apf == pytest.approx(1.5e11)
    assert m.workers[0].peaks.profile.overhead_s["fwd"] == pytest.approx(4e-6 * 2 / 3)
    assert m.reference["memory"] == pytest.approx(3e10)
    assert m.measured_at.startswith("2026-12-07T09") and len(m.pooled_from) == 2
    assert "pooled over 2 measurements" in m.workers[0].peaks.profile.source


def test_one_wild_moment_of_three_does_not_move_a_point():
    m = pooled([_measurement(3, 1.0), _measurement(6, 0.2), _measurement(9, 1.1)])
    assert _rates(m) == pytest.approx((1e9, 2e10))
    surface = m.workers[0].peaks.profile.classes["gemm.fwd"]
    assert isinstance(surface, Surface) and surface.intensities == (10.0, 100.0)
    assert m.workers[0].peaks.spread["apf"] == pytest.approx(0.011)  # the largest of them


def test_a_point_only_a_later_sweep_has_keeps_its_own_rate():
    extra = {"elementwise.fwd": Curve(sizes=(1e3, 1e5, 1e6), rates=(2e9, 7e9, 4e10))}
    m = pooled([_measurement(6, 1.0), _measurement(9, 2.0, extra=extra)])
    assert m.workers[0].peaks.profile.classes["elementwise.fwd"].sizes == (1e3, 1e5, 1e6)
    assert _rates(m)[1] == 7e9
    assert _rates(m)[0] == pytest.approx(1 / ((1 / 1e9 + 1 / 2e9) / 2))


@pytest.mark.parametrize(
    ("footprints_mib", "pooled_mib"),
    [((8, 8, 16), 8), ((16, 16, 8), 16), ((16, 8), 8), ((None, 16), 16), ((None, None), None)],
)
def test_the_cache_footprint_is_the_median_of_the_measured_ones(footprints_mib, pooled_mib):
    measurements = [
        _measurement(6 + hour, cache_bytes=None if mib is None else mib * 2**20)
        for hour, mib in enumerate(footprints_mib)
    ]
    got = pooled(measurements).workers[0].peaks.profile.cache_bytes
    assert got == (None if pooled_mib is None else pooled_mib * 2**20)


def test_how_far_the_moments_lay_apart_is_said():
    typical, largest = moved([_measurement(6, 1.0), _measurement(9, 3.0)])
    # times 1 and 1/3 against their median 2/3: both lie half of it away
    assert typical == pytest.approx(0.5) and largest == pytest.approx(0.5)
    assert moved([_measurement(6)]) == (0.0, 0.0)
    assert "not pooled" in described([_measurement(6)])


@pytest.mark.parametrize(
    "other",
    [
        _measurement(9, quick=True),
        _measurement(9, threads=1),
        _measurement(9, placement="split"),
    ],
)
def test_measurements_made_otherwise_are_not_pooled(other):
    with pytest.raises(ValueError, match="measured alike"):
        pooled([_measurement(6), other])


def test_the_cache_pools_a_layouts_last_three_measurements(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    for at, speed in ((1, 8.0), (3, 1.0), (6, 2.0), (9, 4.0)):
        local.save_cached(_measurement(at, speed), pool=True)
    m = local.load_cached(1, placement="shared")
    # the first (x8) is no longer pooled: the median of x1, x2 and x4 is x2
    assert _rates(m) == pytest.approx((2e9, 4e10))
    assert [t[11:13] for t in m.pooled_from] == ["03", "06", "09"]
    history = json.loads((tmp_path / local.HISTORY_FILE).read_text())["layouts"]
    assert len(history["1x2@shared"]) == 3
    assert "pooled over 3 measurements" in local.pooled_note(_measurement(9))
    # a short measurement is not pooled with full ones; without `pool` the pool starts over
    local.save_cached(_measurement(10, 1.0, quick=True), pool=True)
    assert local.load_cached(1, placement="shared").pooled_from == ()
    local.save_cached(_measurement(11, 1.0), pool=False)
    assert _rates(local.load_cached(1, placement="shared")) == pytest.approx((1e9, 2e10))
    assert "alone" in local.pooled_note(_measurement(11))


def test_hw_measure_pools_unless_fresh(tmp_path, monkeypatch, capsys):
    from trainplay.cli import hw as hw_cli
    from trainplay.hardware.measure import launch

    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    runs = iter([_measurement(6, 1.0), _measurement(9, 3.0), _measurement(12, 5.0)])
    monkeypatch.setattr(launch, "measure", lambda **_: next(runs))
    # the stand-in job that times the training loop (test_loopcost, test_hw_loop) is not what
    # this test is about: each run of it trains for seconds
    monkeypatch.setattr(hw_cli, "_with_loop", lambda result, err: result)

    def measure(*flags):
        assert main(["hw", "measure", "--device", "cpu", "--format", "json", *flags]) == 0
        return local.load_cached(1, placement="shared"), capsys.readouterr().err

    cached, said = measure()
    assert cached.pooled_from == () and "this measurement alone" in said
    cached, said = measure()
    assert _rates(cached) == pytest.approx((1.5e9, 3e10))
    assert "pooled over 2 measurements" in said and "a median 50.0%" in said
    cached, said = measure("--fresh")
    assert _rates(cached) == pytest.approx((5e9, 1e11)) and "this measurement alone" in said
