"""A small classifier for scikit-learn's 8x8 digits, the model README's `trainplay train` example
trains: ``trainplay train examples.digits_mlp:model --data digits ...`` (run from the clone's root;
trainplay imports ``pkg.module:factory`` specs with the current folder on the path)."""

from torch import nn


def model() -> nn.Module:
    """64 pixels in, 10 class logits out."""
    return nn.Sequential(
        nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10)
    )
