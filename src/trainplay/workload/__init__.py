"""Application level of MD-Roofline: what a model asks of the hardware, layer by layer.

``profile("resnet50", batch_size=32)`` counts one training iteration (forward and backward FLOPs,
bytes to and from device memory, parameters, activations crossing each possible pipeline cut,
bytes saved for backward) with PyTorch's dispatch machinery, on the ``meta`` device by default.

The names below load on first use (PEP 562), so ``trainplay.workload.stats`` and the CLI's
choices do not pay for importing torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "DEVICES": "names",
    "profile": "api",
    "Block": "blocks",
    "split_blocks": "blocks",
    "PRESETS": "presets",
    "DecoderConfig": "presets",
    "Decoder": "decoder",
    "profile_model": "profiler",
    "DTYPES": "stats",
    "GRANULARITIES": "stats",
    "LayerStats": "stats",
    "WorkloadProfile": "stats",
    "ModelSource": "zoo",
    "model_names": "zoo",
    "parse_shape": "zoo",
    "resolve_model": "zoo",
}

__all__ = [
    "DEVICES",
    "DTYPES",
    "GRANULARITIES",
    "PRESETS",
    "Block",
    "Decoder",
    "DecoderConfig",
    "LayerStats",
    "ModelSource",
    "WorkloadProfile",
    "model_names",
    "parse_shape",
    "profile",
    "profile_model",
    "resolve_model",
    "split_blocks",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
