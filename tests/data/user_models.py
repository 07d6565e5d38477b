"""Model factories that tests pass to ``trainplay profile`` as ``tests.data.user_models:NAME``."""

from torch import nn


def tiny_mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))


def broken() -> nn.Module:
    raise ValueError("checkpoint path not configured")


def not_a_module() -> int:
    return 42
