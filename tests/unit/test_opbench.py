"""Operator-level achievable times: signatures rebuild the calls; timing is positive and ordered."""

import torch
from torch import nn

from trainplay.hardware.measure.opbench import (
    Evictor,
    SignatureCollector,
    TensorSpec,
    time_signature,
)
from trainplay.roofline.achieved import measure_block_times
from trainplay.workload.tracer import record_iteration
from trainplay.workload.zoo import resolve_model


def test_tensor_specs_rebuild_layouts():
    base = torch.randn(4, 1).expand(4, 6)  # stride 0
    spec = TensorSpec.of(base)
    rebuilt = spec.build(torch.device("cpu"))
    assert rebuilt.shape == (4, 6) and rebuilt.stride() == (1, 0)
    offset = torch.randn(10)[3:7]
    again = TensorSpec.of(offset).build(torch.device("cpu"))
    assert again.storage_offset() == 3 and again.shape == (4,)
    ints = TensorSpec.of(torch.ones(3, dtype=torch.long)).build(torch.device("cpu"))
    assert (
        ints.dtype == torch.long and int(ints.abs().sum()) == 0
    )  # indices are zeros: always valid


def test_signatures_name_each_distinct_call_once():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU()).to("meta")
    collector = SignatureCollector()
    trace = record_iteration(model, (torch.empty(2, 8, device="meta"),), collector)
    keys = [e.key for e in trace.events if e.key]
    assert (
        len(keys) > len(set(keys)) == len(collector.signatures)
    )  # the two Linear layers share calls
    assert all(not e.key for e in trace.events if e.op in ("aten.t", "aten.view", "aten.detach"))
    for signature in collector.signatures.values():
        assert time_signature(signature, torch.device("cpu"), budget_s=0.01) > 0


def test_cold_cache_time_is_never_below_the_hot_one():
    evictor = Evictor(8 * 2**20)
    assert 0 < evictor.noop_s < 0.05
    x = torch.randn(256, 256)
    collector = SignatureCollector()
    key = collector(torch.ops.aten.mm.default, (x, x), {})
    signature = collector.signatures[key]
    hot = time_signature(signature, torch.device("cpu"), budget_s=0.05)
    cold = time_signature(signature, torch.device("cpu"), budget_s=0.05, evictor=evictor)
    assert cold >= hot > 0


def test_block_times_cover_every_block():
    source = resolve_model("tests.data.tiny_models:tiny_cnn")
    times = measure_block_times(source, 4, (3, 32, 32), cache_bytes=8 * 2**20)
    assert times.names == ("0", "4", "7", "11")
    assert all(t > 0 for t in (*times.fwd_s, *times.bwd_s))
    assert times.ops >= times.distinct_ops > 10
