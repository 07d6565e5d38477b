"""``trainplay train`` on CUDA devices (NCCL): trains, checkpoints, and resumes from the checkpoint.

Skipped without CUDA; run on a GPU machine with ``pytest tests/gpu``.
"""

import math
import sys

import pytest
import torch

from tests.integration.processes import run_bounded
from trainplay.runtime.journal import read_journal, trajectory

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def test_train_on_cuda_and_resume(tmp_path):
    gpus = min(2, torch.cuda.device_count())
    (tmp_path / "gpus.yaml").write_text(
        "name: gpus\nnodes:\n  - name: box\n    devices:\n"
        f"      - {{name: gpu, peak_flops: {{fp32: 1e6}}, mem_bw_bps: 1e9, mem_bytes: 8e9, count: {gpus}}}\n"
        "    intra_link: {bandwidth_bps: 1e10, latency_s: 1e-5}\n"
    )
    common = [
        sys.executable, "-m", "trainplay", "train", "tests.data.tiny_models:deep_mlp",
        "--data", "tests.data.datasets:quick", "--global-batch", "32",
        "--cluster", str(tmp_path / "gpus.yaml"), "--nproc-per-node", str(gpus),
        "--checkpoint-dir", str(tmp_path / "ckpt"), "--journal", str(tmp_path / "run.jsonl"),
        "--no-progress",
    ]  # fmt: skip
    first = run_bounded([*common, "--steps", "5"], timeout_s=300)
    assert first.returncode == 0, first.stderr[-3000:]
    again = run_bounded([*common, "--steps", "8"], timeout_s=300)
    assert again.returncode == 0, again.stderr[-3000:]
    steps = trajectory(read_journal(tmp_path / "run.jsonl"))
    assert [e["step"] for e in steps] == list(range(8))
    assert all(math.isfinite(e["loss"]) for e in steps)
    assert not first.left_behind and not again.left_behind
