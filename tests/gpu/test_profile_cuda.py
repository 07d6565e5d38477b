"""On a CUDA device the profiler runs real kernels and counts what it counts on ``meta``.

Skipped without CUDA; run on a GPU machine with ``pytest tests/gpu``.
"""

import pytest
import torch

from trainplay.workload import profile

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_resnet50_on_cuda_matches_meta(dtype):
    cuda = profile("resnet50", batch_size=8, dtype=dtype, device="cuda")
    meta = profile("resnet50", batch_size=8, dtype=dtype)
    assert cuda.device == "cuda"
    for key in ("fwd_gemm_flops", "bwd_gemm_flops", "params", "param_bytes", "activation_bytes"):
        assert cuda.totals[key] == meta.totals[key], key


def test_decoder_on_cuda_counts_fused_attention():
    cuda = profile("gpt2-small", batch_size=2, seq_len=256, dtype="bf16", device="cuda")
    meta = profile("gpt2-small", batch_size=2, seq_len=256, dtype="bf16")
    # CUDA picks flash or memory-efficient attention: both GEMM counts are FlopCounterMode's SDPA formulas
    assert cuda.totals["fwd_gemm_flops"] == meta.totals["fwd_gemm_flops"]
    assert cuda.totals["bwd_gemm_flops"] == meta.totals["bwd_gemm_flops"]
