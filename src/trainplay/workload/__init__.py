"""Application level of MD-Roofline: what a model asks of the hardware, layer by layer.

``profile("resnet50", batch_size=32)`` counts one training iteration (forward and backward FLOPs,
bytes to and from device memory, parameters, activations crossing each possible pipeline cut,
bytes saved for backward) with PyTorch's dispatch machinery, on the ``meta`` device by default.
"""

from trainplay.workload.api import DEVICES, profile
from trainplay.workload.blocks import Block, split_blocks
from trainplay.workload.decoder import PRESETS, Decoder, DecoderConfig
from trainplay.workload.profiler import profile_model
from trainplay.workload.stats import DTYPES, GRANULARITIES, LayerStats, WorkloadProfile
from trainplay.workload.zoo import ModelSource, model_names, parse_shape, resolve_model

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
