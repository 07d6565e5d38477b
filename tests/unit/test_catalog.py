"""The catalog has what the issue lists, every number positive and sourced, and finds close names."""

import pytest

from trainplay.hardware import catalog
from trainplay.hardware.spec import SpecError

REQUIRED_DEVICES = [
    "V100-16GB",
    "V100-32GB",
    "A100-40GB",
    "A100-80GB",
    "H100-SXM",
    "H100-PCIe",
    "H200",
    "L4",
    "T4",
    "A10",
    "RTX2080Ti",
    "RTX3090",
    "RTX4090",
    "MI250X",
    "MI300X",
]
REQUIRED_LINKS = [
    "pcie3",
    "pcie4",
    "pcie5",
    "nvlink2",
    "nvlink3",
    "nvlink4",
    "10gbe",
    "25gbe",
    "100gbe",
    "ib-edr",
    "ib-hdr",
    "ib-ndr",
]


@pytest.mark.parametrize("name", REQUIRED_DEVICES)
def test_device_entries_are_complete_and_sourced(name):
    entry = catalog.DEVICES[name]
    assert entry.peak_flops["fp32"] > 0 and all(v > 0 for v in entry.peak_flops.values())
    assert entry.mem_bw_bps > 0 and entry.mem_bytes > 0
    assert len(entry.source) > 20
    # a tensor-core rate is above the plain fp32 rate on every accelerator listed
    assert max(entry.peak_flops.get(d, 0) for d in ("fp16", "bf16")) > entry.peak_flops["fp32"]


@pytest.mark.parametrize("name", REQUIRED_LINKS)
def test_link_entries_are_complete_and_sourced(name):
    entry = catalog.LINKS[name]
    assert entry.bandwidth_bps > 0 and entry.latency_s > 0 and len(entry.source) > 20


def test_link_bandwidths_follow_their_generations():
    bw = {n: catalog.LINKS[n].bandwidth_bps for n in REQUIRED_LINKS}
    assert bw["pcie3"] < bw["pcie4"] < bw["pcie5"] < bw["nvlink2"] < bw["nvlink3"] < bw["nvlink4"]
    assert bw["10gbe"] < bw["25gbe"] < bw["100gbe"] == bw["ib-edr"] < bw["ib-hdr"] < bw["ib-ndr"]
    assert bw["pcie3"] == pytest.approx(15.75e9, rel=1e-3)  # 8 GT/s x 16 lanes x 128/130 / 8


def test_lookup_ignores_case_and_dashes():
    assert catalog.device("v100-16gb").name == "V100-16GB"
    assert catalog.device("h100sxm").name == "H100-SXM"
    assert catalog.link("IB-HDR").name == "ib-hdr"


@pytest.mark.parametrize(
    ("name", "expected"), [("V100", "V100-16GB"), ("RTX 3090", "RTX3090"), ("A100", "A100-40GB")]
)
def test_unknown_device_lists_close_matches(name, expected):
    with pytest.raises(
        SpecError, match=f"unknown device type {name!r}; close matches: .*{expected}"
    ):
        catalog.device(name)


def test_unknown_link_lists_close_matches():
    with pytest.raises(SpecError, match="unknown link type 'nvlink5'; close matches: nvlink"):
        catalog.link("nvlink5")
