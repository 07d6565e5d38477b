"""``trainplay hw measure --nproc 2`` times ``trainplay train``'s own step loop on the stand-in job
(:mod:`trainplay.runtime.loopcost`) for the worker it measures alone, on which a plan of one rank
runs: a real run through torchrun's agent on the profile just measured, hot and with the caches
evicted, its journal read, the loop kept in that profile as ``runtime.step`` and
``runtime.step@stale``. The shared measurement (``conftest.measured_two_workers``) is the command
that does it."""

from trainplay.hardware import local
from trainplay.roofline.cost import LOOP_KEY, STALE_LOOP_KEY


def test_the_stand_in_job_times_the_loop_into_the_profile(
    measured_two_workers, seeded_cache, monkeypatch
):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(seeded_cache))
    said = measured_two_workers.done.stderr
    assert "trainplay train's own loop:" in said, said
    one = local.load_cached(1, threads=1)  # the measured worker alone, as `hw measure` leaves it
    assert one is not None
    fixed = one.workers[0].peaks.profile.overhead_s
    assert 0 < fixed[LOOP_KEY] < 0.05 and 0 < fixed[STALE_LOOP_KEY] < 0.05, fixed
    two = local.load_cached(2)  # the two busy workers: a loop of several ranks is not timed
    assert two is not None
    assert all(LOOP_KEY not in w.peaks.profile.overhead_s for w in two.workers)
