"""Every bad input a user can give ends the same way: exit status 2, one line on stderr of the form
``trainplay[ command]: error: ...`` that says what was wrong and what to do, nothing on stdout,
and no traceback.

The cases are those issue 15 lists, then more of the same families: binary files, directories,
devices, ``/proc`` and ``/sys`` paths (read-only even for root, which ``chmod`` is not), huge and
negative numbers, malformed specs, unknown flags and values. Each runs in-process through
:func:`trainplay.cli.main`; a few run as real subprocesses (the console script as a user meets it).
``NEEDLE`` is a piece of the message: the part that names the problem or the fix.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from trainplay.cli import main

ROOT = Path(__file__).parents[2]
LINE = re.compile(r"^trainplay( [a-z]+)*: error: \S.*$")
DIGITS = "examples.digits_mlp:model"  # 64 inputs, 10 classes: the README's model
BAD_DECODER = "tests.data.tiny_models:bad_shape_decoder"  # returns [batch, 64], not logits
MLP = ["tests.data.tiny_models:deep_mlp", "--input-shape", "12", "--classes", "4"]

# (argv, needle); {bin} {dir} {json_dir} {empty} {yaml_list} {negative} {infinite} {traces}
# {empty_json} {file} are files made by the fixture below.
ISSUE = [  # the inputs issue 15 lists (its llama-7b "does not fit" has a test of its own below)
    (["hw", "show", "{bin}"], "is not UTF-8 text"),
    (["analyze", "resnet50", "--cluster", "{bin}"], "is not UTF-8 text"),
    (["plan", "resnet50", "--cluster", "{bin}", "--global-batch", "8"], "give a cluster YAML"),
    (["analyze", "resnet50", "--cluster", "lab", "--plots", "/proc/plots"], "choose another"),
    (
        [
            "analyze",
            "resnet50",
            "--cluster",
            "lab",
            "--parallel",
            "dp=2,pp=2,mb=16",
            "--batch",
            "8",
        ],
        "16 micro-batches of 8/16 samples",
    ),
    (
        ["analyze", "resnet50", "--cluster", "lab", "--parallel", "dp=2,pp=2,mb=3", "--batch", "8"],
        "give mb= as a divisor of 8",
    ),
    (["analyze", "resnet50", "--cluster", "lab", "--parallel", "dp=2,dp=4"], "dp twice"),
    (
        ["plan", "resnet50", "--cluster", "lab", "--global-batch", "64", "--epochs", "3"],
        "--epochs needs --dataset-size",
    ),
    (
        ["train", DIGITS, "--data", "digits", "--global-batch", "5000"],
        "more than the 1797 samples of --data digits",
    ),
    (
        ["analyze", "resnet50", "--cluster", "lab", "--format", "html", "--out", "r.json"],
        "name it r.html",
    ),
    (["hw", "measure", "--out", "/proc/peaks.yaml"], "no file can be created in '/proc'"),
    (["hw", "measure", "--out", "/sys/kernel/peaks.yaml"], "choose another place"),
    (["train", *MLP, "--global-batch", "8", "--rdzv-endpoint", "host:99999"], "out of range"),
    (["hw", "measure", "--rdzv-endpoint", "host:99999"], "ports go from 1 to 65535"),
    (
        ["plan", "resnet50", "--cluster", "lab", "--global-batch", "10000000"],
        "the activations of the batch",
    ),
]
MORE = [
    # --- cluster files and names
    (["hw", "show", "{dir}"], "is a directory"),
    (["hw", "show", "/proc/self/mem"], "cannot read cluster file"),
    (["hw", "show", "/dev/zero"], "not a regular file"),
    (["hw", "show", "/proc/cpuinfo"], "not valid YAML"),
    (["hw", "show", "{empty}"], "is empty; start from a preset"),
    (["hw", "show", "{yaml_list}"], "expected a mapping"),
    (["hw", "show", "{negative}"], "must be > 0"),
    (["hw", "show", "{infinite}"], "must be a finite number"),
    (["hw", "show", "lba"], "close matches: lab"),
    (["hw", "show", "lab.yaml"], "did you mean the preset lab?"),
    (["hw", "show", "nowhere/lab.yaml"], "does not exist"),
    (["hw", "show", "lab", "--dtype", "fp99"], "invalid choice: 'fp99'"),
    (["hw", "show", "lab", "--format", "xml"], "invalid choice: 'xml'"),
    (["analyze", "resnet50", "--cluster", "nope"], "unknown cluster 'nope'"),
    (["analyze", "resnet50", "--cluster", ""], "--cluster is empty"),
    # --- hw measure
    (["hw", "measure", "--nproc", "100000"], "more than 8 per CPU"),
    (["hw", "measure", "--nproc", "-1"], "expected a positive integer, got -1"),
    (["hw", "measure", "--nnodes", "0"], "1 <= MIN <= MAX"),
    (["hw", "measure", "--nnodes", "3:2"], "1 <= MIN <= MAX"),
    (["hw", "measure", "--nnodes", "x:y"], "N or MIN:MAX"),
    (["hw", "measure", "--dtype", "fp99"], "--dtype takes fp32, bf16, fp16"),
    (["hw", "measure", "--out", "peaks.txt"], "give a .yaml file"),
    (["hw", "measure", "--rdzv-endpoint", "nohost"], "expected HOST:PORT"),
    (["hw", "measure", "--rdzv-endpoint", "host:port"], "is not a number"),
    # --- profile
    (["profile", "resnet50", "--batch", "0"], "expected a positive integer, got 0"),
    (["profile", "resnet50", "--batch", "-3"], "expected a positive integer, got -3"),
    (["profile", "resnet50", "--batch", "99999999999999999999"], "below 2^63"),
    (["profile", "resnet50", "--batch", "9223372036854775807"], "give a smaller --batch"),
    (["profile", "resnet50", "--batch", "1e3"], "expected a positive integer, got '1e3'"),
    (["profile", "resnet50", "--input-shape", "3,-1,2"], "positive integers"),
    (["profile", "resnet50", "--input-shape", "3,x"], "positive integers"),
    (["profile", "resnet50", "--input-shape", "3,99999999999,99999999999"], "smaller --batch"),
    (["profile", "resnet50", "--seq-len", "8"], "takes --input-shape"),
    (["profile", "tests.data.tiny_models:deep_mlp", "--seq-len", "8"], "does not take token ids"),
    (["plan", BAD_DECODER, "--seq-len", "8", "--cluster", "lab", "--global-batch", "8"], "logits"),
    (["profile", "resnet5"], "close matches: resnet50"),
    (["profile", "nomodule.x:y"], "cannot import module 'nomodule.x'"),
    (["profile", "resnet50", "--out", "/proc/p.json"], "choose another place"),
    (["profile", "resnet50", "--out", "r.txt"], "--out must end in .json or .csv"),
    (["profile", "resnet50", "--depth", "2"], "--depth applies to --granularity modules"),
    (["profile", "resnet50", "--dtype", "fp64"], "invalid choice: 'fp64'"),
    (["profile", "resnet50", "--bogus"], "unrecognized arguments: --bogus"),
    (["profile"], "the following arguments are required: model"),
    (["nope"], "invalid choice: 'nope'"),
    # --- analyze
    (["analyze", "resnet50", "--cluster", "lab", "--parallel", "dp=0"], "at least 1"),
    (["analyze", "resnet50", "--cluster", "lab", "--parallel", "tp=2"], "dp=N,pp=S[,mb=M]"),
    (["analyze", "resnet50", "--cluster", "lab", "--parallel", "dp=²"], "whole numbers"),
    (
        ["analyze", "resnet50", "--cluster", "lab", "--parallel", "pp=100", "--batch", "100"],
        "needs 100 workers",
    ),
    (
        ["analyze", "resnet50", "--cluster", "lab", "--parallel", "pp=3", "--batch", "8"],
        "pp=3 (one micro-batch per stage)",
    ),
    (["analyze", "resnet50", "--cluster", "lab", "--out", "r.txt"], "name the file .json"),
    (
        ["analyze", "resnet50", "--cluster", "lab", "--format", "table", "--out", "r.json"],
        "add --format json or html",
    ),
    (["analyze", "resnet50", "--cluster", "lab", "--plots", "{file}"], "is a file, not a folder"),
    (["analyze", "resnet50", "--cluster", "lab", "--out", "/sys/kernel/r.json"], "another place"),
    (["analyze", "resnet50", "--cluster", "lab", "--out", "{json_dir}"], "is a directory"),
    (["analyze", "resnet50", "--cluster", "lab", "--out", "{dir}"], "name the file .json"),
    (["analyze", "resnet50"], "required: --cluster"),
    # --- plan
    (["plan", "resnet50", "--cluster", "lab", "--global-batch", "0"], "positive integer"),
    (
        ["plan", "resnet50", "--cluster", "lab", "--global-batch", "12", "--microbatches", "8"],
        "must divide the global batch 12",
    ),
    (["plan", "resnet50", "--cluster", "lab", "--global-batch", "8", "--out", "p.html"], ".json"),
    (
        ["plan", "resnet50", "--cluster", "lab", "--global-batch", "8", "--trace", "/proc/t.json"],
        "choose another place",
    ),
    (
        "plan resnet50 --cluster lab --global-batch 8 --format table --out p.json".split(),
        "drop --format table",
    ),
    (["plan", "resnet50", "--cluster", "lab"], "required: --global-batch"),
    # --- diagnose
    (["diagnose", "{dir}"], "holds no trace files"),
    (["diagnose", "{file}"], "is neither a trace folder nor a journal"),
    (["diagnose", "/proc/nonexistent"], "does not exist"),
    (["diagnose", "{traces}"], "not a PyTorch profiler trace"),
    (["diagnose", "{dir}", "--margin", "lots"], "expected a number such as 0.1"),
    (["diagnose", "{dir}", "--margin", "1e300"], "from 0 to 10, got 1e300"),
    # --- validate
    (["validate", "resnet18", "--batch", "0"], "positive integer"),
    (["validate", "resnet18", "--batch", "2", "--nproc", "100000"], "more than 8 per CPU"),
    # --- train
    (["train", *MLP, "--global-batch", "8", "--lr", "-1"], "finite number > 0, got -1"),
    (["train", *MLP, "--global-batch", "8", "--lr", "inf"], "finite number > 0, got inf"),
    (["train", *MLP, "--global-batch", "8", "--seed", "-1"], "seed from 0 to 2^63 - 1"),
    (["train", *MLP, "--global-batch", "8", "--nproc-per-node", "0"], "positive integer"),
    (["train", *MLP, "--global-batch", "8", "--steps", "3", "--epochs", "2"], "not allowed"),
    (["train", *MLP, "--global-batch", "8", "--plan", "{bin}"], "is not JSON"),
    (["train", *MLP, "--global-batch", "8", "--plan", "{empty_json}"], "trainplay plan MODEL"),
    (["train", *MLP, "--global-batch", "8", "--checkpoint-dir", "/proc/ck"], "another place"),
    (["train", *MLP, "--global-batch", "8", "--checkpoint-dir", "{file}"], "not a folder"),
    (["train", *MLP, "--global-batch", "8", "--journal", "/proc/j.jsonl"], "cannot write"),
    (["train", *MLP, "--global-batch", "8", "--cluster", "{bin}"], "is not UTF-8 text"),
    (["train", *MLP, "--global-batch", "8", "--data", "nosuch"], "unknown data source"),
    (["train", *MLP, "--global-batch", "8", "--rdzv-endpoint", ":29400"], "expected HOST:PORT"),
    (["train", *MLP, "--global-batch", "8", "--microbatches", "5"], "pick a divisor"),
    (["train", *MLP, "--global-batch", "2000"], "more than the 1024 samples"),
    (["train", DIGITS, "--data", "digits", "--global-batch", "8", "--input-shape", "3,3"], "64"),
]
CASES = ISSUE + MORE


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("bad")
    made = {
        "bin": tmp / "binary.yaml",
        "dir": tmp / "folder",
        "empty": tmp / "empty.yaml",
        "yaml_list": tmp / "list.yaml",
        "negative": tmp / "negative.yaml",
        "infinite": tmp / "infinite.yaml",
        "empty_json": tmp / "empty.json",
        "file": tmp / "plain.txt",
        "traces": tmp / "traces",
        "json_dir": tmp / "out.json",
    }
    made["bin"].write_bytes(bytes(range(128, 256)) * 4)
    made["dir"].mkdir()
    made["json_dir"].mkdir()
    made["empty"].write_text("")
    made["yaml_list"].write_text("- a\n- b\n")
    device = "{name: gpu, peak_flops: {fp32: 1e12}, mem_bw_bps: %s, mem_bytes: 1e9}"
    node = "name: x\nnodes: [{name: a, devices: [" + device + "]}]\n"
    made["negative"].write_text(node % "-1e9")
    made["infinite"].write_text(node % ".inf")
    made["empty_json"].write_text("{}")
    made["file"].write_text("not a folder\n")
    made["traces"].mkdir()
    (made["traces"] / "rank0.json").write_bytes(b"\x80\x81 not json")
    return {k: str(v) for k, v in made.items()}


@pytest.fixture(autouse=True)
def _here(monkeypatch, tmp_path):
    """The repository root as the working folder (``examples.digits_mlp`` imports from it), and a
    cache of its own (nothing here may measure the machine)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path / "cache"))


def _one_error_line(code: int, out: str, err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (code, err)
    assert out == "", out
    assert "Traceback" not in err, err
    assert len(lines) == 1, err
    assert LINE.match(lines[0]), lines[0]
    return lines[0]


def test_there_are_at_least_thirty_more_than_the_issue_lists():
    assert len(MORE) >= 30 and not set(map(str, ISSUE)) & set(map(str, MORE))


@pytest.mark.parametrize(("argv", "needle"), CASES, ids=[" ".join(a)[:70] for a, _ in CASES])
def test_bad_input_is_one_line_and_exit_2(argv, needle, files, capsys):
    argv = [a.format(**files) if "{" in a and "}" in a and "=" not in a else a for a in argv]
    code = main(argv)
    captured = capsys.readouterr()
    line = _one_error_line(code, captured.out, captured.err)
    assert needle in line, line


def test_does_not_fit_offers_nothing_already_chosen(capsys):
    code = main(
        "plan llama-13b --cluster lab-windows --global-batch 32 --seq-len 1024 --dtype fp16".split()
    )
    line = _one_error_line(code, *capsys.readouterr())
    # fp16 with fp32 master weights and SGD's momentum: the training state alone is more than the
    # devices hold together, even once all 8 are there (3,600-10,800 s), so that is the cause named
    # (not the split, not the activations), and fp16 and SGD, already in use, are not offered
    assert "parameters, gradients and sgd state alone need" in line
    assert "--dtype" not in line and "--optimizer sgd" not in line
    assert "does not fit on lab-windows " in line and "the 130 GiB all 8 devices hold" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["hw", "show", "{bin}"],
        ["profile", "resnet50", "--bogus"],
        ["analyze", "resnet50", "--cluster", "lab", "--parallel", "dp=2,dp=4"],
        ["hw", "measure", "--out", "/proc/peaks.yaml"],
        ["train", DIGITS, "--data", "digits", "--global-batch", "5000"],
    ],
)
def test_as_a_subprocess(argv, files, tmp_path):
    argv = [a.format(**files) if "{" in a else a for a in argv]
    done = subprocess.run(
        [sys.executable, "-m", "trainplay", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "TRAINPLAY_CACHE_DIR": str(tmp_path)},
    )
    _one_error_line(done.returncode, done.stdout, done.stderr)
