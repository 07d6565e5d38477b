"""Elastic training with ``trainplay train`` nodes on localhost (gloo): leave, join, crash mid-write.

Every node is a ``trainplay train`` agent of one process in its own process group. The data
source reads slowly (tests.data.datasets:paced, 2 ms per sample; the decoder's head sleeps as
long) so a node can be killed mid-run on any machine; the cluster file's slow device makes the
planner use every node present. Each test checks the final trajectory in the journal (every global
sample once, in order) and the final parameters against one process trained on the same samples.
"""

from __future__ import annotations

import time
from itertools import pairwise
from pathlib import Path

import pytest
import torch
from torch import nn

from tests.data.datasets import Paced
from tests.data.tiny_models import deep_mlp
from tests.integration.elastic import SLOW_CLUSTER, dump, free_port, nodes, wait_for
from tests.integration.reference import final_state, initial_model, train_language_model
from trainplay.runtime import checkpoint
from trainplay.runtime.journal import read_journal, trajectory
from trainplay.runtime.order import SampleOrder

MODEL, DATA = "tests.data.tiny_models:deep_mlp", "tests.data.datasets:paced"
BATCH, STEPS, EVERY, LR, MOMENTUM, SEED = 24, 60, 5, 0.05, 0.9, 7


CLASSIFIER = [MODEL, "--data", DATA, "--cluster", str(SLOW_CLUSTER)]
LOOP_TOLERANCE_S = 0.01
"""How far a step's ``step_s`` may be from the time between its journal line and the one before
(the two clocks are read a JSON line apart)."""
# the small devices make the planner cut the decoder into stages: its tied embedding is on two
# ranks, and moves when the plan changes from 3 stages to 2
SMALL_CLUSTER = SLOW_CLUSTER.with_name("slow-small-cpu.yaml")
DECODER = [
    "tests.data.tiny_models:paced_decoder",
    "--seq-len",
    "16",
    "--cluster",
    str(SMALL_CLUSTER),
]


def job_args(
    tmp: Path, nnodes: str, port: int, steps: int = STEPS, model: list[str] = CLASSIFIER
) -> list[str]:
    return [
        *model, "--global-batch", str(BATCH), "--steps", str(steps),
        "--lr", str(LR), "--momentum", str(MOMENTUM), "--seed", str(SEED),
        "--checkpoint-dir", str(tmp / "ckpt"), "--checkpoint-every", str(EVERY),
        "--journal", str(tmp / "journal.jsonl"),
        "--nnodes", nnodes, "--rdzv-endpoint", f"127.0.0.1:{port}", "--run-id", "t",
        "--max-restarts", "3", "--no-progress",
    ]  # fmt: skip


def reference(steps: int) -> dict[str, torch.Tensor]:
    """One process, SGD with momentum on the job's samples in the job's order."""
    model = initial_model(MODEL, (12,), SEED)
    data = Paced(0.0)
    order = SampleOrder(dataset_size=len(data), global_batch=BATCH, seed=SEED)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    for step in range(steps):
        picked = order.indices(step)
        loss = nn.functional.cross_entropy(model(data.inputs[picked]), data.labels[picked])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return {f"model.{k}": v.detach() for k, v in model.state_dict().items()}


def final_parameters(directory: Path, steps: int) -> dict[str, torch.Tensor]:
    found = checkpoint.latest(directory)
    assert found is not None
    path, info = found
    assert info.step == steps
    state = {f"model.{k}": torch.empty_like(v) for k, v in deep_mlp().state_dict().items()}
    checkpoint.load(path, state)
    return state


def check_trajectory(journal: Path, steps: int) -> list[dict]:
    events = read_journal(journal)
    final = trajectory(events)
    assert [e["step"] for e in final] == list(range(steps)), dump(journal)
    position = 0
    for e in final:  # every global sample exactly once, in order
        assert e["samples"] == [position, position + BATCH]
        position += BATCH
    check_journal_complete(events)
    return events


def check_journal_complete(events: list[dict]) -> None:
    """Every worker group after the first says why it starts where it does, and ``done`` counts
    the job's whole wall time and every step trained twice."""
    starts = [k for k, e in enumerate(events) if e["event"] == "start"]
    for a, b in list(pairwise([*starts, len(events)]))[1:]:  # every group after the first
        said = {e["event"] for e in events[a:b]}
        assert said & {"restore", "replan"}, events[a:b]
    done = events[-1]
    assert done["event"] == "done", done
    trained = [e["step"] for e in events if e["event"] == "step"]
    assert done["steps_redone"] == len(trained) - len(set(trained))
    assert done["seconds"] >= done["time_s"] - events[starts[0]]["time_s"] > 0
    assert done["group_seconds"] <= done["seconds"]


def check_step_times_are_the_loop(events: list[dict]) -> None:
    """The journal's ``step_s`` is the training loop's period: between two step lines of one
    worker group it matches their journal times, a synchronous checkpoint's stall (tens of
    milliseconds here) included in the step after it."""
    last, saved, after_saves = None, False, 0
    for e in events:
        if e["event"] == "start":  # a new worker group
            last, saved = None, False
        elif e["event"] == "checkpoint":
            saved = True
        elif e["event"] == "step":
            if last is not None:
                gap_s = e["time_s"] - last["time_s"]
                assert abs(e["step_s"] - gap_s) < LOOP_TOLERANCE_S, (last, e)
                after_saves += saved
            last, saved = e, False
    assert after_saves, [e["event"] for e in events]


def check_parameters(tmp: Path, steps: int) -> None:
    got, want = final_parameters(tmp / "ckpt", steps), reference(steps)
    assert got.keys() == want.keys()
    for key in want:
        torch.testing.assert_close(got[key], want[key], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("model", ["classifier", "decoder"])
def test_a_node_killed_mid_run_the_others_finish(tmp_path, model):
    journal = tmp_path / "journal.jsonl"
    port = free_port()
    args = job_args(tmp_path, "2:3", port, model=DECODER if model == "decoder" else CLASSIFIER)
    if model == "classifier":  # the classifier's checkpoints are written asynchronously
        args.append("--checkpoint-async")
    with nodes(tmp_path, args) as job:
        job.start_host(port)
        job.start()
        job.start()
        seen = wait_for(journal, lambda e: e["event"] == "step" and e["step"] >= 12, 120)
        assert seen is not None and seen["world_size"] == 3, dump(journal) + job.log(0)
        job.kill(2)
        codes = [job.wait(k, 240) for k in (0, 1)]
        assert codes == [0, 0], job.log(0) + job.log(1)
        assert not any(job.left_behind(k) for k in range(3))
    events = check_trajectory(journal, STEPS)
    restore = next(e for e in events if e["event"] == "restore")
    assert restore["step"] % EVERY == 0 and restore["step"] <= seen["step"] + 1
    assert restore["recovery_s"] is not None and restore["recovery_s"] > 0
    saves = [e for e in events if e["event"] == "checkpoint"]
    assert saves and all(0 <= e["stall_s"] <= e["seconds"] for e in saves)
    replan = next(e for e in events if e["event"] == "replan")
    assert replan["reason"] == "leave" and replan["switch"]
    if model == "decoder":
        starts = [e["stages"] for e in events if e["event"] == "start"]
        assert starts[0] == 3 and starts[-1] == 2, starts
    last = trajectory(events)[-1]
    assert last["world_size"] == 2 and events[-1]["event"] == "done"
    if model == "decoder":
        check_step_times_are_the_loop(events)
        check_decoder_parameters(tmp_path, STEPS)
    else:
        check_parameters(tmp_path, STEPS)


def check_decoder_parameters(tmp: Path, steps: int) -> None:
    """Final parameters of the decoder job against one process on the same token windows (the
    paced decoder has the tiny decoder's names, so its initial values)."""
    _, want = train_language_model(
        "tests.data.tiny_models:tiny_decoder", seq_len=16, vocab=64, batch=BATCH, steps=steps,
        seed=SEED, lr=LR, momentum=MOMENTUM,
    )  # fmt: skip
    got = final_state(tmp / "ckpt", want, steps)
    for key in want:
        torch.testing.assert_close(got[key], want[key], rtol=1e-4, atol=1e-5)


def test_a_node_lost_before_the_first_checkpoint_is_journaled(tmp_path):
    """No checkpoint yet: the group restarts from step 0, and the journal still says why (a
    ``leave`` re-plan and a ``restore`` from nothing); ``done`` counts the steps trained twice."""
    journal = tmp_path / "journal.jsonl"
    port = free_port()
    args = [*job_args(tmp_path, "2:3", port, 30), "--checkpoint-every", "1000"]
    with nodes(tmp_path, args) as job:
        job.start_host(port)
        job.start()
        job.start()
        seen = wait_for(journal, lambda e: e["event"] == "step" and e["step"] >= 6, 120)
        assert seen is not None and seen["world_size"] == 3, dump(journal) + job.log(0)
        job.kill(2)
        codes = [job.wait(k, 240) for k in (0, 1)]
        assert codes == [0, 0], job.log(0) + job.log(1)
        assert not any(job.left_behind(k) for k in range(3))
    events = check_trajectory(journal, 30)
    replan = next(e for e in events if e["event"] == "replan")
    assert replan["reason"] == "leave" and replan["switch"], replan
    restore = next(e for e in events if e["event"] == "restore")
    assert restore["step"] == 0 and restore["checkpoint"] is None
    assert events[-1]["steps_redone"] >= seen["step"] + 1
    check_parameters(tmp_path, 30)


def test_a_node_joins_mid_run_and_is_taken_in(tmp_path):
    journal = tmp_path / "journal.jsonl"
    steps = 200  # long enough for a third node to start and join on a slow machine
    port = free_port()
    # priced as the cluster file says (slow on purpose, so that the join pays): measured speeds
    # would show that a third node does not pay for this small model
    args = [*job_args(tmp_path, "2:3", port, steps), "--no-calibration"]
    with nodes(tmp_path, args) as job:
        job.start_host(port)
        job.start()
        seen = wait_for(journal, lambda e: e["event"] == "step" and e["step"] >= 8, 120)
        assert seen is not None and seen["world_size"] == 2, dump(journal) + job.log(0)
        job.start()
        wait_for(journal, lambda e: e["event"] == "step" and e["world_size"] == 3, 120)
        job.snapshot()
        codes = [job.wait(k, 240) for k in range(3)]
        assert codes == [0, 0, 0], job.log(0) + job.log(2)
        assert not any(job.left_behind(k) for k in range(3))
    events = check_trajectory(journal, steps)
    replan = next(e for e in events if e["event"] == "replan")
    assert replan["reason"] == "join" and replan["switch"], replan
    # the agents stop the workers with SIGTERM: they finish the step in flight and checkpoint it
    trained = [e["step"] for e in events if e["event"] == "step"]
    assert len(trained) == len(set(trained)) == steps, "a step was redone after the join"
    stop = next(e for e in events if e["event"] == "stop")
    assert stop["signal"] == "SIGTERM" and stop["checkpoint"].endswith(f"step-{stop['step']:08d}")
    assert trajectory(events)[-1]["world_size"] == 3
    check_parameters(tmp_path, steps)


def test_killed_while_writing_a_checkpoint_resumes_from_the_previous(tmp_path):
    """SIGKILL a node while a checkpoint folder is still ``.partial``: the job resumes from the
    last complete checkpoint and ends as if nothing happened."""
    journal, ckpt = tmp_path / "journal.jsonl", tmp_path / "ckpt"
    port = free_port()
    with nodes(tmp_path, job_args(tmp_path, "2:3", port)) as job:
        job.start_host(port)
        job.start()
        job.start()
        first = wait_for(journal, lambda e: e["event"] == "checkpoint", 120)
        assert first is not None, dump(journal) + job.log(0)
        deadline, partial = time.monotonic() + 120, []
        while time.monotonic() < deadline and not partial:
            partial = [p for p in ckpt.glob("step-*.partial") if _step(p) > first["step"]]
            time.sleep(0.001)
        assert partial, dump(journal)
        job.kill(2)
        writing = _step(partial[0])
        codes = [job.wait(k, 240) for k in (0, 1)]
        assert codes == [0, 0], job.log(0) + job.log(1)
        assert not any(job.left_behind(k) for k in range(3))
    events = check_trajectory(journal, STEPS)
    restores = [e for e in events if e["event"] == "restore"]
    # the previous checkpoint, or the one being written if its rename beat the kill
    assert restores and restores[0]["step"] in (writing - EVERY, writing), dump(journal)
    check_parameters(tmp_path, STEPS)


def _step(path: Path) -> int:
    return int(path.name.split("-")[1].split(".")[0])
