"""``trainplay train --plan`` runs pipelines that train exactly as one process does.

A 2-stage GPipe, a 3-stage 1F1B with recomputation, and 2 pipelines x 2 stages with uneven batch
shares (12 and 4 of 16), of a small MLP, trained for 4 SGD steps with
``torch.distributed.pipelining`` on one node of ``trainplay train`` (torchrun's elastic agent,
gloo); the journal's losses and the final checkpoint's parameters must match single-process
training on the same samples within 1e-5 (relative).
"""

from __future__ import annotations

import json
import sys

import pytest
import torch
from torch import nn

from tests.data.datasets import Paced
from tests.integration.elastic import ROOT
from tests.integration.processes import run_bounded
from tests.integration.reference import final_state, fixed_plan, initial_model
from trainplay.plan.api import block_costs
from trainplay.plan.plan import Plan
from trainplay.runtime.journal import read_journal, trajectory
from trainplay.runtime.order import SampleOrder

MODEL, DATA, STEPS, LR, SEED = (
    "tests.data.tiny_models:deep_mlp",
    "tests.data.datasets:quick",
    4,
    0.1,
    3,
)
CLUSTER = ROOT / "tests" / "data" / "clusters" / "slow-quad.yaml"


def make_plan(bounds, shares, microbatches, schedule, recompute=False) -> Plan:
    names = block_costs(MODEL, input_shape=(12,)).names  # ('0', '2', '4', '6'): Linear+Tanh
    return fixed_plan(names, bounds, shares, microbatches, schedule, recompute)


def reference(global_batch: int):
    model = initial_model(MODEL, (12,), SEED)
    data = Paced(0.0)
    order = SampleOrder(dataset_size=len(data), global_batch=global_batch, seed=SEED)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for step in range(STEPS):
        picked = order.indices(step)
        loss = nn.functional.cross_entropy(model(data.inputs[picked]), data.labels[picked])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses, {f"model.{k}": v.detach() for k, v in model.state_dict().items()}


CASES = {
    "2 stages, GPipe": make_plan([(0, 1), (2, 3)], [16], 4, "gpipe"),
    "3 stages, 1F1B, recompute": make_plan([(0, 0), (1, 2), (3, 3)], [16], 4, "1f1b", True),
    "2 pipelines x 2 stages, shares 12+4": make_plan([(0, 1), (2, 3)], [12, 4], 2, "1f1b"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_pipeline_matches_one_process(name, tmp_path):
    plan = CASES[name]
    (tmp_path / "plan.json").write_text(json.dumps(plan.to_dict()))
    nproc = plan.replicas * len(plan.stages)
    args = [
        MODEL, "--data", DATA, "--global-batch", str(plan.global_batch), "--steps", str(STEPS),
        "--lr", str(LR), "--momentum", "0", "--seed", str(SEED), "--plan", str(tmp_path / "plan.json"),
        "--nproc-per-node", str(nproc), "--cluster", str(CLUSTER), "--no-progress",
        "--checkpoint-dir", str(tmp_path / "ckpt"), "--journal", str(tmp_path / "journal.jsonl"),
    ]  # fmt: skip
    done = run_bounded([sys.executable, "-m", "trainplay", "train", *args], timeout_s=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not done.left_behind
    losses, params = reference(plan.global_batch)
    events = read_journal(tmp_path / "journal.jsonl")
    steps = trajectory(events)
    assert [e["plan_id"] for e in steps] == [plan.plan_id] * STEPS
    # the plan names devices d0, d1, ... that the cluster does not: it is priced on the devices
    # of the ranks that run it (the file's own figure is 0)
    start = next(e for e in events if e["event"] == "start")
    assert all(r["predicted"]["fwd_s"] > 0 for r in start["ranks"])
    assert start["predicted_step_s"] > 0
    assert [e["loss"] for e in steps] == pytest.approx(losses, rel=1e-5)
    state = final_state(tmp_path / "ckpt", params, STEPS)
    for key, value in params.items():
        torch.testing.assert_close(state[key], value, rtol=1e-5, atol=1e-6)
