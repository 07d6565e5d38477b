"""A GPT-style decoder with tied embeddings trains through ``trainplay train`` exactly as one
process trains it.

The decoder (tests.data.tiny_models:tiny_decoder: blocks embed, layers.0, layers.1, head, the
token embedding tied to the output projection) runs as 2, 3 and 4 pipeline stages (GPipe and
1F1B) and as 2 replicas x 2 stages with uneven shares, each stage built on meta with only its own
blocks; the journal's losses and the final checkpoint's parameters must match one process on the
same synthetic token windows within 1e-5 (relative), which holds only if the tied copies on the
first and last stage take the same steps. The same job without a fixed plan on 1 and on 2 processes
gives the same losses.
"""

from __future__ import annotations

import json
import sys
from functools import cache

import pytest
import torch

from tests.integration.elastic import ROOT
from tests.integration.processes import run_bounded
from tests.integration.reference import final_state, fixed_plan, train_language_model
from trainplay.errors import UsageError
from trainplay.plan.api import block_costs
from trainplay.runtime import checkpoint
from trainplay.runtime.journal import read_journal, trajectory
from trainplay.runtime.timers import FIELDS

MODEL = "tests.data.tiny_models:tiny_decoder"
SEQ, VOCAB, STEPS, LR, MOMENTUM, SEED = 16, 64, 4, 0.1, 0.9, 3
CLUSTER = ROOT / "tests" / "data" / "clusters" / "slow-quad.yaml"
NAMES = ("embed", "layers.0", "layers.1", "head")

CASES = {
    "2 stages, GPipe": ([(0, 1), (2, 3)], [8], 2, "gpipe"),
    "3 stages, 1F1B": ([(0, 0), (1, 2), (3, 3)], [8], 4, "1f1b"),
    "4 stages, GPipe, recompute": ([(0, 0), (1, 1), (2, 2), (3, 3)], [8], 2, "gpipe"),
    "4 stages, 1F1B": ([(0, 0), (1, 1), (2, 2), (3, 3)], [8], 4, "1f1b"),
    "2 replicas x 2 stages, shares 12+4": ([(0, 1), (2, 3)], [12, 4], 2, "1f1b"),
}


@cache
def reference(batch: int):
    return train_language_model(
        MODEL, seq_len=SEQ, vocab=VOCAB, batch=batch, steps=STEPS, seed=SEED, lr=LR,
        momentum=MOMENTUM,
    )  # fmt: skip


def train(tmp_path, batch: int, *extra: str, steps: int = STEPS) -> list[dict]:
    args = [
        MODEL, "--seq-len", str(SEQ), "--global-batch", str(batch), "--steps", str(steps),
        "--lr", str(LR), "--momentum", str(MOMENTUM), "--seed", str(SEED),
        "--cluster", str(CLUSTER), "--no-progress", "--checkpoint-dir", str(tmp_path / "ckpt"),
        "--journal", str(tmp_path / "journal.jsonl"), *extra,
    ]  # fmt: skip
    done = run_bounded([sys.executable, "-m", "trainplay", "train", *args], timeout_s=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not done.left_behind
    return read_journal(tmp_path / "journal.jsonl")


def test_the_blocks_are_the_planners():
    assert block_costs(MODEL, seq_len=SEQ, vocab_size=VOCAB).names == NAMES


@pytest.mark.parametrize("name", list(CASES))
def test_pipeline_matches_one_process(name, tmp_path):
    bounds, shares, microbatches, schedule = CASES[name]
    plan = fixed_plan(NAMES, bounds, shares, microbatches, schedule, "recompute" in name)
    (tmp_path / "plan.json").write_text(json.dumps(plan.to_dict()))
    nproc = plan.replicas * len(plan.stages)
    events = train(
        tmp_path, plan.global_batch, "--plan", str(tmp_path / "plan.json"),
        "--nproc-per-node", str(nproc),
    )  # fmt: skip
    losses, params = reference(plan.global_batch)
    steps = trajectory(events)
    assert [e["plan_id"] for e in steps] == [plan.plan_id] * STEPS
    assert [e["loss"] for e in steps] == pytest.approx(losses, rel=1e-5)
    state = final_state(tmp_path / "ckpt", params, STEPS)
    assert "model.head.proj.weight" not in state  # one copy of the tied weight, by its first name
    for key, value in params.items():
        torch.testing.assert_close(state[key], value, rtol=1e-5, atol=1e-6)
    memory = [e for e in events if e["event"] == "memory"]
    assert sorted(e["rank"] for e in memory) == list(range(nproc))
    # the first and last stage take the samples; a middle stage takes none, and is priced so
    ranks = next(e for e in events if e["event"] == "start")["ranks"]
    ends = [r["stage"] in (0, len(plan.stages) - 1) for r in ranks]
    data = FIELDS.index("data_s")
    for e in steps:
        assert [row[data] > 0 for row in e["timers_s"]] == ends
    assert [r["predicted"]["data_s"] > 0 for r in ranks] == ends


def test_stages_on_ranks_out_of_order(tmp_path):
    # a plan may put stage 0 on rank 2: each stage must still talk to its neighbours' ranks
    devices = ["box/slowcpu:2", "box/slowcpu:0", "box/slowcpu:1"]
    plan = fixed_plan(NAMES, [(0, 0), (1, 2), (3, 3)], [8], 2, "gpipe", devices=devices)
    (tmp_path / "plan.json").write_text(json.dumps(plan.to_dict()))
    events = train(
        tmp_path, 8, "--plan", str(tmp_path / "plan.json"), "--nproc-per-node", "3",
        "--node-name", "box",
    )  # fmt: skip
    start = next(e for e in events if e["event"] == "start")
    assert start["devices"] == devices
    losses, params = reference(8)
    assert [e["loss"] for e in trajectory(events)] == pytest.approx(losses, rel=1e-5)
    state = final_state(tmp_path / "ckpt", params, STEPS)
    for key, value in params.items():
        torch.testing.assert_close(state[key], value, rtol=1e-5, atol=1e-6)


def test_one_and_two_processes_give_the_same_losses(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one = train(tmp_path / "one", 8, "--nproc-per-node", "1")
    two = train(tmp_path / "two", 8, "--nproc-per-node", "2")
    start = next(e for e in two if e["event"] == "start")
    assert len(start["devices"]) == 2  # the slow devices make the planner use both
    losses = [e["loss"] for e in trajectory(one)]
    assert [e["loss"] for e in trajectory(two)] == pytest.approx(losses, rel=1e-5)
    assert losses == pytest.approx(reference(8)[0], rel=1e-5)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_mixed_precision_stays_close_to_fp32_and_resumes(tmp_path, dtype):
    # 2 replicas x 2 stages under autocast over fp32 master weights; fp16 scales the loss (the
    # scale, 2**16 at the start, is checkpointed and restored with the weights)
    plan = fixed_plan(NAMES, [(0, 1), (2, 3)], [4, 4], 2, "1f1b")
    (tmp_path / "plan.json").write_text(json.dumps(plan.to_dict()))
    run = ["--plan", str(tmp_path / "plan.json"), "--nproc-per-node", "4", "--dtype", dtype]
    train(tmp_path, 8, *run, "--checkpoint-every", "2")
    events = train(tmp_path, 8, *run, steps=STEPS + 2)  # resumes at step 4
    restore = next(e for e in events if e["event"] == "restore")
    assert restore["step"] == STEPS
    losses = [e["loss"] for e in trajectory(events)]
    assert len(losses) == STEPS + 2
    assert losses[:STEPS] == pytest.approx(reference(8)[0], rel=1e-3)
    path, _ = checkpoint.latest(tmp_path / "ckpt")
    scale = {"amp.scale": torch.zeros(1)}
    if dtype == "fp16":
        checkpoint.load(path, scale)
        assert float(scale["amp.scale"]) == 2.0**16  # no overflow in six steps
    else:
        with pytest.raises(UsageError, match=r"has no 'amp\.scale'"):
            checkpoint.load(path, scale)
