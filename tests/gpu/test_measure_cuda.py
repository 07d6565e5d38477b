"""The CUDA path of ``trainplay hw measure``: GEMM and streaming on the GPU, NCCL between GPUs.

Skipped without CUDA; run on a GPU machine with ``pytest tests/gpu``.
"""

import json
import os
import subprocess
import sys

import pytest
import torch

from trainplay.hardware.measure.kernels import measure_apf, measure_apm

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def test_kernels_on_the_gpu():
    cuda = torch.device("cuda", 0)
    apf = measure_apf(cuda, "bf16", [2048, 4096], budget_s=2)
    assert apf.flops > 1e12
    apm = measure_apm(cuda, 256 * 2**20, budget_s=2)
    assert apm.bps > 1e11


def test_measure_command_on_cuda(tmp_path):
    nproc = min(2, torch.cuda.device_count())
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainplay",
            "hw",
            "measure",
            "--device",
            "cuda",
            "--nproc",
            str(nproc),
            "--dtype",
            "bf16,fp32",
            "--quick",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "TRAINPLAY_CACHE_DIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["backend"] == "nccl"
    worker = result["workers"][0]
    assert worker["device_type"] == "cuda" and set(worker["apf_by_dtype"]) == {"bf16", "fp32"}
    if nproc > 1:
        assert worker["apb"] > 1e9 and worker["r2"] > 0.9
