"""Performance profiles of catalog GPUs from published *microbenchmark* results, every number sourced.

A catalog device's datasheet says what it promises; this module says what published
microbenchmarks saw it deliver, in the form the cost model prices with
(:class:`~trainplay.hardware.profile.PerfProfile`):

- **GEMM and convolution efficiency by size** (compute classes): measured FLOP/s of many shapes,
  binned by FLOPs per call (median per factor-of-two bin), made monotone (a larger call never runs
  slower per FLOP: :meth:`~trainplay.hardware.profile.Curve.monotone`). Convolutions have their
  own curves, forward and backward, where DeepBench measured them (V100, T4; kernels wider than
  1x1; its ``Resnet`` rows are left out, since ResNet-50 is one of the workloads
  ``benchmarks/published_gpu.py`` validates on); elsewhere, 1x1 convolutions (which are GEMMs),
  and fused attention everywhere, the GEMM curve prices them (cuDNN's
  implicit-GEMM convolutions and flash attention run tensor-core GEMM tiles: an assumption,
  stated here, not a measurement). A device with only a best-over-sizes number takes the curve
  *shape* of the nearest measured device of its architecture, scaled to its own published best
  (named per device below).
- **Achievable memory bandwidth** (memory classes): a STREAM-type triad on large arrays; every
  memory-bound class runs at it (no per-class GPU measurement was found).
- **Fixed cost per operator** (the host's, hidden behind long kernels: the device is
  asynchronous): PyTorch eager's dispatch with autograd, 6.8 µs per operator (pytorch/pytorch
  issue #41383: ``y = 2*x`` with ``requires_grad``, "6.8 seconds for 1 million operations"), plus
  the CUDA launch call, 3.42 µs (``cudaLaunchKernel`` average on an A100 host, Nsight Systems,
  argonne-lcf/ALCFBeginnersGuide ``polaris/02_profiling.md``); a view launches nothing: 2 µs
  (the same issue, maintainer's figure for a plain dispatch).
- **Optimizer**: the step streams its tensors at the achievable bandwidth (``torch.optim``'s
  multi-tensor kernels on CUDA), 1 µs per tensor beyond that (an assumption: one launch serves
  many tensors).

Collectives are a property of the interconnect, not of the device: the links' published
all-reduce curves live in :mod:`trainplay.hardware.catalog`.
"""

from __future__ import annotations

import csv
import math
import statistics
from functools import cache
from pathlib import Path

from trainplay.hardware.profile import Curve, PerfProfile

__all__ = ["SOURCES", "catalog_profile"]

T = 1e12
_DEEPBENCH = Path(__file__).parent / "published" / "deepbench_gemm.csv"
_DEEPBENCH_CONV = Path(__file__).parent / "published" / "deepbench_conv.csv"
_DEEPBENCH_SOURCE = (
    "Baidu DeepBench training GEMM results (baidu-research/DeepBench@da81ba7, "
    "results/train/DeepBench_NV_{device}.xlsx, 160 shapes)"
)

# (m, n, k) -> FLOP/s; XLA's measured matmul table for sm_90 (Hopper), bf16 x bf16 -> bf16:
# tensorflow/tensorflow@372d578 third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h
_XLA_SM90_BF16 = {
    (256, 256, 256): 6452775384615,
    (512, 512, 512): 40721398058252,
    (1024, 1024, 1024): 236298816901408,
    (2048, 2048, 2048): 631984593290170,
    (4096, 4096, 4096): 783328793548203,
    (4096, 4096, 256): 392162828341855,
    (256, 4096, 4096): 412026793553338,
    (4096, 256, 4096): 376223484232655,
    (1024, 1024, 4096): 470114633975481,
    (4096, 4096, 1024): 677439636593059,
}
_XLA_SOURCE = "XLA's measured matmul table for sm_90, bf16 (tensorflow/tensorflow@372d578)"
# (m, n, k) -> FLOP/s; Azure AI-benchmarking-guide, cuBLASLt FP16, ND A100 v4 (A100-SXM4-80GB):
# Azure/AI-benchmarking-guide@8fd0c6e Azure_Results/ND_A100_v4_results.md L17-31
_AZURE_A100_FP16 = {
    (1024, 1024, 1024): 119.4 * T,
    (2048, 2048, 2048): 221.8 * T,
    (4096, 4096, 4096): 228.0 * T,
    (8192, 8192, 8192): 253.7 * T,
    (16384, 16384, 16384): 256.5 * T,
    (1024, 2145, 1024): 132.8 * T,
    (6144, 12288, 12288): 250.8 * T,
    (802816, 192, 768): 157.8 * T,
}
_AZURE_SOURCE = (
    "Azure AI-benchmarking-guide, cuBLASLt FP16 on ND A100 v4 (Azure/AI-benchmarking-guide@8fd0c6e)"
)
_ZZC = "zzc0721/torch-performance-test-data database.md (square torch.mm, best of 1k-10k)"

# Achievable memory bandwidth, bytes read + written per second (triad on large arrays).
_BANDWIDTH = {
    "V100": (814e9, "te42kyfo/gpu-benches@1c36d50 gpu-stream/v100.txt, triad at 100% occupancy"),
    "A100-40GB": (1377.5e9, "BabelStream 5.0 triad, A100-SXM4-40GB (ALCF Polaris guide)"),
    "A100-80GB": (
        1724.8e9,
        "BabelStream 5.0 triad, A100-SXM4-80GB (ukri-bench/benchmark-BabelStream)",
    ),
    "H100-SXM": (2.97e12, "Azure AI-benchmarking-guide ND H100 v5, HBM triad 2.97 TB/s"),
    "H100-PCIe": (1832e9, "te42kyfo/gpu-benches@1c36d50 gpu-stream/h100_pcie.txt, triad"),
    "H200": (4.15e12, "Azure AI-benchmarking-guide ND H200 v5, HBM triad 4.15 TB/s"),
    "T4": (239.6e9, "cuda-samples bandwidthTest device-to-device, Tesla T4 (router-gao/cuda-demo)"),
    "RTX2080Ti": (
        518.9e9,
        "cuda-samples bandwidthTest device-to-device, RTX 2080 Ti (Anthony-Hoo post)",
    ),
    "MI300X": (3948e9, "AMD ROCm system-acceptance MI300X, BabelStream triad 3948061 MB/s"),
}

_OVERHEAD_S = {"fwd": 6.8e-6 + 3.42e-6, "bwd": 6.8e-6 + 3.42e-6, "view": 2e-6, "call": 2e-6}
_OPT_FIXED_S = 1e-6


def _points(shapes: dict[tuple[int, int, int], float]) -> list[tuple[float, float]]:
    return [(2.0 * m * n * k, rate) for (m, n, k), rate in shapes.items()]


@cache
def _deepbench(device: str, dtype: str) -> list[tuple[float, float]]:
    out = []
    with _DEEPBENCH.open() as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        for row in rows:
            if row["device"] == device and row["dtype"] == dtype:
                m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
                out.append((2.0 * m * n * k, float(row["tflops"]) * T))
    return out


@cache
def _deepbench_conv(device: str, dtype: str, phase: str) -> list[tuple[float, float]]:
    """(direct-convolution FLOPs, FLOP/s) of DeepBench's convolutions on ``device``; ``bwd``:
    both gradients (or only the weights' where the input gradient was not run), as one call."""
    out = []
    with _DEEPBENCH_CONV.open() as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            if row["device"] != device or row["dtype"] != dtype or row["application"] == "Resnet":
                continue
            w, h, c, n, k, s, r = (int(row[x]) for x in ("w", "h", "c", "n", "k", "s", "r"))
            if s == r == 1:  # a 1x1 convolution is priced as the GEMM it is (class conv_1x1)
                continue
            p = (w + 2 * int(row["pad_w"]) - s) // int(row["stride_w"]) + 1
            q = (h + 2 * int(row["pad_h"]) - r) // int(row["stride_h"]) + 1
            flops = 2.0 * n * k * p * q * c * r * s
            if phase == "fwd":
                out.append((flops, flops / (float(row["fwd_ms"]) * 1e-3)))
                continue
            grads = [float(row[x]) for x in ("bwd_input_ms", "bwd_params_ms") if row[x] != "N/A*"]
            out.append((flops * len(grads), flops * len(grads) / (sum(grads) * 1e-3)))
    return out


def _curve(points: list[tuple[float, float]], scale: float = 1.0) -> Curve:
    """The median rate per factor-of-two bin of FLOPs, times ``scale``, made monotone."""
    bins: dict[int, list[tuple[float, float]]] = {}
    for flops, rate in points:
        bins.setdefault(math.floor(math.log2(flops)), []).append((flops, rate))
    sizes = [statistics.median(p[0] for p in bins[b]) for b in sorted(bins)]
    rates = [scale * statistics.median(p[1] for p in bins[b]) for b in sorted(bins)]
    return Curve(sizes=tuple(sizes), rates=tuple(rates)).monotone()


def _conv(device: str, dtype: str) -> dict[str, Curve]:
    """DeepBench's convolution curves, forward and backward, where it measured ``device``."""
    name = {"V100-16GB": "V100", "V100-32GB": "V100", "T4": "T4"}.get(device)
    if name is None or dtype not in ("fp32", "fp16"):
        return {}
    return {f"conv.{ph}": _curve(_deepbench_conv(name, dtype, ph)) for ph in ("fwd", "bwd")}


def _scaled_to(points: list[tuple[float, float]], best: float) -> list[tuple[float, float]]:
    """``points`` scaled so that their curve's best rate is ``best``."""
    top = _curve(points).best
    return [(f, r * best / top) for f, r in points]


# device -> dtype -> (GEMM points, source)
def _gemm(device: str, dtype: str) -> tuple[list[tuple[float, float]], str] | None:
    v100 = "V100-16GB", "V100-32GB"
    if device in v100 and dtype in ("fp32", "fp16"):
        return _deepbench("V100", dtype), _DEEPBENCH_SOURCE.format(device="V100")
    if device == "T4" and dtype in ("fp32", "fp16"):
        return _deepbench("T4", dtype), _DEEPBENCH_SOURCE.format(device="T4")
    if device in ("A100-80GB", "A100-40GB") and dtype in ("fp16", "bf16"):
        best = 246.33 * T if device == "A100-40GB" and dtype == "bf16" else None
        points = _points(_AZURE_A100_FP16)
        if best is not None:
            return _scaled_to(points, best), f"{_AZURE_SOURCE}, scaled to {_ZZC}: 246.33 TFLOP/s"
        return points, _AZURE_SOURCE
    if device in ("H100-SXM", "H200") and dtype in ("bf16", "fp16"):
        return _points(_XLA_SM90_BF16), _XLA_SOURCE
    if device in ("H100-SXM", "H200") and dtype == "fp32":  # no TF32: PyTorch's default for mm
        best = 52.11 * T if device == "H100-SXM" else 51.34 * T
        return (
            _scaled_to(_points(_XLA_SM90_BF16), best),
            f"shape of {_XLA_SOURCE}, scaled to {_ZZC}: {best / T:.2f} TFLOP/s fp32",
        )
    consumer = {  # best over sizes (zzc0721; 2080 Ti: bewantbe n=8000) and a curve of its kind
        ("RTX3090", "fp32"): (24.84 * T, "A100-80GB", "fp16"),
        ("RTX3090", "fp16"): (75.88 * T, "A100-80GB", "fp16"),
        ("RTX3090", "bf16"): (76.68 * T, "A100-80GB", "fp16"),
        ("RTX4090", "fp32"): (54.77 * T, "A100-80GB", "fp16"),
        ("RTX4090", "fp16"): (171.06 * T, "A100-80GB", "fp16"),
        ("RTX4090", "bf16"): (173.31 * T, "A100-80GB", "fp16"),
        ("RTX2080Ti", "fp32"): (11.4 * T, "T4", "fp32"),
        ("RTX2080Ti", "fp16"): (44.9 * T, "T4", "fp16"),
    }
    if (device, dtype) in consumer:
        best, like, like_dtype = consumer[(device, dtype)]
        got = _gemm(like, like_dtype)
        assert got is not None
        where = "bewantbe/busy-gemm-benchmark (n=8000)" if device == "RTX2080Ti" else _ZZC
        return (
            _scaled_to(got[0], best),
            f"curve shape of {like} ({got[1]}), scaled to {where}: {best / T:.2f} TFLOP/s",
        )
    return None


def _bandwidth(device: str) -> tuple[float, str] | None:
    key = "V100" if device.startswith("V100") else device
    return _BANDWIDTH.get(key)


@cache
def catalog_profile(device: str, dtype: str) -> PerfProfile | None:
    """The published profile of catalog ``device`` for GEMMs in ``dtype``; ``None`` when no
    GEMM-by-size and bandwidth microbenchmark of it (or of its architecture) was found."""
    gemm, bandwidth = _gemm(device, dtype), _bandwidth(device)
    if gemm is None or bandwidth is None:
        return None
    curve = _curve(gemm[0])
    bps, bw_source = bandwidth
    memory = Curve(sizes=(1.0,), rates=(bps,))
    optimizer = {
        f"optimizer.{name}": Curve(sizes=(1.0,), rates=(bps / accesses,))
        for name, accesses in (("sgd", 5), ("adam", 7))
    }
    classes = {
        "gemm": curve,
        "conv": curve,
        "conv_1x1": curve,
        **_conv(device, dtype),
        "attention": curve,
        **dict.fromkeys(("conv_dw", "norm", "elementwise", "reduction", "pool", "copy"), memory),
        **optimizer,
    }
    overhead = {**_OVERHEAD_S, "optimizer.sgd": _OPT_FIXED_S, "optimizer.adam": _OPT_FIXED_S}
    return PerfProfile(
        dtype=dtype,
        classes=classes,
        overhead_s=overhead,
        asynchronous=True,
        source=f"published microbenchmarks: GEMM {gemm[1]}; "
        + ("convolutions: DeepBench's, without its ResNet rows; " if _conv(device, dtype) else "")
        + f"memory {bw_source}; fixed costs pytorch/pytorch#41383 and ALCF cudaLaunchKernel",
    )


SOURCES = {
    "gemm": [_DEEPBENCH_SOURCE.format(device="V100/T4"), _XLA_SOURCE, _AZURE_SOURCE, _ZZC],
    "bandwidth": sorted({s for _, s in _BANDWIDTH.values()}),
}
