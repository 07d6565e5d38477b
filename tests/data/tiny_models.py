"""Small models for tests that train for real (validate, diagnose, train): seconds, not minutes."""

import os
import time

import torch
from torch import nn

from trainplay.workload.decoder import Decoder, DecoderConfig, Head, preset


def tiny_cnn() -> nn.Module:
    """3x32x32 images -> 10 classes; four blocks."""
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 32, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 10),
    )


def deep_mlp() -> nn.Module:
    """12 features -> 4 classes; seven blocks, no batch statistics (micro-batching leaves it exact)."""
    return nn.Sequential(
        nn.Linear(12, 32),
        nn.Tanh(),
        nn.Linear(32, 32),
        nn.Tanh(),
        nn.Linear(32, 16),
        nn.Tanh(),
        nn.Linear(16, 4),
    )


SLOW_RANK_ENV = "TRAINPLAY_TEST_SLOW_RANK"
"""The rank that :func:`spun_mlp` slows down (none when unset)."""
SLOW_GEMMS_ENV = "TRAINPLAY_TEST_SLOW_GEMMS"
"""How many 256x256 GEMMs it adds per forward (4 when unset)."""


class _Spin(nn.Module):
    """The identity, plus four 256x256 GEMMs (~1.5 ms here) per call on the rank that
    ``$TRAINPLAY_TEST_SLOW_RANK`` names: a device slower than its peers in compute. Never on
    ``meta`` (profiling), so every rank prices the same model."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.device.type != "meta" and os.environ.get(SLOW_RANK_ENV) == os.environ.get("RANK"):
            a = torch.full((256, 256), 1 / 256)
            for _ in range(int(os.environ.get(SLOW_GEMMS_ENV, "4"))):
                a = a @ a
        return x


def spun_mlp() -> nn.Module:
    """:func:`deep_mlp` with :class:`_Spin` in its first block."""
    layers = list(deep_mlp())
    return nn.Sequential(layers[0], _Spin(), *layers[1:])


def _tiny_config(**overrides: int) -> DecoderConfig:
    sizes = {"vocab_size": 64, "d_model": 32, "n_heads": 4, "d_ff": 64, "n_layers": 2}
    return preset("gpt2-small", **{**sizes, "context_len": 16, **overrides})


def tiny_decoder() -> nn.Module:
    """GPT-style, embeddings tied across the first and last block: vocabulary 64, two layers of
    width 32, context 16; blocks embed, layers.0, layers.1, head."""
    return Decoder(_tiny_config())


class _PacedHead(Head):
    """A head that takes ``pause_s`` per sample: elastic tests need steps slow enough to kill a
    node mid-run on any machine (the numbers are the plain head's)."""

    pause_s = 0.002

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(self.pause_s * x.shape[0])
        return super().forward(x)


def paced_decoder() -> nn.Module:
    """:func:`tiny_decoder` with a head that sleeps 2 ms per sample."""
    model = Decoder(_tiny_config())
    model.head = _PacedHead(model.config)
    model.head.proj.weight = model.embed.tokens.weight
    return model


def roomy_decoder() -> nn.Module:
    """63M parameters (vocabulary 8192, eight layers of width 768, tied embeddings): its fp32
    training state with Adam (16 bytes per parameter, 1.0 GB) fits on none of the 448 MiB devices
    of tests/data/clusters/small-cpus.yaml, but on four of them."""
    sizes = {"vocab_size": 8192, "d_model": 768, "n_heads": 12, "d_ff": 3072, "n_layers": 8}
    return Decoder(_tiny_config(**sizes, context_len=32))


class _Gain(nn.Module):
    """A learned scale without reset_parameters: a stage built on meta cannot initialise it."""

    def __init__(self, width: int):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gain


def uninitialisable_decoder() -> nn.Module:
    """Token ids -> logits, a chain of modules one of which has no reset_parameters."""
    return nn.Sequential(nn.Embedding(64, 32), _Gain(32), nn.Linear(32, 64))


def bad_shape_decoder() -> nn.Module:
    """Token ids -> one vector per sample, not per position."""
    return nn.Sequential(nn.Embedding(64, 32), nn.Flatten(), nn.LazyLinear(64))
