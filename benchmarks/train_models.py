"""The model and data of the runtime benchmarks (``--data benchmarks.train_models:data``)."""

import torch
from torch import nn

WIDTH, DEPTH, CLASSES, SAMPLES = 512, 8, 10, 4096


def mlp() -> nn.Module:
    """WIDTH features -> CLASSES; DEPTH Linear+ReLU blocks: enough work per step to time."""
    layers: list[nn.Module] = []
    for _ in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(WIDTH, CLASSES))


class Data:
    """SAMPLES fixed random samples; reading one costs an index (both scripts read alike)."""

    classes = CLASSES

    def __init__(self) -> None:
        generator = torch.Generator().manual_seed(0)
        self.inputs = torch.randn(SAMPLES, WIDTH, generator=generator)
        self.labels = torch.randint(0, CLASSES, (SAMPLES,), generator=generator)

    def __len__(self) -> int:
        return SAMPLES

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return self.inputs[index], int(self.labels[index])


def data() -> Data:
    return Data()
