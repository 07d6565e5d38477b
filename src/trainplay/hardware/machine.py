"""Facts about the machine this process runs on, read from the OS (Linux ``/proc`` and ``/sys``)."""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
from pathlib import Path

__all__ = [
    "VECTOR_FLAGS",
    "cpu_features",
    "cpu_name",
    "gpu_names",
    "last_level_cache_bytes",
    "physical_memory_bytes",
    "torch_version",
    "usable_cpus",
]

# Device nodes of the GPU drivers torch.cuda can use: NVIDIA, AMD ROCm (KFD), WSL2's CUDA (dxg).
_GPU_DRIVER_NODES = (
    "/dev/nvidiactl",
    "/dev/nvidia0",
    "/dev/kfd",
    "/dev/dxg",
    "/proc/driver/nvidia",
)


def cpu_name() -> str:
    """The CPU model, e.g. ``Intel(R) Xeon(R) Processor``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


VECTOR_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "sve")
"""The vector extensions that decide which kernels PyTorch's CPU backends run."""


def cpu_features() -> tuple[str, ...]:
    """The CPU's :data:`VECTOR_FLAGS` (``/proc/cpuinfo``): two hosts that both call themselves
    ``AMD EPYC`` ran resnet18 at batch 32 on 32x32 images at 84 ms (AVX-512) and 289 ms (AVX2)
    per training step, so a measurement of one is not the other's."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                have = set(line.split(":", 1)[1].split())
                return tuple(f for f in VECTOR_FLAGS if f in have)
    except OSError:
        pass
    return ()


def usable_cpus() -> int:
    """CPUs this process may run on."""
    return len(os.sched_getaffinity(0))


def physical_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def last_level_cache_bytes() -> int:
    """Largest CPU cache sysfs reports for CPU 0 (0 when unknown)."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip().upper()
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes, default=0)


def gpu_names() -> list[str]:
    """The GPUs torch sees, by name. Without a GPU driver on a Linux machine there are none, and
    torch (seconds to import) is not imported to learn so."""
    if sys.platform == "linux" and not any(Path(p).exists() for p in _GPU_DRIVER_NODES):
        return []
    import torch

    if not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def torch_version() -> str:
    """``torch.__version__`` (local label included, e.g. ``2.14.1+cu130``) without importing torch:
    read from the ``torch/version.py`` its build wrote (the installed metadata drops the label)."""
    if "torch" in sys.modules:
        return str(sys.modules["torch"].__version__)
    found = importlib.util.find_spec("torch")
    if found is None or found.origin is None:
        return "none"
    spec = importlib.util.spec_from_file_location(
        "trainplay._torch_version", Path(found.origin).with_name("version.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.__version__)
