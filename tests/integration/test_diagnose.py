"""``trainplay diagnose`` on real traces: two gloo ranks under torchrun, one made slow on purpose.

One torchrun launch of ``traced_ddp.py`` trains four cases, fifteen profiled steps each (after an
unjudged balanced one that takes any cold-start work of a fresh checkout): a balanced
run, rank 1 and then rank 0 slowed by extra GEMMs, and rank 1 slowed by extra copies. The launch
runs in its own process group with a time limit; the group is killed on the way out, and the test
checks that nothing of it is left running.

The slowed cases are judged at the default margin (25%), the balanced one at twice it: this
machine has two cores that other work shares, and such load, falling on one rank's core for
seconds, has made that rank 11-27% busier than the other in balanced runs here. The slowed ranks do about 40 ms of extra work per step,
twice a step's own work.
"""

import json
import os
import sys
from pathlib import Path

import pytest

from tests.integration.processes import run_bounded
from trainplay.roofline.diagnose import MARGIN, diagnose, trace_files
from trainplay.roofline.kineto import read_trace

LIMIT_S = 150
STEPS = 15
SCRIPT = Path(__file__).with_name("traced_ddp.py")
CASES = {
    "balanced": None,
    "slow1": (1, "compute"),
    "slow0": (0, "compute"),
    "slow1-memory": (1, "memory"),
}
BLOCKS = ["0.0", "1.0", "2.0", "5"]  # the small CNN cut as `trainplay profile` cuts it


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("traces")
    agent_tmp = tmp_path_factory.mktemp("agent")  # plain torchrun's agent leaves its log folder
    # an unjudged balanced case first: on a fresh checkout the first profiled steps of a launch
    # have made rank 0 up to 81% busier (one-time work), and the balanced case must not take it
    cases = ["cold-start"] + [
        name if slow is None else f"{name}:{slow[0]}:{slow[1]}" for name, slow in CASES.items()
    ]
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
    ]
    command += [str(SCRIPT), "--out", str(out), "--steps", str(STEPS)]
    command += [arg for case in cases for arg in ("--case", case)]
    done = run_bounded(command, timeout_s=LIMIT_S, env={**os.environ, "TMPDIR": str(agent_tmp)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert not done.left_behind, "a worker or the agent outlived the launch"
    return out


def test_traces_carry_what_the_reader_relies_on(runs):
    path = trace_files(runs / "slow1")[0]
    data = json.loads(path.read_text())
    assert data["distributedInfo"]["backend"] == "gloo"
    assert data["distributedInfo"]["world_size"] == 2
    names = {e.get("name") for e in data["traceEvents"]}
    assert {f"ProfilerStep#{n}" for n in range(1, STEPS + 1)} <= names
    assert {"c10d::allreduce_", "c10d::broadcast_", "gloo:all_reduce"} <= names
    assert {f"trainplay.block:{b}" for b in BLOCKS} <= names
    assert "autograd::engine::evaluate_function: ConvolutionBackward0" in names


@pytest.mark.parametrize("case", list(CASES))
def test_times_per_rank_and_block(runs, case):
    result = diagnose(runs / case)
    assert [r.rank for r in result.ranks] == [0, 1]
    for r in result.ranks:
        assert r.steps == STEPS - 1  # the warm-up step left out
        assert 0 < r.busy_s < r.step_s and r.compute_s > 0 and r.memory_s > 0
        assert 0 < r.collective_s < r.step_s
        assert list(r.blocks) == BLOCKS and all(t > 0 for t in r.blocks.values())
    fast, slow = sorted(r.step_s for r in result.ranks)
    assert slow < 1.15 * fast, "synchronous ranks take the same time per step"
    for path in trace_files(runs / case):
        for step in read_trace(path).steps:
            assert 0 < sum(step.blocks_s.values()) <= step.step_s
            assert step.busy_s + step.collective_wait_s <= step.step_s * (1 + 1e-9)


@pytest.mark.parametrize(("case", "slow"), [(c, s) for c, s in CASES.items() if s is not None])
def test_the_slowed_rank_is_named(runs, case, slow):
    slow_rank, kind = slow
    result = diagnose(runs / case)
    straggler = result.straggler
    assert straggler is not None, result.notes
    assert straggler.rank == slow_rank and straggler.dimension == kind, result.notes
    assert straggler.excess_fraction > 2 * MARGIN, result.notes
    assert straggler.steps_slower > (STEPS - 1) / 2
    # ~40 ms of extra work on ~13 ms steps: about (13 + 40) / 13 = 4.1x; a core that other work
    # shares stretches the extra work further (a full-suite run here measured 5.33x), so the
    # bound only rules out a ratio no such slowing explains
    assert 1.2 < straggler.slowdown < 8
    by_rank = {r.rank: r for r in result.ranks}
    victim = by_rank[1 - slow_rank]
    assert victim.collective_wait_s > by_rank[slow_rank].collective_wait_s
    # the extra work runs inside block 1.0's forward: that block carries the excess
    excess = {b: by_rank[slow_rank].blocks[b] - victim.blocks[b] for b in BLOCKS}
    assert max(excess, key=excess.get) == "1.0"


BALANCED_MARGIN = 2 * MARGIN
"""The balanced case is judged at twice the default margin: its steps are ~13 ms, and a clean-clone
CI run here once had rank 0 busier by 27% over 9 of 14 steps (16.3 against 12.8 ms) with no slowing
at all. The slowed cases stay far beyond it: they must exceed the same 50% (above)."""


def test_a_balanced_run_names_no_straggler(runs):
    result = diagnose(runs / "balanced", margin=BALANCED_MARGIN)
    assert result.straggler is None, result.notes
    assert result.notes[0].startswith("no straggler")
