"""``trainplay`` as a user meets it: output formats, and one-line errors with exit status 2."""

import csv
import io
import json
import subprocess
import sys

import pytest
import torch

from trainplay.cli import main


def run(capsys, *argv):
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_table_has_blocks_and_totals(capsys):
    status, out, _ = run(capsys, "profile", "resnet18", "--batch", "4")
    assert status == 0
    assert "layer4.1" in out and "total" in out and "resnet18 · batch 4" in out


def test_json_is_the_contract(capsys):
    status, out, _ = run(capsys, "profile", "resnet18", "--format", "json", "--dtype", "bf16")
    assert status == 0
    data = json.loads(out)
    assert (
        data["model"] == "resnet18"
        and data["dtype"] == "bf16"
        and data["input_shape"] == [3, 224, 224]
    )
    assert data["totals"]["params"] == 11689512
    assert data["totals"]["param_bytes"] == 2 * 11689512  # bf16
    assert [layer["name"] for layer in data["layers"]][:2] == ["conv1", "layer1.0"]


def test_csv_and_out_file(capsys, tmp_path):
    target = tmp_path / "sub" / "p.csv"
    status, out, err = run(capsys, "profile", "alexnet", "--format", "csv", "--out", str(target))
    assert status == 0
    assert f"wrote {target}" in err
    rows = list(csv.DictReader(io.StringIO(out, newline="")))
    assert rows[-1]["name"] == "total"
    with open(target, newline="") as written:
        assert written.read() == out


def test_granularity_ops_and_modules(capsys):
    _, out, _ = run(capsys, "profile", "resnet18", "--granularity", "ops", "--format", "json")
    names = [layer["name"] for layer in json.loads(out)["layers"]]
    assert (
        "conv1:aten.convolution" in names
        and "layer1.0.bn1:aten.native_batch_norm_backward" in names
    )
    _, out, _ = run(
        capsys,
        "profile",
        "resnet18",
        "--granularity",
        "modules",
        "--depth",
        "2",
        "--format",
        "json",
    )
    names = [layer["name"] for layer in json.loads(out)["layers"]]
    assert names[:2] == ["conv1", "bn1"] and "layer2.1" in names and "(model)" in names


def test_user_factory_and_top(capsys):
    status, out, _ = run(
        capsys, "profile", "tests.data.user_models:tiny_mlp", "--input-shape", "3,4", "--top", "1"
    )
    assert status == 0
    assert "lighter rows" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["profile", "resnet5"], "unknown model 'resnet5'; close matches: resnet50"),
        (["profile", "alexnet", "--input-shape", "3,x"], "--input-shape takes positive integers"),
        (["profile", "alexnet", "--input-shape", "3,0,8"], "--input-shape takes positive integers"),
        (["profile", "alexnet", "--input-shape", "3,16,16"], "at layer 'features.5' (MaxPool2d)"),
        (["profile", "resnet18", "--input-shape", "1,64,64"], "at layer 'conv1' (Conv2d)"),
        (
            ["profile", "tests.data.user_models:broken", "--input-shape", "3"],
            "factory 'tests.data.user_models:broken' raised ValueError: checkpoint path not configured",
        ),
        (
            ["profile", "tests.data.user_models:not_a_module", "--input-shape", "3"],
            "expected a torch.nn.Module",
        ),
        (
            ["profile", "tests.data.user_models:missing", "--input-shape", "3"],
            "has no attribute 'missing'",
        ),
        (
            ["profile", "no_such_pkg.mod:f", "--input-shape", "3"],
            "cannot import module 'no_such_pkg.mod'",
        ),
        (
            ["profile", "tests.data.user_models:tiny_mlp"],
            "give the shape of one sample with --input-shape",
        ),
        (["profile", "resnet18", "--seq-len", "12"], "--seq-len is for token models"),
        (["profile", "gpt2-small", "--seq-len", "4096"], "exceeds context 1024"),
        (["profile", "resnet18", "--out", "x.txt"], "--out must end in .json or .csv"),
    ],
)
def test_user_mistakes_are_one_line_and_exit_2(capsys, argv, message):
    status, _, err = run(capsys, *argv)
    assert status == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert message in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_a_gpu_is_a_usage_error(capsys):
    status, _, err = run(capsys, "profile", "resnet18", "--device", "cuda")
    assert status == 2 and "--device cuda needs a CUDA device" in err


@pytest.mark.parametrize(
    "argv",
    [["profile", "resnet18", "--batch", "0"], ["profile", "resnet18", "--dtype", "fp64"], ["nope"]],
)
def test_argument_errors_are_one_line_and_exit_2(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err


def test_console_script_runs_as_a_module():
    done = subprocess.run(
        [sys.executable, "-m", "trainplay", "profile", "squeezenet1_0", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["totals"]["params"] == 1248424
    bad = subprocess.run(
        [sys.executable, "-m", "trainplay", "profile", "squeezenet"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "squeezenet1_0" in bad.stderr


def test_out_extension_names_the_format(capsys, tmp_path):
    """``--out r.json`` writes JSON and ``--out r.html`` HTML without --format (analyze)."""
    base = ["analyze", "resnet18", "--cluster", "lab", "--parallel", "dp=2"]
    assert main([*base, "--out", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["model"] == "resnet18"
    assert main([*base, "--out", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    capsys.readouterr()
