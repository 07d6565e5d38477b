"""Performance profiles of catalog GPUs from published *microbenchmark* results, every number sourced.

A catalog device's datasheet says what it promises; this module says what published
microbenchmarks saw it deliver, in the form the cost model prices with
(:class:`~trainplay.hardware.profile.PerfProfile`):

- **GEMM and convolution efficiency by size and shape** (compute classes): measured FLOP/s of
  many shapes, as a surface over FLOPs and arithmetic intensity per call
  (:class:`~trainplay.hardware.profile.Surface`: a skinny product and a square one of the same
  FLOPs run at very different rates). Convolutions have their
  own curves, forward and backward, where DeepBench measured them (V100, T4; kernels wider than
  1x1; its ``Resnet`` rows are left out, since ResNet-50 is one of the workloads
  ``benchmarks/published_gpu.py`` validates on). A 1x1 convolution is a matrix product, but
  cuDNN does not run it at the GEMM's rate: where DeepBench measured 1x1 convolutions (the same
  devices, the same rows left out) one runs at the GEMM curve's rate times the median ratio of
  DeepBench's 1x1 convolutions to the GEMM curve at their own FLOPs and intensity, per phase
  (backward: 0.40-0.65 of the GEMM's; the ratio is taken as independent of size, an assumption:
  DeepBench's 1x1 cases are small, and a surface of them alone would price large calls at a
  small call's rate). Elsewhere 1x1 convolutions, other convolutions and fused attention run at
  the GEMM curve (cuDNN's implicit-GEMM convolutions and flash attention run tensor-core GEMM
  tiles: an assumption, stated here, not a measurement). A device with only a best-over-sizes
  number takes the curve *shape* of the nearest measured device of its architecture, scaled to
  its own published best (named per device below).
- **Sustained clocks** (compute classes): a board that holds its power cap only by lowering its
  clock runs a training job's back-to-back kernels slower than a short benchmark's. Where a
  published GEMM microbenchmark measured the sustained rate, every compute class of that device
  is scaled by it over the curve's rate at that shape (:data:`_SUSTAINED`; the memory classes
  keep their rates: the memory clock is not the one capped).
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

Collectives are a property of the interconnect, not of the device: a catalog link
(:mod:`trainplay.hardware.catalog`) carries its line rate and NCCL's hop latency, not a published
all-reduce curve by message size (none is used yet: NVIDIA's nccl-tests issue #29 reports 12.2
GB/s of all-reduce bus bandwidth over one 100 Gb/s card per node, 4 nodes of 8 GPUs, against the
12.5 of the line rate).
"""

from __future__ import annotations

import csv
import statistics
from functools import cache
from pathlib import Path

from trainplay.hardware.profile import Curve, PerfProfile, Surface

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

# (device, dtype) -> (m, n, k), sustained FLOP/s, source: a GEMM timed back to back long enough
# for the board to reach its power cap.
_SUSTAINED = {
    ("T4", "fp16"): (
        (4096, 4096, 4096),
        24e12,
        "NVIDIA Developer Forums, 'About GPU peak performance' (forums.developer.nvidia.com/t/"
        "264462): cuBLAS fp16 4096x4096x4096 on a T4, mean of 100 runs, about 24 TFLOP/s; "
        "NVIDIA's answer: power capping at the board's 70 W, expected for continuous matrix "
        "multiplies",
    ),
}

_OVERHEAD_S = {"fwd": 6.8e-6 + 3.42e-6, "bwd": 6.8e-6 + 3.42e-6, "view": 2e-6, "call": 2e-6}
_OPT_FIXED_S = 1e-6


_ELEMENT = {"fp32": 4, "fp16": 2, "bf16": 2}


def _gemm_point(m: int, n: int, k: int, rate: float, dtype: str) -> tuple[float, float, float]:
    """(FLOPs, FLOP per byte, FLOP/s) of an m x k by k x n product (each operand once)."""
    flops = 2.0 * m * n * k
    return flops, flops / (_ELEMENT[dtype] * (m * k + k * n + m * n)), rate


def _points(
    shapes: dict[tuple[int, int, int], float], dtype: str
) -> list[tuple[float, float, float]]:
    return [_gemm_point(m, n, k, rate, dtype) for (m, n, k), rate in shapes.items()]


@cache
def _deepbench(device: str, dtype: str) -> list[tuple[float, float, float]]:
    out = []
    with _DEEPBENCH.open() as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        for row in rows:
            if row["device"] == device and row["dtype"] == dtype:
                m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
                out.append(_gemm_point(m, n, k, float(row["tflops"]) * T, dtype))
    return out


@cache
def _deepbench_conv(
    device: str, dtype: str, phase: str, pointwise: bool = False
) -> list[tuple[float, float, float]]:
    """(direct-convolution FLOPs, FLOP per byte, FLOP/s) of DeepBench's convolutions on
    ``device``, those with a 1x1 kernel (``pointwise``) or the others; ``bwd``: both gradients
    (or only the weights' where the input gradient was not run), as one call."""
    out = []
    with _DEEPBENCH_CONV.open() as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            if row["device"] != device or row["dtype"] != dtype or row["application"] == "Resnet":
                continue
            w, h, c, n, k, s, r = (int(row[x]) for x in ("w", "h", "c", "n", "k", "s", "r"))
            if (s == r == 1) != pointwise:
                continue
            p = (w + 2 * int(row["pad_w"]) - s) // int(row["stride_w"]) + 1
            q = (h + 2 * int(row["pad_h"]) - r) // int(row["stride_h"]) + 1
            flops = 2.0 * n * k * p * q * c * r * s
            moved = _ELEMENT[dtype] * (n * c * w * h + k * c * r * s + n * k * p * q)
            if phase == "fwd":
                out.append((flops, flops / moved, flops / (float(row["fwd_ms"]) * 1e-3)))
                continue
            grads = [float(row[x]) for x in ("bwd_input_ms", "bwd_params_ms") if row[x] != "N/A*"]
            work = flops * len(grads)
            out.append((work, work / (moved * len(grads)), work / (sum(grads) * 1e-3)))
    return out


def _curve(points: list[tuple[float, float, float]], scale: float = 1.0) -> Surface:
    """The published points, (FLOPs, intensity) -> FLOP/s times ``scale``, as a surface (the
    median where one shape appears twice)."""
    unique: dict[tuple[float, float], list[float]] = {}
    for flops, intensity, rate in points:
        unique.setdefault((flops, intensity), []).append(rate * scale)
    keys = sorted(unique)
    return Surface(
        sizes=tuple(k[0] for k in keys),
        intensities=tuple(k[1] for k in keys),
        rates=tuple(statistics.median(unique[k]) for k in keys),
    )


def _scaled_to(
    points: list[tuple[float, float, float]], best: float
) -> list[tuple[float, float, float]]:
    """``points`` scaled so that their surface's best rate is ``best``."""
    top = _curve(points).best
    return [(f, a, r * best / top) for f, a, r in points]


def _deepbench_name(device: str, dtype: str) -> str | None:
    """DeepBench's name for ``device`` where it measured its convolutions in ``dtype``."""
    name = {"V100-16GB": "V100", "V100-32GB": "V100", "T4": "T4"}.get(device)
    return name if dtype in ("fp32", "fp16") else None


def _conv(device: str, dtype: str) -> dict[str, Surface]:
    """DeepBench's convolution curves, forward and backward, where it measured ``device``."""
    name = _deepbench_name(device, dtype)
    if name is None:
        return {}
    return {f"conv.{ph}": _curve(_deepbench_conv(name, dtype, ph)) for ph in ("fwd", "bwd")}


def _pointwise_ratio(device: str, dtype: str, phase: str, gemm: Surface) -> float | None:
    """The median, over DeepBench's 1x1 convolutions on ``device``, of their measured rate over
    the ``gemm`` curve's at their FLOPs and intensity (``None`` where none was measured)."""
    name = _deepbench_name(device, dtype)
    if name is None:
        return None
    points = _deepbench_conv(name, dtype, phase, pointwise=True)
    return statistics.median(rate / gemm.rate(f, a) for f, a, rate in points) if points else None


def _sustained(device: str, dtype: str, gemm: Surface) -> tuple[float, str]:
    """The factor on ``device``'s compute classes under a sustained load (1 where no sustained
    rate was published) and its source."""
    got = _SUSTAINED.get((device, dtype))
    if got is None:
        return 1.0, ""
    (m, n, k), rate, source = got
    flops, intensity, _ = _gemm_point(m, n, k, rate, dtype)
    return rate / gemm.rate(flops, intensity), source


# device -> dtype -> (GEMM points, source)
def _gemm(device: str, dtype: str) -> tuple[list[tuple[float, float, float]], str] | None:
    v100 = "V100-16GB", "V100-32GB"
    if device in v100 and dtype in ("fp32", "fp16"):
        return _deepbench("V100", dtype), _DEEPBENCH_SOURCE.format(device="V100")
    if device == "T4" and dtype in ("fp32", "fp16"):
        return _deepbench("T4", dtype), _DEEPBENCH_SOURCE.format(device="T4")
    if device in ("A100-80GB", "A100-40GB") and dtype in ("fp16", "bf16"):
        best = 246.33 * T if device == "A100-40GB" and dtype == "bf16" else None
        points = _points(_AZURE_A100_FP16, dtype)
        if best is not None:
            return _scaled_to(points, best), f"{_AZURE_SOURCE}, scaled to {_ZZC}: 246.33 TFLOP/s"
        return points, _AZURE_SOURCE
    if device in ("H100-SXM", "H200") and dtype in ("bf16", "fp16"):
        return _points(_XLA_SM90_BF16, dtype), _XLA_SOURCE
    if device in ("H100-SXM", "H200") and dtype == "fp32":  # no TF32: PyTorch's default for mm
        best = 52.11 * T if device == "H100-SXM" else 51.34 * T
        return (
            _scaled_to(_points(_XLA_SM90_BF16, "bf16"), best),
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
    pointwise = {}
    for phase in ("fwd", "bwd"):
        ratio = _pointwise_ratio(device, dtype, phase, curve)
        if ratio is not None:
            pointwise[f"conv_1x1.{phase}"] = curve.scaled(ratio)
    sustained, sustained_source = _sustained(device, dtype, curve)
    convolutions = _conv(device, dtype)
    compute = {
        "gemm": curve,
        "conv": curve,
        "conv_1x1": curve,
        **pointwise,
        **convolutions,
        "attention": curve,
    }
    classes = {
        **{name: c.scaled(sustained) for name, c in compute.items()},
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
        + ("convolutions: DeepBench's, without its ResNet rows; " if convolutions else "")
        + (f"sustained x{sustained:.2f}: {sustained_source}; " if sustained_source else "")
        + f"memory {bw_source}; fixed costs pytorch/pytorch#41383 and ALCF cudaLaunchKernel",
    )


SOURCES = {
    "gemm": [_DEEPBENCH_SOURCE.format(device="V100/T4"), _XLA_SOURCE, _AZURE_SOURCE, _ZZC],
    "bandwidth": sorted({s for _, s in _BANDWIDTH.values()}),
    "sustained": sorted({s for _, _, s in _SUSTAINED.values()}),
}
