"""Named clusters: every preset loads, names resolve (case, aliases), a file of that name wins."""

import pytest

from trainplay.errors import UsageError
from trainplay.hardware.local import resolve_cluster
from trainplay.hardware.presets import ALIASES, cluster_path, describe, preset_names


def test_presets_load_with_catalog_devices_and_links():
    names = preset_names()
    assert names[:2] == ("lab", "lab-windows")
    assert {"8xA100-80GB", "8xV100-16GB", "8xH100-SXM", "4xRTX4090"} <= set(names)
    for name in names:
        cluster = resolve_cluster(name)
        assert cluster.name == name and describe(name)
        for node in cluster.nodes:
            assert node.intra_link is not None and node.intra_link.source
    dgx = resolve_cluster("8xA100-80GB")
    assert [w.device.name for w in dgx.workers()] == ["A100-80GB"] * 8
    assert dgx.nodes[0].intra_link.name == "nvlink3"
    assert resolve_cluster("4xRTX4090").nodes[0].intra_link.name == "pcie4"


def test_case_and_aliases():
    assert cluster_path("dgx-1") == cluster_path("8xV100-16GB") == cluster_path("8XV100-16gb")
    assert all(target in preset_names() for target in ALIASES.values())


def test_a_file_of_that_name_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lab").write_text(
        "name: mine\nnodes: [{name: a, devices: [{type: T4, count: 1}]}]\n"
    )
    assert resolve_cluster("lab").name == "mine"
    (tmp_path / "lab-windows").mkdir()  # a folder of that name does not hide the preset
    assert resolve_cluster("lab-windows").name == "lab-windows"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("lba", "unknown cluster 'lba'.*close matches: lab"),
        ("8xA100", "close matches: 8xA100-80GB, 8xA100-40GB"),
        ("lab.yaml", "'lab.yaml' does not exist; did you mean the preset lab\\?"),
        ("clusters/x.yaml", "'clusters/x.yaml' does not exist$"),
        ("  ", "--cluster is empty"),
    ],
)
def test_unknown_names_say_what_exists(spec, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=expected):
        cluster_path(spec)
