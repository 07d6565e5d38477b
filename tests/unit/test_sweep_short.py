"""The sweep's points for a transformer on short sequences: products of few rows against narrow
weights (``sweeps.NARROW_GEMMS``) and causal attention at sequences of 8 to 32
(``sweeps.SHORT_ATTENTIONS``), timed in both phases, reaching where a short-sequence decoder's
calls lie and the earlier points did not."""

import torch

from trainplay.hardware.measure import sweeps
from trainplay.workload.decoder import Decoder, DecoderConfig
from trainplay.workload.loss import training_loss
from trainplay.workload.profiler import profile_model


def _by_label() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for case in sweeps.cases():
        found.setdefault(case.label, set()).add(case.key)
    return found


def _attention_label(b, heads, seq, dim):
    return f"attention {b}x{heads}x{seq}x{dim}"


def test_each_narrow_product_is_timed_forward_backward_and_for_its_weight_gradient():
    labels = _by_label()
    for t, k, n in sweeps.NARROW_GEMMS:
        assert labels[f"linear {t}x{k} -> {n}"] == {"gemm.fwd", "gemm.bwd"}
        assert labels[f"weight gradient of linear {t}x{k} -> {n}"] == {"gemm.bwd"}


def test_the_narrow_products_fill_the_weights_between_the_earlier_few_row_points():
    # earlier products of up to 128 rows had weights of 16 KB (64x64) or 1 MiB and more
    earlier = {(t, k, n) for t in (16, 64, 128) for k, n in ((64, 64), (256, 1024), (768, 768))}
    between = [
        k * n * 4 for t, k, n in sweeps.NARROW_GEMMS if t <= 128 and 100e3 < k * n * 4 < 800e3
    ]
    assert len(between) >= 6
    assert not any(100e3 < k * n * 4 < 800e3 for _, k, n in earlier)


def test_each_short_attention_is_timed_in_both_phases_below_the_earlier_smallest_point():
    labels = _by_label()
    for shape in sweeps.SHORT_ATTENTIONS:
        assert labels[_attention_label(*shape)] == {"attention.fwd", "attention.bwd"}
    short = {_attention_label(*shape) for shape in sweeps.SHORT_ATTENTIONS}
    forward = [case for case in sweeps.cases() if case.key == "attention.fwd"]
    new = [case.counted().flops for case in forward if case.label in short]
    earlier = [case.counted().flops for case in forward if case.label not in short]
    assert min(new) < min(earlier) / 10


def test_a_short_sequence_decoders_attention_lies_within_the_swept_calls():
    # a LLaMA-style decoder of width 192 (six heads of 32) on 12 tokens, 4 sequences a micro-batch
    config = DecoderConfig(
        vocab_size=1000, d_model=192, n_layers=2, n_heads=6, d_ff=512, context_len=12,
        style="llama", tie_embeddings=False,
    )  # fmt: skip
    with torch.device("meta"):
        model = Decoder(config)
    ids = torch.zeros((4, 12), dtype=torch.long, device="meta")
    p = profile_model(
        model, (ids,), name="decoder", batch_size=4, input_shape=(12,), dtype="fp32",
        loss=training_loss,
    )  # fmt: skip
    calls = [op.flops for layer in p.layers for op in layer.ops if op.cls == "attention"]
    assert calls
    labels = {_attention_label(*shape) for shape in sweeps.SHORT_ATTENTIONS}
    forward = [case for case in sweeps.cases() if case.key == "attention.fwd"]
    swept = [case.counted().flops for case in forward]
    short = [case.counted().flops for case in forward if case.label in labels]
    assert min(swept) <= min(calls)
    assert min(short) <= min(calls) <= max(short)
