"""Counting with real kernels on the CPU gives what counting on ``meta`` gives."""

import pytest

from trainplay.workload import profile

KEYS = (
    "fwd_flops",
    "bwd_flops",
    "fwd_gemm_flops",
    "bwd_gemm_flops",
    "fwd_bytes",
    "bwd_bytes",
    "params",
    "param_bytes",
    "activation_bytes",
    "saved_bytes",
)


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small"])
def test_cpu_run_matches_meta(name):
    meta = profile(name, batch_size=2, input_shape=(3, 64, 64))
    cpu = profile(name, batch_size=2, input_shape=(3, 64, 64), device="cpu")
    assert cpu.device == "cpu" and meta.device == "meta"
    assert [layer.name for layer in cpu.layers] == [layer.name for layer in meta.layers]
    for a, b in zip(cpu.layers, meta.layers, strict=True):
        for key in KEYS:
            assert getattr(a, key) == getattr(b, key), (a.name, key)


def test_decoder_on_cpu_runs_fused_attention_like_meta_counts_it():
    cpu = profile("gpt2-small", seq_len=32, device="cpu")
    meta = profile("gpt2-small", seq_len=32)
    assert cpu.totals["fwd_gemm_flops"] == meta.totals["fwd_gemm_flops"]
    assert cpu.totals["bwd_gemm_flops"] == meta.totals["bwd_gemm_flops"]
    # only meta needs the fused kernel substituted for its unfused fallback, and says so
    assert any("fused (flash) kernel" in note for note in meta.notes)
    assert not any("fused" in note for note in cpu.notes)
