"""A decoder larger than any one device trains over four small ones, each within its memory.

tests.data.tiny_models:roomy_decoder needs 16 bytes per parameter with fp32 Adam (parameters,
gradients, two moments): more than any of the four 448 MiB devices of
tests/data/clusters/small-cpus.yaml holds. ``trainplay train`` plans it over the four (the planner
fits each stage in 90% of its device), every rank builds only its stage, and each journals its
measured peak: under its capacity, and within 1.3x of what the plan said.
"""

from __future__ import annotations

import sys

from tests.integration.elastic import ROOT
from tests.integration.processes import run_bounded
from trainplay.plan.api import block_costs
from trainplay.plan.memory import state_bytes
from trainplay.runtime.journal import read_journal

MODEL = "tests.data.tiny_models:roomy_decoder"
CLUSTER = ROOT / "tests" / "data" / "clusters" / "small-cpus.yaml"
CAPACITY_BYTES = 448 * 2**20


def test_a_model_no_device_holds_trains_within_each_devices_memory(tmp_path):
    costs = block_costs(MODEL, seq_len=32, vocab_size=8192)
    state = state_bytes(sum(costs.param_bytes) - costs.param_bytes[-1], "adam", "fp32")
    assert state > 2 * CAPACITY_BYTES  # the whole model's training state: 1.0 GB
    journal = tmp_path / "journal.jsonl"
    args = [
        MODEL, "--seq-len", "32", "--global-batch", "4", "--steps", "3", "--optimizer", "adam",
        "--lr", "1e-3", "--cluster", str(CLUSTER), "--nproc-per-node", "4", "--no-progress",
        "--journal", str(journal),
    ]  # fmt: skip
    done = run_bounded([sys.executable, "-m", "trainplay", "train", *args], timeout_s=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not done.left_behind
    events = read_journal(journal)
    start = next(e for e in events if e["event"] == "start")
    assert start["stages"] == 4
    memory = sorted((e for e in events if e["event"] == "memory"), key=lambda e: e["rank"])
    assert [e["rank"] for e in memory] == [0, 1, 2, 3]
    for e in memory:
        assert e["capacity_bytes"] == CAPACITY_BYTES
        assert e["plan_bytes"] <= 0.9 * CAPACITY_BYTES  # the plan fits, workspace kept
        assert e["peak_bytes"] < e["capacity_bytes"], e
        assert e["plan_bytes"] / 1.3 <= e["peak_bytes"] <= 1.3 * e["plan_bytes"], e
    assert "over its capacity" not in done.stderr
