"""``trainplay validate`` end to end: real DDP training on gloo against the two-process profile.

A four-block CNN on 3x32x32 images keeps it to seconds. The numbers are not judged here (the
benchmark under benchmarks/ does that, on an idle machine); the test checks that every part ran
and agrees with itself: two ranks measured, every block measured and predicted, positive times.
The cache starts with this machine's two-worker measurement (``conftest.measured_two_workers``,
what a first ``validate --nproc 2`` would measure).
"""

import json
import os
import sys

from tests.integration.processes import run_bounded

LIMIT_S = 240


def test_validate_two_processes(seeded_cache):
    env = {**os.environ, "TRAINPLAY_CACHE_DIR": str(seeded_cache)}
    seeded = sorted(json.loads((seeded_cache / "local-peaks.json").read_text())["layouts"])
    done = run_bounded(
        [
            sys.executable,
            "-m",
            "trainplay",
            "validate",
            "tests.data.tiny_models:tiny_cnn",
            "--batch",
            "8",
            "--input-shape",
            "3,32,32",
            "--nproc",
            "2",
            "--iters",
            "3",
            "--format",
            "json",
        ],
        timeout_s=LIMIT_S,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert not done.left_behind, "a worker or agent outlived the command"
    result = json.loads(done.stdout)
    assert result["nproc"] == 2 and result["threads"] >= 1
    assert len(result["measured_all_s"]) == 3 and result["measured_s"] > 0
    # every timed iteration labelled with the CPUs' placement rank 0 probed around it; a
    # two-worker profile is measured in none, so every iteration is measured against it
    told = {"shared", "split", "mixed"} if os.cpu_count() >= 2 else {None}
    assert len(result["placements"]) == 3 and set(result["placements"]) <= told
    assert result["placement"] is None
    assert result["predicted_s"] > 0
    assert result["peaks"]["apb"] is not None  # two workers: the all-reduce was measured
    names = [b["name"] for b in result["blocks"]]
    assert names == ["0", "4", "7", "11"]
    assert all(
        b["measured_s"] and b["measured_s"] > 0 and b["predicted_s"] > 0 for b in result["blocks"]
    )
    # the two-process profile was the one used: no other layout was measured beside the two
    # workers and the one worker alone that `hw measure --nproc 2` left
    cache = json.loads((seeded_cache / "local-peaks.json").read_text())
    assert sorted(cache["layouts"]) == seeded and "2" in [k.split("x")[0] for k in seeded]
