"""Data factories that tests pass to ``trainplay train --data`` as ``tests.data.datasets:NAME``."""

import time

import numpy as np
import torch

NOT_CALLABLE = 3


def pairs() -> list[tuple[torch.Tensor, int]]:
    """Six samples of shape (2, 3) whose values are their index; labels 0, 1, 2, 0, 1, 2."""
    return [(torch.full((2, 3), float(i)), i % 3) for i in range(6)]


class Named:
    """Four numpy samples that declare five class names, more than the labels use."""

    classes = ("a", "b", "c", "d", "e")

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.int64]:
        return np.arange(4, dtype=np.float64) + index, np.int64(index % 2)


def named() -> Named:
    return Named()


def ragged() -> list[tuple[torch.Tensor, int]]:
    return [(torch.zeros(3), 0), (torch.zeros(4), 1)]


def float_labels() -> list[tuple[torch.Tensor, float]]:
    return [(torch.zeros(3), 0.5)]


def unpaired() -> list[torch.Tensor]:
    return [torch.zeros(3), torch.ones(3)]


class Failing:
    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        raise OSError(f"sample {index} is on a disk that is not mounted")


def failing() -> Failing:
    return Failing()


def empty() -> list:
    return []


def not_a_dataset() -> int:
    return 42


def broken() -> list:
    raise RuntimeError("data root not configured")


class Paced:
    """512 samples of 12 features, 4 classes (fixed values), each read taking ``pause_s``: the
    elastic tests need steps slow enough to kill a node mid-run on any machine."""

    classes = 4

    def __init__(self, pause_s: float):
        generator = torch.Generator().manual_seed(1234)
        self.inputs = torch.randn(512, 12, generator=generator)
        self.labels = torch.randint(0, 4, (512,), generator=generator)
        self.pause_s = pause_s

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        time.sleep(self.pause_s)
        return self.inputs[index], int(self.labels[index])


def paced() -> Paced:
    return Paced(0.002)


def quick() -> Paced:
    """The same samples as :func:`paced`, read at full speed."""
    return Paced(0.0)
