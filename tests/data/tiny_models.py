"""Small models for tests that train for real (validate, diagnose): seconds, not minutes."""

from torch import nn


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
