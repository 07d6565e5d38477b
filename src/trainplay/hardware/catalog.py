"""A catalog of common accelerators and links, every number with its source.

FLOP/s are **dense** peaks (vendors often print 2:4-sparse figures, twice these); ``fp32`` is the
non-tensor-core rate PyTorch uses for fp32 matmuls by default, ``tf32`` the tensor-core rate it
uses when TF32 is allowed; ``fp16``/``bf16`` are tensor-core rates with fp32 accumulation, as
training uses. Memory sizes are the vendor's "GB" read as GiB (HBM and GDDR come in power-of-two
stacks; the driver keeps a few hundred MiB of them). Link bandwidths are per direction.

These are datasheet numbers: what hardware promises, not what it delivers. MD-Roofline wants the
*achievable* peaks, which ``trainplay hw measure`` measures; a measured device overrides these.
The generic ``cpu`` entry has no datasheet at all: it is built from this machine's measurement.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from trainplay.hardware.spec import DeviceSpec, LinkSpec, SpecError

__all__ = ["DEVICES", "LINKS", "CatalogDevice", "CatalogLink", "device", "link"]

GiB = 2**30
T = 1e12
G = 1e9


@dataclass(frozen=True)
class CatalogDevice:
    name: str
    peak_flops: dict[str, float]
    mem_bw_bps: float
    mem_bytes: int
    source: str


@dataclass(frozen=True)
class CatalogLink:
    name: str
    bandwidth_bps: float
    latency_s: float
    source: str


_DEVICES = [
    CatalogDevice(
        "V100-16GB",
        {"fp32": 15.7 * T, "fp16": 125 * T},
        900 * G,
        16 * GiB,
        "NVIDIA Tesla V100 datasheet, SXM2 column (no bf16 on Volta)",
    ),
    CatalogDevice(
        "V100-32GB",
        {"fp32": 15.7 * T, "fp16": 125 * T},
        900 * G,
        32 * GiB,
        "NVIDIA Tesla V100 datasheet, SXM2 column (no bf16 on Volta)",
    ),
    CatalogDevice(
        "A100-40GB",
        {"fp32": 19.5 * T, "tf32": 156 * T, "bf16": 312 * T, "fp16": 312 * T},
        1555 * G,
        40 * GiB,
        "NVIDIA A100 Tensor Core GPU datasheet, A100 40GB SXM column, dense",
    ),
    CatalogDevice(
        "A100-80GB",
        {"fp32": 19.5 * T, "tf32": 156 * T, "bf16": 312 * T, "fp16": 312 * T},
        2039 * G,
        80 * GiB,
        "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column, dense",
    ),
    CatalogDevice(
        "H100-SXM",
        {
            "fp32": 67 * T,
            "tf32": 494.7 * T,
            "bf16": 989.4 * T,
            "fp16": 989.4 * T,
            "fp8": 1978.9 * T,
        },
        3.35e12,
        80 * GiB,
        "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column, sparse figures halved",
    ),
    CatalogDevice(
        "H100-PCIe",
        {"fp32": 51 * T, "tf32": 378 * T, "bf16": 756 * T, "fp16": 756 * T, "fp8": 1513 * T},
        2.0e12,
        80 * GiB,
        "NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe column, sparse figures halved",
    ),
    CatalogDevice(
        "H200",
        {"fp32": 67 * T, "tf32": 494.7 * T, "bf16": 989.5 * T, "fp16": 989.5 * T, "fp8": 1979 * T},
        4.8e12,
        141 * GiB,
        "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column, sparse figures halved",
    ),
    CatalogDevice(
        "L4",
        {"fp32": 30.3 * T, "tf32": 60 * T, "bf16": 121 * T, "fp16": 121 * T, "fp8": 242 * T},
        300 * G,
        24 * GiB,
        "NVIDIA L4 Tensor Core GPU datasheet, sparse figures halved",
    ),
    CatalogDevice(
        "T4",
        {"fp32": 8.1 * T, "fp16": 65 * T},
        320 * G,
        16 * GiB,
        "NVIDIA T4 Tensor Core GPU datasheet (mixed-precision fp16; no bf16 on Turing)",
    ),
    CatalogDevice(
        "A10",
        {"fp32": 31.2 * T, "tf32": 62.5 * T, "bf16": 125 * T, "fp16": 125 * T},
        600 * G,
        24 * GiB,
        "NVIDIA A10 Tensor Core GPU datasheet, sparse figures halved",
    ),
    CatalogDevice(
        "RTX2080Ti",
        {"fp32": 13.4 * T, "fp16": 53.8 * T},
        616 * G,
        11 * GiB,
        "NVIDIA Turing GPU Architecture whitepaper (2018), GeForce RTX 2080 Ti at reference "
        "clocks; fp16 tensor with fp32 accumulate",
    ),
    CatalogDevice(
        "RTX3090",
        {"fp32": 35.6 * T, "tf32": 35.6 * T, "bf16": 71 * T, "fp16": 71 * T},
        936 * G,
        24 * GiB,
        "NVIDIA Ampere GA102 GPU Architecture whitepaper (2020), GeForce RTX "
        "3090; tensor rates with fp32 accumulate, dense",
    ),
    CatalogDevice(
        "RTX4090",
        {
            "fp32": 82.6 * T,
            "tf32": 82.6 * T,
            "bf16": 165.2 * T,
            "fp16": 165.2 * T,
            "fp8": 330.3 * T,
        },
        1008 * G,
        24 * GiB,
        "NVIDIA Ada Lovelace GPU Architecture whitepaper (2022), GeForce RTX "
        "4090; tensor rates with fp32 accumulate, dense",
    ),
    CatalogDevice(
        "MI250X",
        {"fp32": 95.7 * T, "bf16": 383 * T, "fp16": 383 * T},
        3.2768e12,
        128 * GiB,
        "AMD Instinct MI250X accelerator datasheet (fp32 matrix-core rate; vector fp32 is 47.9 TFLOPS)",
    ),
    CatalogDevice(
        "MI300X",
        {
            "fp32": 163.4 * T,
            "tf32": 653.7 * T,
            "bf16": 1307.4 * T,
            "fp16": 1307.4 * T,
            "fp8": 2614.9 * T,
        },
        5.3e12,
        192 * GiB,
        "AMD Instinct MI300X accelerator datasheet (matrix-core rates, dense)",
    ),
]

_PCIE = "PCI-SIG PCI Express Base Specification {}: {} GT/s per lane x16, {} encoding"
_NCCL_LAT = "latency: NCCL tuning model (src/graph/tuning.cc), {} hop latency of the LL protocol"
_TCP_LAT = (
    "latency: assumed 25 us, the order of a kernel TCP round trip on a LAN; no vendor figure "
    "exists, measure yours with `trainplay hw measure`"
)
_LINKS = [
    CatalogLink(
        "pcie3",
        8e9 * 16 * 128 / 130 / 8,
        1.0e-6,
        _PCIE.format("3.0", 8, "128b/130b") + "; " + _NCCL_LAT.format("PCI"),
    ),
    CatalogLink(
        "pcie4",
        16e9 * 16 * 128 / 130 / 8,
        1.0e-6,
        _PCIE.format("4.0", 16, "128b/130b") + "; " + _NCCL_LAT.format("PCI"),
    ),
    CatalogLink(
        "pcie5",
        32e9 * 16 * 128 / 130 / 8,
        1.0e-6,
        _PCIE.format("5.0", 32, "128b/130b") + "; " + _NCCL_LAT.format("PCI"),
    ),
    CatalogLink(
        "nvlink2",
        150 * G,
        0.5e-6,
        "NVIDIA Tesla V100 datasheet: 300 GB/s NVLink both ways (6 links "
        "x 25 GB/s each way); " + _NCCL_LAT.format("NVLink"),
    ),
    CatalogLink(
        "nvlink3",
        300 * G,
        0.5e-6,
        "NVIDIA A100 datasheet: 600 GB/s NVLink both ways (12 links x "
        "25 GB/s each way); " + _NCCL_LAT.format("NVLink"),
    ),
    CatalogLink(
        "nvlink4",
        450 * G,
        0.5e-6,
        "NVIDIA H100 datasheet: 900 GB/s NVLink both ways (18 links x "
        "25 GB/s each way); " + _NCCL_LAT.format("NVLink"),
    ),
    CatalogLink("10gbe", 10e9 / 8, 25e-6, "IEEE 802.3ae 10 Gb/s line rate; " + _TCP_LAT),
    CatalogLink("25gbe", 25e9 / 8, 25e-6, "IEEE 802.3by 25 Gb/s line rate; " + _TCP_LAT),
    CatalogLink("100gbe", 100e9 / 8, 25e-6, "IEEE 802.3ba 100 Gb/s line rate; " + _TCP_LAT),
    CatalogLink(
        "ib-edr",
        100e9 / 8,
        2.7e-6,
        "InfiniBand Trade Association roadmap: EDR 4x = 100 Gb/s; " + _NCCL_LAT.format("network"),
    ),
    CatalogLink(
        "ib-hdr",
        200e9 / 8,
        2.7e-6,
        "InfiniBand Trade Association roadmap: HDR 4x = 200 Gb/s; " + _NCCL_LAT.format("network"),
    ),
    CatalogLink(
        "ib-ndr",
        400e9 / 8,
        2.7e-6,
        "InfiniBand Trade Association roadmap: NDR 4x = 400 Gb/s; " + _NCCL_LAT.format("network"),
    ),
]

DEVICES: dict[str, CatalogDevice] = {d.name: d for d in _DEVICES}
"""Catalog devices by name. ``cpu`` is not here: it comes from measurement (:mod:`.local`)."""
LINKS: dict[str, CatalogLink] = {link.name: link for link in _LINKS}
"""Catalog links by name."""

_FOLD = {name.lower().replace("-", "").replace("_", ""): name for name in [*DEVICES, *LINKS]}


def _lookup(name: str, table: dict, kind: str, path: tuple, extra: tuple[str, ...] = ()):
    if name in table:
        return table[name]
    folded = _FOLD.get(name.lower().replace("-", "").replace("_", ""))
    if folded in table:
        return table[folded]
    choices = [*table, *extra]
    close = difflib.get_close_matches(name, choices, n=4, cutoff=0.4) or difflib.get_close_matches(
        name.upper(), [c.upper() for c in choices], n=4, cutoff=0.4
    )
    hint = f"; close matches: {', '.join(close)}" if close else ""
    raise SpecError(path, f"unknown {kind} {name!r}{hint} (see `trainplay hw list`)")


def device(name: str, path: tuple = ("type",)) -> DeviceSpec:
    """The catalog device ``name`` as a one-device :class:`DeviceSpec` (case and dashes ignored)."""
    entry: CatalogDevice = _lookup(name, DEVICES, "device type", path, extra=("cpu",))
    return DeviceSpec(
        name=entry.name,
        type=entry.name,
        peak_flops=dict(entry.peak_flops),
        mem_bw_bps=entry.mem_bw_bps,
        mem_bytes=entry.mem_bytes,
        source=entry.source,
    )


def link(name: str, path: tuple = ()) -> LinkSpec:
    """The catalog link ``name`` as a :class:`LinkSpec`."""
    entry: CatalogLink = _lookup(name, LINKS, "link type", path)
    return LinkSpec(
        name=entry.name,
        type=entry.name,
        bandwidth_bps=entry.bandwidth_bps,
        latency_s=entry.latency_s,
        source=entry.source,
    )
