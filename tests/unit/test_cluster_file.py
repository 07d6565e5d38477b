"""Cluster YAML: the issue's example reads; bad files fail with file, line and field."""

from pathlib import Path

import pytest

from trainplay.errors import UsageError
from trainplay.hardware import ClusterFileError, dump_cluster, load_cluster

DATA = Path(__file__).parent.parent / "data" / "clusters"


def test_mixed_lab_example():
    cluster = load_cluster(DATA / "mixed-lab.yaml")
    workers = cluster.workers()
    assert [w.device.name for w in workers] == ["V100-16GB"] * 2 + ["T4"] * 3 + ["gtx1080"]
    assert [w.rank for w in workers] == list(range(6))
    assert workers[0].peaks().apf == 15.7e12 and workers[0].peaks().origin == "datasheet"
    gtx = workers[-1].device
    assert gtx.peak_flops == {"fp32": 8.9e12, "fp16": 0.14e12}  # YAML reads 8.9e12 as a string
    assert gtx.mem_bw_bps == 320e9 and gtx.mem_bytes == 8589934592
    assert gtx.available.from_s == 0 and gtx.available.until_s == 7200
    assert cluster.nodes[0].intra_link.name == "nvlink2"
    assert cluster.nodes[1].intra_link.bandwidth_bps == 12e9
    assert cluster.inter_link.bandwidth_bps == 1.25e9


def test_yaml_round_trip(tmp_path):
    cluster = load_cluster(DATA / "mixed-lab.yaml")
    again = tmp_path / "again.yaml"
    again.write_text(dump_cluster(cluster))
    assert load_cluster(again) == cluster


GOOD = """\
name: lab
nodes:
  - name: a
    devices:
      - {type: T4, count: 2}
    intra_link: pcie3
"""


@pytest.mark.parametrize(
    ("replace", "by", "line", "message"),
    [
        ("count: 2", "count: 0", 5, "nodes[0].devices[0].count: must be > 0, got 0"),
        ("count: 2", "count: -3", 5, "nodes[0].devices[0].count: must be > 0, got -3"),
        ("count: 2", "count: 1.5", 5, "must be a whole number"),
        ("type: T4", "type: T5", 5, "unknown device type 'T5'; close matches: T4"),
        (
            "intra_link: pcie3",
            "intra_link: pcie6",
            6,
            "unknown link type 'pcie6'; close matches: pcie",
        ),
        (
            "intra_link: pcie3",
            "intra_link: {bandwidth_bps: 0, latency_s: 1e-6}",
            6,
            "nodes[0].intra_link.bandwidth_bps: must be > 0, got 0",
        ),
        (
            "intra_link: pcie3",
            "intra_link: {bandwidth_bps: 1e9, latency_s: -1e-6}",
            6,
            "intra_link.latency_s: must be > 0",
        ),
        ("    intra_link: pcie3\n", "", 3, "nodes[0].intra_link: is required"),
        (
            "{type: T4, count: 2}",
            "{type: T4, count: 2, available: {from_s: 100, until_s: 100}}",
            5,
            "available.until_s: must be after from_s (100), got 100",
        ),
        (
            "{type: T4, count: 2}",
            "{type: T4, count: 2, available: {from_s: -1}}",
            5,
            "from_s: must be >= 0",
        ),
        (
            "{type: T4, count: 2}",
            "{type: T4, cuont: 2}",
            5,
            "nodes[0].devices[0].cuont: unknown field; did you mean 'count'?",
        ),
        (
            "{type: T4, count: 2}",
            "{name: x, peak_flops: {fp32: 1e12}, mem_bw_bps: 0, mem_bytes: 10}",
            5,
            "mem_bw_bps: must be > 0, got 0",
        ),
        (
            "{type: T4, count: 2}",
            "{name: x, peak_flops: {fp64: 1e12}, mem_bw_bps: 1, mem_bytes: 10}",
            5,
            "peak_flops.fp64: unknown field",
        ),
        (
            "{type: T4, count: 2}",
            "{name: x, peak_flops: {fp32: fast}, mem_bw_bps: 1, mem_bytes: 10}",
            5,
            "peak_flops.fp32: must be a number, got 'fast'",
        ),
        (
            "{type: T4, count: 2}",
            "{name: x, peak_flops: {fp32: 1e12}, mem_bytes: 10}",
            5,
            "mem_bw_bps: is required",
        ),
        ("{type: T4, count: 2}", "{type: cpu}", 5, "run `trainplay hw measure` first"),
        ("name: lab", "name: ''", 1, "name: must be a non-empty string"),
        ("- {type: T4, count: 2}", "- {type: T4, count: 2", 5, "not valid YAML"),
    ],
)
def test_bad_files_name_file_line_and_field(tmp_path, replace, by, line, message):
    assert replace in GOOD
    path = tmp_path / "lab.yaml"
    path.write_text(GOOD.replace(replace, by))
    with pytest.raises(ClusterFileError) as error:
        load_cluster(path)
    text = str(error.value)
    assert text.startswith(f"{path}:"), text
    assert message in text, text
    if "not valid YAML" not in message:
        assert text.startswith(f"{path}:{line}:"), text
    assert "\n" not in text


def test_two_nodes_need_an_inter_link(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text(
        "name: two\nnodes:\n  - {name: a, devices: [{type: L4}]}\n  - {name: b, devices: [{type: L4}]}\n"
    )
    with pytest.raises(
        ClusterFileError, match=r"two.yaml:1: inter_link: is required with more than one node"
    ):
        load_cluster(path)


def test_missing_file_and_duplicate_nodes(tmp_path):
    with pytest.raises(ClusterFileError, match="cannot read cluster file"):
        load_cluster(tmp_path / "nope.yaml")
    path = tmp_path / "dup.yaml"
    path.write_text(
        "name: d\ninter_link: 10gbe\nnodes:\n  - {name: a, devices: [{type: L4}]}\n"
        "  - {name: a, devices: [{type: L4}]}\n"
    )
    with pytest.raises(
        ClusterFileError, match=r"dup.yaml:5: nodes\[1\].name: node name 'a' is used twice"
    ):
        load_cluster(path)


def test_measured_peaks_take_precedence(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(
        GOOD.replace(
            "{type: T4, count: 2}",
            "{type: T4, count: 2, measured: [{apf: 5e12, apm: 2e11}, "
            "{apf: 4e12, apm: 1.9e11, apb: 3e9}]}",
        )
    )
    cluster = load_cluster(path)
    first, second = cluster.workers()
    assert first.peaks().apf == 5e12 and first.peaks().origin == "measured"
    assert second.peaks().apb == 3e9
    # fp16 was not measured: the datasheet's rate, with the measured memory bandwidth
    fp16 = first.peaks("fp16")
    assert fp16.apf == 65e12 and fp16.apm == 2e11 and "fp16 APF listed" in fp16.origin
    path.write_text(
        GOOD.replace(
            "{type: T4, count: 2}",
            "{type: T4, count: 2, measured: [{apf: 5e12, apm: 2e11}, "
            "{apf: 1, apm: 1}, {apf: 1, apm: 1}]}",
        )
    )
    with pytest.raises(ClusterFileError, match="measured: give 1 or 2"):
        load_cluster(path)


def test_datasheet_peak_for_a_missing_dtype_is_an_error():
    cluster = load_cluster(DATA / "mixed-lab.yaml")
    with pytest.raises(UsageError, match="V100-16GB lists no bf16 peak"):
        cluster.workers()[0].peaks("bf16")
