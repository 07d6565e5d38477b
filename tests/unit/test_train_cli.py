"""``trainplay train`` refuses bad input before it starts anything: one line, exit status 2."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.data.tiny_models import deep_mlp
from trainplay.cli import main
from trainplay.runtime import checkpoint
from trainplay.runtime.job import TrainJob

MLP = "tests.data.tiny_models:deep_mlp"
BASE = [MLP, "--input-shape", "12", "--classes", "4", "--global-batch", "24", "--steps", "3"]


def refused(capsys, *args: str) -> str:
    assert main(["train", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--data", "mnist"], "unknown data source 'mnist'"),
        (["--data", "digit"], "did you mean 'digits'"),
        (["--microbatches", "5"], "--microbatches 5 must divide --global-batch 24"),
        (["--nnodes", "2:3"], "several nodes need --rdzv-endpoint"),
        (["--nnodes", "3:2"], "1 <= MIN <= MAX"),
        (["--rdzv-endpoint", "nohost.invalid:29400"], "cannot resolve the rendezvous host"),
        (["--rdzv-endpoint", "127.0.0.1"], "--rdzv-endpoint: expected HOST:PORT"),
        (["--classes", "40"], "needs at least 40 logits"),
        (["--input-shape", "3,8,8"], "does not take samples of shape [3, 8, 8]"),
        (["--max-restarts", "-1"], "--max-restarts must be >= 0"),
        (["--profile-steps", "5"], "--profile-steps takes A:B with 0 <= A < B"),
        (["--profile-steps", "5:5", "--journal", "j"], "--profile-steps takes A:B"),
        (["--profile-steps", "a:b", "--journal", "j"], "e.g. --profile-steps 10:15"),
        (["--profile-steps", "1:3"], "--profile-steps needs a place for its traces"),
    ],
)
def test_bad_flags(capsys, extra, message):
    assert message in refused(capsys, *BASE, *extra)


def test_unreachable_endpoint(capsys):
    # nothing hosts a c10d store at 10.255.255.1 (a proxy here may still accept the connection)
    err = refused(capsys, *BASE, "--nnodes", "2:3", "--rdzv-endpoint", "10.255.255.1:29400")
    assert "cannot reach the rendezvous endpoint 10.255.255.1:29400" in err


def test_a_decoder_takes_seq_len_not_input_shape(capsys):
    err = refused(capsys, "gpt2-small", "--input-shape", "8", "--global-batch", "4")
    assert "gpt2-small is a language model: give --seq-len, not --input-shape" in err


def test_steps_and_epochs_exclude_each_other(capsys):
    assert main(["train", *BASE, "--epochs", "2"]) == 2


def test_checkpoint_directory_of_another_model(capsys, tmp_path):
    model = deep_mlp()
    info = checkpoint.CheckpointInfo(
        model="resnet18", block_names=("conv1", "layer1"), step=5, samples_seen=120,
        global_batch=24, seed=0, optimizer="sgd", plan_id="abc", devices=("d0",),
        world_size=1, written_at_s=0.0,
    )  # fmt: skip
    state = {f"model.{k}": v.detach() for k, v in model.state_dict().items()}
    checkpoint.save(tmp_path / "ckpt", state, info)
    err = refused(capsys, *BASE, "--checkpoint-dir", str(tmp_path / "ckpt"))
    assert "resnet18" in err and "--checkpoint-dir" in err


def test_plan_for_another_global_batch(capsys, tmp_path):
    plan = {
        "stages": [{"blocks": [0, 6], "devices": ["d0"], "batch_shares": [16]}],
        "microbatches": 2,
        "schedule": "gpipe",
        "predicted_iteration_s": 0.1,
    }
    (tmp_path / "plan.json").write_text(json.dumps({"plan": plan}))
    err = refused(capsys, *BASE, "--plan", str(tmp_path / "plan.json"))
    assert "global batch of 16" in err and "--global-batch 24" in err


def test_the_worker_gets_the_job_the_user_typed():
    import argparse

    from trainplay.runtime.job import add_job_arguments

    job = TrainJob(
        model=MLP, input_shape=(1, 8, 8), global_batch=24, steps=3, optimizer="adam",
        collective_timeout_s=5.0, progress=False, profile_steps=(2, 4), profile_dir=Path("t"),
        calibration=False,
    )  # fmt: skip
    parser = argparse.ArgumentParser()
    add_job_arguments(parser)
    assert TrainJob.from_args(parser.parse_args(job.to_argv())) == job


def test_nothing_intact_to_restore(capsys, tmp_path):
    model = deep_mlp()
    state = {f"model.{k}": v.detach() for k, v in model.state_dict().items()}
    names = ("0", "1", "2", "3")
    info = checkpoint.CheckpointInfo(
        model=MLP, block_names=names, step=3, samples_seen=72, global_batch=24, seed=0,
        optimizer="sgd", plan_id="abc", devices=("d0",), world_size=1, written_at_s=0.0,
    )  # fmt: skip
    path = checkpoint.save(tmp_path / "ckpt", state, info)
    (path / "manifest.json").unlink()
    err = refused(capsys, *BASE, "--checkpoint-dir", str(tmp_path / "ckpt"))
    assert f"no intact checkpoint in {tmp_path / 'ckpt'} (step-00000003: it has no manifest" in err


def test_rendezvous_on_a_port_in_use(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["rendezvous", "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"cannot serve the rendezvous on 127.0.0.1:{port}" in err and "--port" in err
