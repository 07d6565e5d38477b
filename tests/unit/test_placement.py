"""The CPUs' placement (shared cache or split): the probe, a sweep kept to one placement, a cache
entry per placement, and validation measured and priced in the placement its iterations ran in."""

import json
from dataclasses import replace

import pytest

from trainplay.hardware import local, placement
from trainplay.hardware.measure import sweeps
from trainplay.hardware.measure.passes import over_passes
from trainplay.hardware.measure.sweeps import Case, SweepResult, run_sweep
from trainplay.hardware.profile import PerfProfile
from trainplay.roofline import validate

from .test_measurement_cluster import _measurement, _worker


def test_the_ratio_reads_as_a_placement():
    assert placement.placement_of(0.60) == "shared"
    assert placement.placement_of(0.77) == "split"
    assert placement.placement_of(placement.SHARED_BELOW) == "split"
    assert placement.placement_of(None) is None


def test_labels_read_as_one_placement_or_the_most_common():
    assert placement.one_of(("split", "split")) == "split"
    assert placement.one_of(("shared", "split")) == placement.MIXED
    assert placement.one_of((None, None)) is None  # never probed
    assert placement.most_common(["split", None, "shared", "split"]) == "split"
    assert placement.most_common(["split", "shared"]) == "shared"  # a tie: the first in order
    assert placement.most_common([None]) is None


def test_one_cpu_has_no_placement(monkeypatch):
    monkeypatch.setattr(placement, "usable_cpus", lambda: 1)
    assert placement.sharing_ratio() is None and placement.placement_now() is None


def test_the_probe_keeps_the_callers_threads():
    torch = pytest.importorskip("torch")
    if placement.usable_cpus() < 2:
        pytest.skip("the probe needs two CPUs")
    before = torch.get_num_threads()
    ratio = placement.sharing_ratio()
    assert ratio is not None and 0.2 < ratio < 2.0  # two threads' time over one thread's
    assert torch.get_num_threads() == before


def _result(label: str) -> SweepResult:
    return SweepResult("norm.fwd", label, "aten.native_batch_norm", 1.0, 1.0, 1e-3, 1e-3, 0.0, True)


def _sweep(monkeypatch, seen: list[str], wait_s: float = 900.0, target: str | None = None):
    """(the cases timed, in order; the results) of a sweep of cases ``a`` and ``b`` whose
    placement probe answers ``seen`` in turn, held to ``target`` (default: the first answer)."""
    timed: list[str] = []

    def fake_time_case(case, *args):
        timed.append(case.label)
        return _result(case.label)

    monkeypatch.setattr(sweeps, "_time_case", fake_time_case)
    answers = iter(seen)
    case_list = [Case("norm.fwd", label, lambda d, t: None) for label in ("a", "b")]
    got = run_sweep(sweeps.torch.device("cpu"), "fp32", case_list,
                    placement=lambda: next(answers), wait_s=wait_s, target=target)  # fmt: skip
    return timed, got


def test_a_sweep_times_every_case_in_the_placement_it_began_in(monkeypatch):
    # the sweep's own probe, then before and after each try: a's first try ended split
    timed, got = _sweep(
        monkeypatch, ["shared", "shared", "split", "shared", "shared", "shared", "shared"]
    )
    assert timed == ["a", "a", "b"]
    assert [r.placement for r in got] == ["shared", "shared"]


def test_a_sweep_waits_for_the_placement_asked_for_before_timing_a_case(monkeypatch):
    monkeypatch.setattr(sweeps, "PLACEMENT_POLL_S", 0.0)
    # before a: split twice (waited for, nothing timed), then shared
    seen = ["split", "split", "shared", "shared", "shared", "shared"]
    timed, got = _sweep(monkeypatch, seen, target="shared")
    assert timed == ["a", "b"]
    assert [r.placement for r in got] == ["shared", "shared"]
    # none asked for: the sweep's own probe sets it, and a case is timed (and retaken) unwaited
    timed, got = _sweep(monkeypatch, ["shared", *seen, "shared"])
    assert timed == ["a", "a", "b"]
    assert [r.placement for r in got] == ["shared", "shared"]


def test_a_sweep_out_of_waiting_keeps_what_it_timed(monkeypatch):
    timed, got = _sweep(monkeypatch, ["shared", "split", "split", "split", "split"], wait_s=0.0)
    assert timed == ["a", "b"]  # no time to wait: each case timed once
    assert [r.placement for r in got] == ["split", "split"]


def test_a_sweep_without_a_probe_labels_nothing(monkeypatch):
    monkeypatch.setattr(sweeps, "_time_case", lambda case, *args: _result(case.label))
    case_list = [Case("norm.fwd", "a", lambda d, t: None)]
    (got,) = run_sweep(sweeps.torch.device("cpu"), "fp32", case_list)
    assert got.placement is None


def test_passes_in_two_placements_are_mixed():
    a, b = _result("a"), _result("a")
    got = over_passes([replace(a, placement="shared"), replace(b, placement="split")])
    assert got.placement == "mixed"
    assert over_passes([replace(a, placement="split")] * 2).placement == "split"


def test_a_profile_keeps_its_placement():
    profile = PerfProfile(placement="split", threads=2)
    assert PerfProfile.from_dict(json.loads(json.dumps(profile.to_dict()))) == profile
    assert "placement" not in PerfProfile().to_dict()


def _placed(host: str, apf: float, where: str | None):
    worker = _worker(0, host=host, threads=2, apf=apf, apf_by_dtype={"fp32": apf})
    profile = PerfProfile(threads=2, placement=where)
    return _measurement(replace(worker, peaks=replace(worker.peaks, profile=profile)))


def test_the_cache_keeps_a_measurement_per_placement(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    host = local.fingerprint()["host"]
    before, split = _placed(host, 1e11, None), _placed(host, 2e11, "split")
    local.save_cached(before)
    local.save_cached(split)
    assert local.cached_layouts() == ["1x2", "1x2@split"]
    assert local.cached_placements(1, 2) == ["split"]
    assert local.load_cached(1, 2, placement="split") == split
    assert local.load_cached(1, 2, placement="shared") == before  # none of it: the unlabelled one
    assert local.load_cached(1, 2) == before
    (tmp_path / "local-peaks.json").unlink()
    local.save_cached(split)
    assert local.load_cached(1, 2, placement="shared") == split  # the only one there is


def test_local_prices_the_placement_the_cpus_are_in_now(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(placement, "APART_S", 0.0)
    monkeypatch.setattr(local, "usable_cpus", lambda: 2)
    host = local.fingerprint()["host"]
    local.save_cached(_placed(host, 1e11, "shared"))
    local.save_cached(_placed(host, 2e11, "split"))
    monkeypatch.setattr(placement, "placement_now", lambda: "split")
    assert local.local_cluster(measure_if_missing=False).workers()[0].peaks().apf == 2e11
    (tmp_path / placement.READINGS_FILE).unlink()  # the split readings kept: none of the minutes
    monkeypatch.setattr(placement, "placement_now", lambda: "shared")
    assert local.local_cluster(measure_if_missing=False).workers()[0].peaks().apf == 1e11
    assert "placement" not in capsys.readouterr().err
    (tmp_path / "local-peaks.json").unlink()
    local.save_cached(_placed(host, 2e11, "split"))
    assert local.local_cluster(measure_if_missing=False).workers()[0].peaks().apf == 2e11
    err = capsys.readouterr().err
    assert "CPUs are mostly shared lately" in err and "measured with them split" in err


def test_validation_prices_the_placement_most_iterations_ran_in(monkeypatch):
    monkeypatch.setattr(validate, "cached_placements", lambda n: ["shared", "split"])
    assert validate._priced_placement(["split", "shared", "split", "mixed"], 1) == "split"
    assert validate._priced_placement(["mixed", "mixed"], 1) is None
    monkeypatch.setattr(validate, "cached_placements", lambda n: ["shared"])
    assert validate._priced_placement(["split", "split", "shared"], 1) == "shared"
    monkeypatch.setattr(validate, "cached_placements", lambda n: [])
    assert validate._priced_placement(["split"], 1) is None


def test_local_takes_the_placement_most_probes_read_over_a_second_or_two(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    readings = iter(["split", "shared", "shared", "split", "shared"])
    slept: list[float] = []
    monkeypatch.setattr(placement, "placement_now", lambda: next(readings))
    monkeypatch.setattr(placement.time, "sleep", slept.append)
    assert placement.placement_mostly(probes=5, apart_s=0.25) == "shared"  # the first read split
    assert slept == [0.25] * 4
    monkeypatch.setattr(placement, "placement_now", lambda: None)  # fewer than two CPUs
    slept.clear()
    assert placement.placement_mostly() is None and slept == []  # probed once, no waiting


def test_local_counts_the_last_minutes_readings_beside_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(placement.time, "sleep", lambda s: None)
    clock = [1000.0]
    monkeypatch.setattr(placement.time, "time", lambda: clock[0])
    monkeypatch.setattr(placement, "placement_now", lambda: "split")
    assert placement.placement_mostly(probes=3) == "split"
    assert placement.recent_readings() == [(1000.0, "split")] * 3
    clock[0] = 1100.0
    monkeypatch.setattr(placement, "placement_now", lambda: "shared")
    assert placement.placement_mostly(probes=2) == "split"  # the minutes, not the instant
    clock[0] = 1000.0 + placement.RECENT_S + 1  # the split readings are too old to count
    assert placement.placement_mostly(probes=1) == "shared"
    assert [label for _, label in placement.recent_readings()] == ["shared"] * 3
    kept = tmp_path / placement.READINGS_FILE
    assert json.loads(kept.read_text())["readings"] == [[1100.0, "shared"]] * 2 + [
        [clock[0], "shared"]
    ]  # older readings are dropped from the file, not only left uncounted


@pytest.mark.parametrize(
    "kept",
    [
        '{"host": "another-machine", "readings": [[1000.0, "split"], [1000.0, "split"]]}',
        "not json",
        '{"host": null}',
        '{"readings": [[1000.0, "split"], [1000.0, "split"]]}',
        "[1, 2]",
    ],
)
def test_readings_of_another_host_or_unreadable_ones_count_for_nothing(tmp_path, monkeypatch, kept):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(placement.time, "time", lambda: 1010.0)
    (tmp_path / placement.READINGS_FILE).write_text(kept)
    assert placement.recent_readings() == []
    monkeypatch.setattr(placement, "placement_now", lambda: "shared")
    assert placement.placement_mostly(probes=1) == "shared"
    assert placement.recent_readings() == [(1010.0, "shared")]  # rewritten as this host's


def test_a_cache_folder_that_cannot_be_written_leaves_the_probes_to_decide(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(placement.time, "sleep", lambda s: None)
    monkeypatch.setattr(placement, "placement_now", lambda: "split")
    assert placement.placement_mostly(probes=2) == "split"
    assert placement.recent_readings() == []
