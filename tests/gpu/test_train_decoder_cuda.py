"""A decoder trains on CUDA in bf16 (autocast over fp32 master weights, NCCL), and each rank's
peak memory (``torch.cuda.max_memory_allocated``) stays under its declared capacity and within
1.3x of the plan's figure.

Skipped without CUDA; run on a GPU machine with ``pytest tests/gpu``.
"""

import math
import sys
import sysconfig

import pytest
import torch

from tests.integration.processes import run_bounded
from trainplay.runtime.journal import read_journal, trajectory

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

CAPACITY_BYTES = 8 * 2**30


def test_a_decoder_trains_in_bf16_within_its_planned_memory(tmp_path):
    gpus = min(2, torch.cuda.device_count())
    (tmp_path / "gpus.yaml").write_text(
        "name: gpus\nnodes:\n  - name: box\n    devices:\n"
        "      - {name: gpu, peak_flops: {fp32: 1e13, bf16: 1e14}, mem_bw_bps: 1e12, "
        f"mem_bytes: {CAPACITY_BYTES}, count: {gpus}}}\n"
        "    intra_link: {bandwidth_bps: 1e11, latency_s: 1e-5}\n"
    )
    text = f"text:{sysconfig.get_paths()['stdlib']}/json"  # Python's own json package, as bytes
    journal = tmp_path / "run.jsonl"
    done = run_bounded(
        [
            sys.executable, "-m", "trainplay", "train", "tests.data.tiny_models:roomy_decoder",
            "--seq-len", "32", "--data", text, "--global-batch", "16", "--steps", "30",
            "--optimizer", "adam", "--lr", "1e-3", "--dtype", "bf16",
            "--cluster", str(tmp_path / "gpus.yaml"), "--nproc-per-node", str(gpus),
            "--journal", str(journal), "--no-progress",
        ],
        timeout_s=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert not done.left_behind
    events = read_journal(journal)
    losses = [e["loss"] for e in trajectory(events)]
    assert len(losses) == 30 and all(math.isfinite(x) for x in losses)
    assert sum(losses[-5:]) < sum(losses[:5])  # it learns the bytes of the text
    memory = [e for e in events if e["event"] == "memory"]
    assert memory, events[-3:]
    for e in memory:
        assert e["capacity_bytes"] == CAPACITY_BYTES
        assert e["peak_bytes"] < e["capacity_bytes"], e
        assert e["plan_bytes"] / 1.3 <= e["peak_bytes"] <= 1.3 * e["plan_bytes"], e
