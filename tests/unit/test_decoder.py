"""The decoder presets have their published sizes; the module agrees with its closed form."""

import pytest
import torch

from trainplay.workload import PRESETS, profile
from trainplay.workload.decoder import Decoder, count_params, preset


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_parameter_count_matches_publication(name):
    config = PRESETS[name]
    with torch.device("meta"):
        model = Decoder(config)
    params = sum(p.numel() for p in model.parameters())
    assert params == count_params(config)
    assert params == pytest.approx(config.published_params, rel=0.02)


@pytest.mark.parametrize(
    "overrides",
    [{}, {"n_kv_heads": 2}, {"n_layers": 1}],
)
@pytest.mark.parametrize("style_preset", ["gpt2-small", "llama-7b"])
def test_small_decoders_train_on_cpu(style_preset, overrides):
    base = {
        "d_model": 64,
        "n_heads": 4,
        "d_ff": 128,
        "n_layers": 2,
        "vocab_size": 100,
        "context_len": 16,
    }
    config = preset(style_preset, **{**base, **overrides})
    torch.manual_seed(0)
    model = Decoder(config)
    ids = torch.randint(0, 100, (3, 16))
    logits = model(ids)
    assert logits.shape == (3, 16, 100)
    torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids.flatten()).backward()
    assert all(p.grad is not None for p in model.parameters())
    assert sum(p.numel() for p in model.parameters()) == count_params(config)


def test_causal_attention_ignores_the_future():
    config = preset(
        "llama-7b", d_model=32, n_heads=4, d_ff=64, n_layers=1, vocab_size=50, context_len=8
    )
    model = Decoder(config).eval()
    ids = torch.randint(0, 50, (1, 8))
    changed = ids.clone()
    changed[0, -1] = (ids[0, -1] + 1) % 50
    with torch.no_grad():
        assert torch.allclose(model(ids)[0, :-1], model(changed)[0, :-1], atol=1e-5)


def test_seq_len_scales_the_profile():
    short = profile("gpt2-small", seq_len=128)
    long = profile("gpt2-small", seq_len=256)
    assert short.input_shape == (128,) and long.input_shape == (256,)
    # projections are linear in sequence length; attention is quadratic, so a bit more than 2x
    ratio = long.totals["fwd_gemm_flops"] / short.totals["fwd_gemm_flops"]
    assert 2.0 < ratio < 2.2
    assert long.totals["params"] == short.totals["params"]


def test_gpt3_175b_profiles_on_meta():
    result = profile("gpt3-175b", seq_len=256)
    assert len(result.layers) == 96 + 2
    assert result.totals["params"] == pytest.approx(175e9, rel=0.02)
    # 2 FLOPs per parameter per token in the forward GEMMs, plus attention (Kaplan et al. 2020)
    tokens = 256
    dense = 2 * result.totals["params"] * tokens
    assert dense < result.totals["fwd_gemm_flops"] < 1.1 * dense
