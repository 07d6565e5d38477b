"""Pipelines over gloo give the same training as one process on the same samples.

A 2-stage and a 3-stage pipeline, and 2 pipelines x 2 stages with uneven batch shares (12 and 4
of 16), of a small MLP, trained for 4 SGD steps with ``torch.distributed.pipelining`` under
torchrun's elastic agent; losses and final parameters must match single-process training on the
same samples within 1e-5 (relative).
"""

from __future__ import annotations

import json
import sys

import pytest
import torch
from torch import nn

from tests.data.tiny_models import deep_mlp
from tests.integration.processes import run_bounded
from trainplay.plan.plan import Plan, PlanStage
from trainplay.runtime.order import SampleOrder
from trainplay.runtime.worker import synthetic_data

MODEL, SHAPE, CLASSES, SIZE, STEPS, LR, SEED = (
    "tests.data.tiny_models:deep_mlp",
    (12,),
    4,
    48,
    4,
    0.1,
    3,
)


def make_plan(bounds, shares, microbatches, schedule, recompute=False) -> Plan:
    names = tuple(name for name, _ in deep_mlp().named_children())
    replicas, stages = len(shares), len(bounds)
    return Plan(
        stages=tuple(
            PlanStage(
                blocks=b,
                devices=tuple(f"d{r * stages + s}" for r in range(replicas)),
                batch_shares=tuple(shares),
                recompute=recompute and s == 0,
            )
            for s, b in enumerate(bounds)
        ),
        microbatches=microbatches,
        schedule=schedule,
        predicted_iteration_s=0.0,
        block_names=names,
    )


def reference(global_batch: int):
    torch.manual_seed(SEED)
    model = deep_mlp()
    inputs, labels = synthetic_data(SIZE, SHAPE, CLASSES, SEED)
    order = SampleOrder(dataset_size=SIZE, global_batch=global_batch, seed=SEED)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for step in range(STEPS):
        picked = order.indices(step)
        loss = nn.functional.cross_entropy(model(inputs[picked]), labels[picked])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses, {k: v.detach() for k, v in model.named_parameters()}


CASES = {
    "2 stages, GPipe": make_plan([(0, 2), (3, 6)], [16], 4, "gpipe"),
    "3 stages, 1F1B, recompute": make_plan([(0, 1), (2, 4), (5, 6)], [16], 4, "1f1b", True),
    "2 pipelines x 2 stages, shares 12+4": make_plan([(0, 3), (4, 6)], [12, 4], 2, "1f1b"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_pipeline_matches_one_process(name, tmp_path):
    plan = CASES[name]
    (tmp_path / "plan.json").write_text(json.dumps(plan.to_dict()))
    nproc = plan.replicas * len(plan.stages)
    args = [
        "--model", MODEL, "--plan", str(tmp_path / "plan.json"), "--input-shape", "12",
        "--classes", str(CLASSES), "--dataset-size", str(SIZE), "--steps", str(STEPS),
        "--lr", str(LR), "--seed", str(SEED), "--out", str(tmp_path / "out"),
    ]  # fmt: skip
    code = (
        "import sys; from trainplay.launch import run_workers; "
        f"run_workers('trainplay.runtime.worker', sys.argv[1:], nproc={nproc}, show_progress=False)"
    )
    done = run_bounded([sys.executable, "-c", code, *args], timeout_s=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not done.left_behind
    losses, params = reference(plan.global_batch)
    merged: dict[str, torch.Tensor] = {}
    for rank in range(nproc):
        part = torch.load(tmp_path / "out" / f"rank{rank}.pt", weights_only=True)
        for key, value in part["params"].items():
            if key in merged:  # another replica of the same stage: replicas must agree
                torch.testing.assert_close(value, merged[key], rtol=1e-6, atol=1e-7)
            merged[key] = value
        if len(part["losses"]):
            assert part["losses"].tolist() == pytest.approx(losses, rel=1e-5)
    assert merged.keys() == params.keys()
    for key, value in params.items():
        torch.testing.assert_close(merged[key], value, rtol=1e-5, atol=1e-6)
