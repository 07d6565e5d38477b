"""``trainplay hw measure`` on one CPU worker times ``trainplay train``'s own step loop on the
stand-in job (:mod:`trainplay.runtime.loopcost`): a real run through torchrun's agent on the
profile just measured, its journal read, the loop kept in the profile as ``runtime.step``, and
the same on the stand-in that evicts the caches as ``runtime.step@stale``."""

import io

from rich.console import Console

from trainplay.cli.hw import _with_loop
from trainplay.hardware import local
from trainplay.roofline.cost import LOOP_KEY, STALE_LOOP_KEY


def test_the_stand_in_job_times_the_loop_into_the_profile(seeded_cache, monkeypatch):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(seeded_cache))
    one = local.load_cached(1, threads=1)  # the measured worker alone, as `hw measure` leaves it
    assert one is not None and LOOP_KEY not in one.workers[0].peaks.profile.overhead_s
    said = io.StringIO()
    timed = _with_loop(one, Console(file=said, width=200))
    fixed = timed.workers[0].peaks.profile.overhead_s
    assert 0 < fixed[LOOP_KEY] < 0.05, said.getvalue()
    assert 0 < fixed[STALE_LOOP_KEY] < 0.05, said.getvalue()
    assert "trainplay train's own loop:" in said.getvalue()
    # everything else as measured
    assert timed.workers[0].peaks.apf == one.workers[0].peaks.apf
