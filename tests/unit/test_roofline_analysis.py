"""analyze(): predicted times from the stated overlap model, layouts, stragglers, what-if, errors."""

from pathlib import Path

import pytest

from trainplay.cli import main
from trainplay.errors import UsageError
from trainplay.hardware import load_cluster
from trainplay.hardware.cluster import parse_cluster
from trainplay.roofline.analysis import analyze
from trainplay.roofline.api import analyze_model
from trainplay.roofline.layout import Parallel, balanced_stages
from trainplay.workload import profile

DATA = Path(__file__).parent.parent / "data" / "clusters"


def _cluster(devices, intra="nvlink3", measured=None):
    device = {"type": "A100-40GB", "count": devices}
    if measured is not None:
        device["measured"] = measured
    return parse_cluster(
        {"name": "test", "nodes": [{"name": "n", "devices": [device], "intra_link": intra}]}
    )


@pytest.fixture(scope="module")
def resnet():
    return profile("resnet18", batch_size=16, input_shape=(3, 64, 64))


def test_single_worker_is_the_sum_of_phase_rooflines(resnet):
    """Without a performance profile every operator runs at the roofs: a block's phase is the sum
    of its operators' max(F/APF, M/APM); SGD (with momentum) streams five parameter-sized tensors."""
    result = analyze(resnet, _cluster(1, intra=None))
    apf, apm = 19.5e12, 1555e9
    expected = sum(
        op.count * max(op.flops / apf, op.bytes / apm) for x in resnet.layers for op in x.ops
    )
    optimizer = 5 * resnet.totals["param_bytes"] / apm
    assert result.iteration.predicted_s == pytest.approx(expected + optimizer)
    assert result.iteration.exposed_comm_s == 0 and result.peaks["apb"] is None
    assert all(layer.plane == "intra-device" and layer.comm_bytes == 0 for layer in result.layers)
    assert sum(result.iteration.bound_shares.values()) == pytest.approx(1.0)
    # the operator sum is never faster than the block's totals at the roofs
    for layer, x in zip(result.layers, resnet.layers, strict=True):
        roofs = max(x.fwd_flops / apf, x.fwd_bytes / apm) + max(
            x.bwd_flops / apf, x.bwd_bytes / apm
        )
        assert layer.predicted_s >= roofs * (1 - 1e-9)


def test_data_parallel_traffic_and_overlap(resnet):
    result = analyze(resnet, _cluster(4), Parallel(dp=4))
    factor = 2 * 3 / 4
    for layer, x in zip(result.layers, resnet.layers, strict=True):
        assert layer.comm_bytes == pytest.approx(x.param_bytes * factor)
    assert result.peaks["apb"] == 300e9  # nvlink3, one way
    serial = analyze(resnet, _cluster(4), Parallel(dp=4, overlap=False))
    alone = analyze(resnet, _cluster(1, intra=None))
    # overlapped all-reduce hides behind the backward pass; serial adds all of it
    assert (
        alone.iteration.predicted_s <= result.iteration.predicted_s < serial.iteration.predicted_s
    )
    # per bucket: the reducer's two passes over it (copied in, copied back: 4 b of memory
    # traffic), then a ring over links: 2(n-1) latencies and 2(n-1)/n of the bytes
    apm = serial.peaks["apm"]
    assert serial.iteration.exposed_comm_s == pytest.approx(
        sum(4 * b / apm + 2 * 3 * 0.5e-6 + factor * b / 300e9 for b in _buckets(resnet)), rel=1e-6
    )
    # a block whose all-reduce hides behind the backward is never called communication-bound
    for layer in result.layers:
        assert (layer.bound == "communication") == (
            layer.exposed_comm_s > max(layer.t_compute_s, layer.t_memory_s, layer.overhead_s)
        )


def _buckets(prof):
    sizes, filled, cap, out = [x.param_bytes for x in prof.layers if x.param_bytes], 0, 2**20, []
    for size in reversed(sizes):
        if filled and filled + size > cap:
            out.append(filled)
            filled, cap = 0, 25 * 2**20
        filled += size
    return [*out, filled]


def test_pipeline_cuts_carry_activations(resnet):
    result = analyze(resnet, _cluster(2), Parallel(pp=2, microbatches=4))
    stages = [layer.stage for layer in result.layers]
    assert stages == sorted(stages) and set(stages) == {0, 1}
    cut = max(i for i, s in enumerate(stages) if s == 0)
    assert result.layers[cut].comm_bytes == 2 * resnet.layers[cut].activation_bytes
    assert all(layer.comm_bytes == 0 for i, layer in enumerate(result.layers) if i != cut)
    assert result.iteration.bubble_s > 0 and "bubble" in result.iteration.bound_shares


def test_balanced_stages():
    assert balanced_stages([1, 1, 1, 1, 1, 1], 3) == [0, 0, 1, 1, 2, 2]
    assert balanced_stages([1, 1, 1, 10], 4) == [0, 1, 2, 3]
    assert balanced_stages([10, 1, 1, 1], 2) == [0, 1, 1, 1]
    with pytest.raises(UsageError, match="needs at least 5 blocks"):
        balanced_stages([1.0] * 4, 5)


def test_a_slow_worker_is_named_with_its_slowdown(resnet):
    fast, slow = {"apf": 15e12, "apm": 1.2e12}, {"apf": 5e12, "apm": 1.2e12}
    result = analyze(resnet, _cluster(4, measured=[fast, fast, slow, fast]), Parallel(dp=4))
    (straggler,) = result.stragglers
    assert straggler.ranks == (2,) and straggler.dimension == "compute"
    assert straggler.value == 5e12 and straggler.median == 15e12
    even = analyze(resnet, _cluster(4, measured=[fast] * 4), Parallel(dp=4))
    assert even.stragglers == ()
    # the slowdown is the ratio of two predictions: with the slow worker, and with it matched
    assert straggler.slowdown == pytest.approx(
        result.iteration.predicted_s / even.iteration.predicted_s
    )


@pytest.mark.parametrize("dimension", ["compute", "memory"])
@pytest.mark.parametrize(
    ("workers", "slow"), [(8, {5}), (8, {1, 6}), (8, {0, 2, 4, 6}), (6, {3, 4, 5})]
)
def test_slow_groups_are_named_whole(resnet, dimension, workers, slow):
    """One, two, or half of the workers slow in compute or in memory: the group is named, all of
    it, with its dimension and the slowdown against matching it to the rest."""
    fast = {"apf": 15e12, "apm": 1.2e12}
    weak = {"apf": 3e12, "apm": 1.2e12} if dimension == "compute" else {"apf": 15e12, "apm": 0.2e12}
    measured = [weak if r in slow else fast for r in range(workers)]
    result = analyze(resnet, _cluster(workers, measured=measured), Parallel(dp=workers))
    (straggler,) = result.stragglers
    assert set(straggler.ranks) == slow and straggler.dimension == dimension
    even = analyze(resnet, _cluster(workers, measured=[fast] * workers), Parallel(dp=workers))
    assert straggler.slowdown == pytest.approx(
        result.iteration.predicted_s / even.iteration.predicted_s
    )
    assert straggler.slowdown > 1.5


def test_three_tiers_name_the_slowest(resnet):
    """4 slow, 2 middling, 2 fast workers (the example lab's T4, V100, RTX 3090): the four slow
    ones hold the job back, matched to the middling ones."""
    tiers = [{"apf": 4e12, "apm": 1.2e12}] * 4 + [{"apf": 8e12, "apm": 1.2e12}] * 2
    tiers += [{"apf": 16e12, "apm": 1.2e12}] * 2
    result = analyze(resnet, _cluster(8, measured=tiers), Parallel(dp=8))
    (straggler,) = result.stragglers
    assert straggler.ranks == (0, 1, 2, 3) and straggler.dimension == "compute"
    assert straggler.median == 12e12  # the median peak of the workers outside the group
    matched = analyze(resnet, _cluster(8, measured=[tiers[4]] * 6 + tiers[6:]), Parallel(dp=8))
    assert straggler.slowdown == pytest.approx(
        result.iteration.predicted_s / matched.iteration.predicted_s
    )


def test_what_if_and_json_contract():
    result = analyze_model(
        "resnet18",
        load_cluster(DATA / "mixed-lab.yaml"),
        parallel=Parallel(dp=2),
        batch_size=8,
        input_shape=(3, 64, 64),
    )
    data = result.to_dict()
    assert {
        "model",
        "cluster",
        "parallel",
        "peaks",
        "iteration",
        "layers",
        "stragglers",
    } <= data.keys()
    assert {"apf", "apm", "apb"} <= data["peaks"].keys()
    assert {"predicted_s", "bound_shares"} <= data["iteration"].keys()
    assert {
        "name",
        "A",
        "O",
        "C",
        "plane",
        "bound",
        "t_compute_s",
        "t_memory_s",
        "t_comm_s",
        "predicted_s",
    } <= data["layers"][0].keys()
    assert any("link bandwidth" in line for line in result.what_if)


def test_layouts_the_cluster_cannot_hold(resnet):
    with pytest.raises(UsageError, match="needs 8 workers; cluster 'test' has 4"):
        analyze(resnet, _cluster(4), Parallel(dp=4, pp=2))
    with pytest.raises(UsageError, match="dp=N,pp=S"):
        Parallel.parse("dp=two")
    with pytest.raises(UsageError, match="lists no bf16 peak"):
        analyze(
            profile("resnet18", batch_size=2, input_shape=(3, 32, 32), dtype="bf16"),
            load_cluster(DATA / "mixed-lab.yaml"),
        )


def test_analyze_command(capsys):
    status = main(
        [
            "analyze",
            "resnet18",
            "--cluster",
            str(DATA / "mixed-lab.yaml"),
            "--parallel",
            "dp=2",
            "--batch",
            "4",
            "--input-shape",
            "3,64,64",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0 and "layer4.1" in out and "predicted iteration" in out
    status = main(
        ["analyze", "resnet18", "--cluster", str(DATA / "mixed-lab.yaml"), "--parallel", "dp=9"]
    )
    err = capsys.readouterr().err
    assert status == 2 and "needs 9 workers" in err and err.count("\n") == 1
