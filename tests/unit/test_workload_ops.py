"""Per-block operator groups: classes, counts, the loss, and their agreement with the totals."""

import pytest
import torch
from torch import nn

from trainplay.workload import profile, profile_model
from trainplay.workload.loss import training_loss
from trainplay.workload.opclass import CLASSES
from trainplay.workload.stats import LayerStats, WorkloadProfile


@pytest.fixture(scope="module")
def mobilenet():
    return profile("mobilenet_v2", batch_size=2, input_shape=(3, 64, 64), loss=True)


def test_operator_groups_add_up_to_each_block(mobilenet):
    for layer in mobilenet.layers:
        for phase in ("fwd", "bwd"):
            ops = [op for op in layer.ops if op.phase == phase]
            assert sum(op.flops * op.count for op in ops) == getattr(layer, f"{phase}_flops")
            assert sum(op.bytes * op.count for op in ops) == getattr(layer, f"{phase}_bytes")
        assert {op.cls for op in layer.ops} <= set(CLASSES)


def test_depthwise_pointwise_and_dense_convolutions_are_told_apart(mobilenet):
    classes = {op.cls for layer in mobilenet.layers for op in layer.ops if "conv" in op.op}
    # 1x1s, stride 1, on 2 samples (on the last stage's 2x2 maps, conv_1x1_narrow); 3x3
    # depthwise ones at stride 1 and 2
    assert classes == {"conv", "conv_1x1_few", "conv_1x1_narrow", "conv_dw", "conv_dw_s2"}
    first = mobilenet.layers[0]  # the stem's 3x3 convolution
    assert {op.cls for op in first.ops if op.op == "aten.convolution"} == {"conv"}
    # every block after the stem expands or projects with 1x1 convolutions, forward and backward
    for layer in mobilenet.layers[1:-1]:
        pointwise = [op for op in layer.ops if op.cls in ("conv_1x1_few", "conv_1x1_narrow")]
        assert {op.phase for op in pointwise} == {"fwd", "bwd"}


def test_the_loss_is_counted_in_the_last_block():
    plain = profile("resnet18", batch_size=4, input_shape=(3, 32, 32))
    with_loss = profile("resnet18", batch_size=4, input_shape=(3, 32, 32), loss=True)
    assert [x.name for x in plain.layers] == [x.name for x in with_loss.layers]
    last = {op.op for op in with_loss.layers[-1].ops}
    assert {"aten._log_softmax", "aten.nll_loss_forward", "aten.nll_loss_backward"} <= last
    for a, b in zip(plain.layers[:-1], with_loss.layers[:-1], strict=True):
        assert a.fwd_flops == b.fwd_flops and a.bwd_bytes == b.bwd_bytes
    assert with_loss.layers[-1].fwd_bytes > plain.layers[-1].fwd_bytes
    assert "the training loss is counted in the last block" in with_loss.notes


def test_a_decoders_loss_reads_every_logit():
    p = profile("gpt2-small", batch_size=1, seq_len=32, loss=True)
    softmax = next(op for op in p.layers[-1].ops if op.op == "aten._log_softmax")
    assert softmax.bytes == 2 * 32 * 50257 * 4  # read the logits, write the log-probabilities


def test_parameter_tensors_are_counted():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2, bias=False))
    p = profile_model(
        model, (torch.randn(3, 4),), name="mlp", batch_size=3, input_shape=(4,), dtype="fp32",
        loss=training_loss,
    )  # fmt: skip
    assert p.totals["param_tensors"] == 3 and p.totals["params"] == 4 * 8 + 8 + 16


def test_json_round_trip_keeps_the_operators(mobilenet):
    again = WorkloadProfile.from_json(mobilenet.to_json())
    assert again == mobilenet
    data = mobilenet.layers[0].to_dict()
    assert {"class", "phase", "op", "flops", "bytes", "count"} == set(data["ops"][0])
    with pytest.raises(ValueError, match="malformed"):
        LayerStats.from_dict({"name": "x", "kind": "y", "ops": [{"class": "gemm"}]})


@pytest.mark.parametrize(
    ("model", "options"),
    [
        ("gpt2-small", {"seq_len": 32}),
        ("densenet121", {"input_shape": (3, 64, 64)}),
        ("swin_t", {"input_shape": (3, 64, 64)}),
        ("llama-7b", {"seq_len": 16}),
    ],
)
def test_replaying_identical_meta_calls_changes_nothing(model, options, monkeypatch):
    """A meta call seen before is replayed from its outputs' shapes: the profile is the one that
    running every meta kernel gives."""
    monkeypatch.setenv("TRAINPLAY_PROFILE_CACHE", "0")
    fast = profile(model, batch_size=2, loss=True, **options)
    from trainplay.workload import tracer

    monkeypatch.setattr(tracer, "_signature", lambda *_: None)
    assert profile(model, batch_size=2, loss=True, **options) == fast


def test_profiles_are_cached_by_what_they_depend_on(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    first = profile("resnet18", batch_size=2, input_shape=(3, 32, 32))
    files = list((tmp_path / "profiles").glob("*.json"))
    assert len(files) == 1
    assert profile("resnet18", batch_size=2, input_shape=(3, 32, 32)) == first
    profile("resnet18", batch_size=4, input_shape=(3, 32, 32))
    profile("resnet18", batch_size=2, input_shape=(3, 32, 32), loss=True)
    assert len(list((tmp_path / "profiles").glob("*.json"))) == 3
    files[0].write_text("not json")  # a damaged file is counted again, not trusted
    assert profile("resnet18", batch_size=2, input_shape=(3, 32, 32)) == first
