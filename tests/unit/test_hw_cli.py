"""``trainplay hw list | show``: tables, formats, one-line errors."""

import json
from pathlib import Path

import pytest

from trainplay.cli import main

DATA = Path(__file__).parent.parent / "data" / "clusters"


def run(capsys, *argv):
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_list_shows_catalog_with_sources(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAY_CACHE_DIR", str(tmp_path))
    status, out, _ = run(capsys, "hw", "list")
    assert status == 0
    for name in (
        "V100-16GB",
        "MI300X",
        "nvlink4",
        "ib-ndr",
        "IEEE 802.3ae",
        "run `trainplay hw measure`",
    ):
        assert name in out
    status, out, _ = run(capsys, "hw", "list", "--format", "json")
    data = json.loads(out)
    assert data["devices"]["H200"]["mem_bw_bps"] == 4.8e12 and data["devices"]["cpu"] is None
    assert data["links"]["pcie4"]["source"].startswith("PCI-SIG")


def test_show_table_yaml_json(capsys):
    path = str(DATA / "mixed-lab.yaml")
    status, out, _ = run(capsys, "hw", "show", path)
    assert status == 0 and "gtx1080" in out and "0 – 7,200" in out and "6 workers on 2 nodes" in out
    _, out, _ = run(capsys, "hw", "show", path, "--format", "json")
    assert json.loads(out)["inter_link"] == "10gbe"
    _, out, _ = run(capsys, "hw", "show", path, "--format", "yaml")
    assert out.startswith("name: mixed-lab")


def test_show_reports_bad_file_in_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nnodes:\n  - name: a\n    devices: [{type: V100}]\n")
    status, _, err = run(capsys, "hw", "show", str(bad))
    assert status == 2 and err.count("\n") == 1
    assert f"{bad}:4: nodes[0].devices[0].type: unknown device type 'V100'; close matches: " in err
    assert "V100-16GB" in err and "V100-32GB" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["hw", "measure", "--dtype", "fp64"], "--dtype takes fp32, bf16, fp16"),
        (["hw", "measure", "--out", "peaks.json"], "give a .yaml file"),
        (["hw", "measure", "--nnodes", "2"], "several nodes need --rdzv-endpoint"),
        (["hw", "measure", "--nnodes", "x"], "--nnodes takes N or MIN:MAX"),
    ],
)
def test_measure_rejects_bad_flags_before_launching(capsys, argv, message):
    status, _, err = run(capsys, *argv)
    assert status == 2 and message in err and err.count("\n") == 1
