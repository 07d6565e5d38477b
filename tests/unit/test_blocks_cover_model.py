"""Blocks cover the model exactly: their sums equal independent whole-model counts."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from trainplay.workload import profile, profile_model, resolve_model
from trainplay.workload.decoder import Decoder, preset
from trainplay.workload.opcost import op_cost

SUMMED = (
    "fwd_flops",
    "bwd_flops",
    "fwd_bytes",
    "bwd_bytes",
    "fwd_gemm_flops",
    "bwd_gemm_flops",
    "params",
    "param_bytes",
    "saved_bytes",
)


class _WholeModel(TorchDispatchMode):
    """The same per-operator rules, summed with no attribution at all."""

    def __init__(self):
        super().__init__()
        self.flops = self.bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        cost = op_cost(func, args, kwargs or {}, out)
        self.flops += cost.flops
        self.bytes += cost.bytes
        return out


def _independent_counts(model, inputs):
    """(per-operator sums, FlopCounterMode's forward and backward totals, output), the output's
    gradient made outside the counters as trainplay does (it is the loss's, not the model's)."""
    whole = _WholeModel()
    fwd_counter, bwd_counter = FlopCounterMode(display=False), FlopCounterMode(display=False)
    with fwd_counter, whole:
        out = model(*inputs)
    grad = torch.ones_like(out)
    with bwd_counter, whole:
        out.backward(grad)
    return whole, (fwd_counter.get_total_flops(), bwd_counter.get_total_flops()), out


def _grouped(model) -> bool:
    return any(isinstance(m, torch.nn.Conv2d) and m.groups > 1 for m in model.modules())


CASES = [
    ("resnet18", 2, (3, 64, 64)),
    ("densenet121", 2, (3, 64, 64)),
    ("googlenet", 2, (3, 64, 64)),
    ("mobilenet_v3_small", 2, (3, 64, 64)),
    ("vit_b_32", 2, (3, 64, 64)),
    ("convnext_tiny", 2, (3, 64, 64)),
]


@pytest.mark.parametrize(("name", "batch", "shape"), CASES)
def test_blocks_sum_to_whole_model(name, batch, shape):
    source = resolve_model(name)
    model = source.build(shape, "meta", "fp32")
    inputs = source.inputs(batch, shape, "meta", "fp32")
    result = profile_model(
        model, inputs, name=name, batch_size=batch, input_shape=shape, dtype="fp32"
    )
    totals = result.totals

    fresh = source.build(shape, "meta", "fp32")
    whole, gemm, out = _independent_counts(fresh, source.inputs(batch, shape, "meta", "fp32"))
    assert len(result.layers) > 3
    assert totals["fwd_flops"] + totals["bwd_flops"] == whole.flops
    assert totals["fwd_bytes"] + totals["bwd_bytes"] == whole.bytes
    assert totals["fwd_gemm_flops"] == gemm[0]
    if _grouped(fresh):  # FlopCounterMode (torch 2.14) counts grouped weight gradients x groups
        assert totals["bwd_gemm_flops"] < gemm[1]
    else:
        assert totals["bwd_gemm_flops"] == gemm[1]
    assert totals["params"] == sum(p.numel() for p in fresh.parameters())
    assert result.layers[-1].activation_bytes == out.numel() * out.element_size()
    assert all(layer.fwd_flops > 0 for layer in result.layers)


def test_every_granularity_has_the_same_totals():
    by = {
        g: profile("resnet18", batch_size=2, input_shape=(3, 32, 32), granularity=g).totals
        for g in ("blocks", "ops")
    }
    for depth in (1, 2, 3):
        by[f"modules{depth}"] = profile(
            "resnet18", batch_size=2, input_shape=(3, 32, 32), granularity="modules", depth=depth
        ).totals
    reference = by.pop("blocks")
    for granularity, totals in by.items():
        for key in SUMMED:
            assert totals[key] == reference[key], (granularity, key)


def test_decoder_blocks_are_embedding_layers_head():
    config = preset("gpt2-small", n_layers=3, context_len=64)
    model = Decoder(config).to("meta")
    ids = (torch.zeros(2, 64, dtype=torch.long, device="meta"),)
    result = profile_model(
        model, ids, name="tiny-gpt", batch_size=2, input_shape=(64,), dtype="fp32"
    )
    assert [layer.name for layer in result.layers] == [
        "embed",
        "layers.0",
        "layers.1",
        "layers.2",
        "head",
    ]
    _, gemm, _ = _independent_counts(Decoder(config).to("meta"), ids)
    totals = result.totals
    # FlopCounterMode here sees meta's unfused attention; trainplay counts the fused kernel, whose
    # backward recomputes the scores Q K^T once more: one (b*h, s, d) x (d, s) GEMM per layer.
    recompute = 2 * (2 * config.n_heads) * 64 * 64 * config.head_dim
    assert totals["fwd_gemm_flops"] == gemm[0]
    assert totals["bwd_gemm_flops"] == gemm[1] + config.n_layers * recompute
    # the tied embedding is counted once, in the block that first uses it
    assert totals["params"] == sum(p.numel() for p in model.parameters())
    assert result.layers[0].params > result.layers[-1].params
    # each cut between transformer blocks carries one hidden state: batch*seq*d_model floats
    for layer in result.layers[:-1]:
        assert layer.activation_bytes == 2 * 64 * config.d_model * 4


def test_resnet_blocks_are_stem_bottlenecks_classifier():
    result = profile("resnet50", batch_size=1)
    names = [layer.name for layer in result.layers]
    assert names[0] == "conv1" and names[-1] == "fc"
    assert names[1:-1] == [
        f"layer{s}.{i}" for s, n in zip((1, 2, 3, 4), (3, 4, 6, 3), strict=True) for i in range(n)
    ]
    assert result.layers[0].kind == "Conv2d+BatchNorm2d+ReLU+MaxPool2d"
