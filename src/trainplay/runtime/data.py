"""The data a job trains on: ``trainplay train --data SPEC``.

Each worker fetches only the samples it trains on, by data-set index, in the job's sample order
(:mod:`trainplay.runtime.order`); :meth:`DataSource.batch` turns indices into float32 inputs and
int64 targets. ``SPEC`` names one of four sources:

- ``synthetic``: normal inputs of ``--input-shape`` and uniform targets. Sample ``i`` comes from
  a ``torch.Generator`` seeded by NumPy's ``SeedSequence`` from ``(seed, i)`` alone, so every
  process sees the same sample at the same index without building the data set. 1024 samples and
  10 classes unless told otherwise.
- ``digits``: scikit-learn's bundled 8x8 digits (1797 images, 10 classes, no download), pixels
  scaled to [0, 1]; 64 values per sample, shaped ``(64,)`` or as ``--input-shape`` (e.g. 1,8,8).
- ``imagefolder:PATH``: ``torchvision.datasets.ImageFolder`` (one subfolder of images per class),
  each image converted to ``C`` channels (1: grayscale, 3: RGB) and resized to ``H, W`` of
  ``--input-shape C,H,W`` (default 3,224,224), values in [0, 1].
- ``pkg.mod:factory``: ``factory()`` returns a map-style data set (``__len__``, ``__getitem__``)
  of ``(input, integer label)`` pairs; the first item fixes the sample shape.

``--dataset-size N`` keeps the first ``N`` samples of a fixed data set.
"""

from __future__ import annotations

import difflib
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainplay.errors import UsageError
from trainplay.factory import first_line, import_factory

__all__ = ["DataSource", "check_indices", "open_data"]

_SOURCES = ("synthetic", "digits", "imagefolder")
_SYNTHETIC_SIZE = 1024
_SYNTHETIC_CLASSES = 10
_DIGITS_SIZE = 1797  # sklearn.datasets.load_digits: 1797 images of 8x8 pixels, 16 grey levels
_DIGITS_VALUES = 64
_IMAGE_SHAPE = (3, 224, 224)

_Fetch = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True, kw_only=True)
class DataSource:
    """An opened data set: what it holds, and :meth:`batch` to fetch samples by index."""

    spec: str
    """What the user gave as ``--data``, e.g. ``"digits"``."""
    size: int
    """Samples in the data set (after ``--dataset-size``)."""
    sample_shape: tuple[int, ...]
    """Shape of one input sample."""
    classes: int
    """Number of classes; every target lies in ``[0, classes)``."""
    _fetch: _Fetch = field(repr=False, compare=False)
    """Inputs and targets of checked int64 indices; callers use :meth:`batch`."""

    def batch(self, indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Float32 inputs ``[n, *sample_shape]`` and int64 targets ``[n]`` of the samples at
        ``indices`` (a 1-D integer tensor of data-set indices), in that order.

        Raises ``ValueError`` for indices that are not a 1-D integer tensor inside
        ``[0, size)``, and :class:`~trainplay.errors.UsageError` when a user data set yields an
        item of another shape or a label outside ``[0, classes)``.
        """
        indices = check_indices(indices, self.size, self.spec)
        if indices.numel() == 0:
            empty = torch.empty(0, *self.sample_shape, dtype=torch.float32)
            return empty, torch.empty(0, dtype=torch.int64)
        return self._fetch(indices)


def check_indices(indices: torch.Tensor, size: int, spec: str) -> torch.Tensor:
    """``indices`` as a CPU int64 tensor; ``ValueError`` unless it is a 1-D integer tensor of
    indices inside ``[0, size)`` of the data set ``spec``."""
    indices = torch.as_tensor(indices)
    if indices.ndim != 1 or indices.dtype.is_floating_point or indices.dtype == torch.bool:
        raise ValueError(
            f"indices must be a 1-D integer tensor, got {indices.dtype} {list(indices.shape)}"
        )
    indices = indices.to("cpu", torch.int64)
    if indices.numel():
        low, high = int(indices.min()), int(indices.max())
        if low < 0 or high >= size:
            bad = low if low < 0 else high
            raise ValueError(f"index {bad} is outside the data set {spec!r} of {size} samples")
    return indices


def open_data(
    spec: str,
    *,
    input_shape: tuple[int, ...] | None = None,
    seed: int = 0,
    dataset_size: int | None = None,
    classes: int | None = None,
) -> DataSource:
    """The :class:`DataSource` that ``--data spec`` names (see the module docstring).

    ``input_shape`` is ``--input-shape``, ``seed`` seeds ``synthetic`` data, ``dataset_size``
    keeps that many samples, ``classes`` overrides the number of classes (for a fixed data set
    it may not be smaller than the data's own). Raises :class:`~trainplay.errors.UsageError`
    for anything the user got wrong.
    """
    if input_shape is not None and (not input_shape or any(s < 1 for s in input_shape)):
        raise UsageError(f"--input-shape must be positive integers, got {_shape_text(input_shape)}")
    if dataset_size is not None and dataset_size < 1:
        raise UsageError(f"--dataset-size must be a positive integer, got {dataset_size}")
    if classes is not None and classes < 1:
        raise UsageError(f"--classes must be a positive integer, got {classes}")
    if spec == "synthetic":
        return _synthetic(input_shape, seed, dataset_size, classes)
    if spec == "digits":
        return _digits(input_shape, dataset_size, classes)
    if spec.startswith("imagefolder:"):
        return _imagefolder(spec, input_shape, dataset_size, classes)
    if ":" in spec:
        return _factory(spec, input_shape, dataset_size, classes)
    close = difflib.get_close_matches(spec.lower(), _SOURCES, n=1, cutoff=0.6)
    if close == ["imagefolder"]:
        hint = " (did you mean 'imagefolder:PATH'?)"
    else:
        hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UsageError(
        f"unknown data source {spec!r}{hint}; use synthetic, digits, imagefolder:PATH, "
        "pkg.mod:factory, or for language models tokens:PATH or text:PATH"
    )


def _synthetic(
    input_shape: tuple[int, ...] | None, seed: int, dataset_size: int | None, classes: int | None
) -> DataSource:
    if input_shape is None:
        raise UsageError(
            "synthetic data needs the shape of one sample; pass --input-shape, e.g. 3,32,32 "
            "(a language model takes --seq-len L)"
        )
    classes = classes or _SYNTHETIC_CLASSES
    key = seed % 2**64  # SeedSequence takes non-negative integers

    def item(index: int) -> tuple[torch.Tensor, int]:
        sample_seed = np.random.SeedSequence([key, index]).generate_state(1, np.uint64)[0]
        generator = torch.Generator().manual_seed(int(sample_seed))
        target = int(torch.randint(classes, (), generator=generator))
        return torch.randn(input_shape, generator=generator), target

    return DataSource(
        spec="synthetic",
        size=dataset_size or _SYNTHETIC_SIZE,
        sample_shape=tuple(input_shape),
        classes=classes,
        _fetch=partial(_stack, item),
    )


def _digits(
    input_shape: tuple[int, ...] | None, dataset_size: int | None, classes: int | None
) -> DataSource:
    shape = (_DIGITS_VALUES,) if input_shape is None else tuple(input_shape)
    if math.prod(shape) != _DIGITS_VALUES:
        raise UsageError(
            f"digits has {_DIGITS_VALUES} values per sample (8x8 pixels), but --input-shape "
            f"{_shape_text(shape)} holds {math.prod(shape)}; use 64 or 1,8,8"
        )
    size = _subset_size("digits", _DIGITS_SIZE, dataset_size)
    from sklearn.datasets import load_digits  # only when digits is used: sklearn is slow to import

    pixels, labels = load_digits(return_X_y=True)
    inputs = torch.from_numpy(pixels[:size] / 16.0).to(torch.float32).reshape(size, *shape)
    targets = torch.from_numpy(labels[:size]).to(torch.int64)
    return DataSource(
        spec="digits",
        size=size,
        sample_shape=shape,
        classes=_fixed_classes("digits", 10, classes),
        _fetch=lambda indices: (inputs[indices], targets[indices]),
    )


def _imagefolder(
    spec: str, input_shape: tuple[int, ...] | None, dataset_size: int | None, classes: int | None
) -> DataSource:
    text = spec.removeprefix("imagefolder:")
    if not text:
        raise UsageError("imagefolder needs the folder of images after the colon: imagefolder:PATH")
    path = Path(text).expanduser()
    shape = _IMAGE_SHAPE if input_shape is None else tuple(input_shape)
    if len(shape) != 3 or shape[0] not in (1, 3):
        raise UsageError(
            f"imagefolder needs --input-shape C,H,W with C 1 (grayscale) or 3 (RGB), got "
            f"{_shape_text(shape)}"
        )
    if not path.exists():
        raise UsageError(
            f"{spec!r}: {path} does not exist; give the folder that holds one folder per class"
        )
    if not path.is_dir():
        raise UsageError(
            f"{spec!r}: {path} is not a directory; give the folder that holds one folder per class"
        )
    from torchvision import transforms
    from torchvision.datasets import ImageFolder

    convert = transforms.Compose([transforms.Resize(shape[1:]), transforms.ToTensor()])
    loader = partial(_load_image, mode="L" if shape[0] == 1 else "RGB")
    try:
        dataset = ImageFolder(path, transform=convert, loader=loader)
    except FileNotFoundError as exc:
        raise UsageError(
            f"{spec!r}: {first_line(exc).rstrip('.')}; put each class's images (.png, .jpg, ...) "
            "in its own subfolder of PATH"
        ) from None
    size = _subset_size(spec, len(dataset), dataset_size)
    return DataSource(
        spec=spec,
        size=size,
        sample_shape=shape,
        classes=_fixed_classes(spec, len(dataset.classes), classes),
        _fetch=partial(_stack, dataset.__getitem__),
    )


def _factory(
    spec: str, input_shape: tuple[int, ...] | None, dataset_size: int | None, classes: int | None
) -> DataSource:
    factory = import_factory(spec, what="data set")
    try:
        dataset = factory()
    except Exception as exc:
        raise UsageError(
            f"data factory {spec!r} raised {type(exc).__name__}: {first_line(exc)}"
        ) from None
    if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
        raise UsageError(
            f"data factory {spec!r} returned a {type(dataset).__name__}, not a map-style data set "
            "(one with __len__ and __getitem__)"
        )
    if len(dataset) == 0:
        raise UsageError(f"data factory {spec!r} returned an empty data set")
    size = _subset_size(spec, len(dataset), dataset_size)
    item = partial(_user_item, spec, dataset)
    first, _ = item(0)
    shape = tuple(first.shape)
    if input_shape is not None and tuple(input_shape) != shape:
        raise UsageError(
            f"samples of {spec!r} have shape {_shape_text(shape)} but --input-shape is "
            f"{_shape_text(input_shape)}; drop --input-shape or make them match"
        )
    if classes is None:
        classes = _declared_classes(dataset, size)
    if classes is None:
        labels = [item(i)[1] for i in range(size)]
        if min(labels) < 0:
            raise UsageError(f"{spec!r} has label {min(labels)}; labels count from 0")
        classes = max(labels) + 1

    def checked(index: int) -> tuple[torch.Tensor, int]:
        inputs, label = item(index)
        if tuple(inputs.shape) != shape:
            raise UsageError(
                f"item {index} of {spec!r} has shape {_shape_text(inputs.shape)}, item 0 has "
                f"{_shape_text(shape)}; every sample must have the same shape"
            )
        if not 0 <= label < classes:
            raise UsageError(
                f"item {index} of {spec!r} has label {label}, outside [0, {classes}); labels "
                "count from 0, pass --classes for more"
            )
        return inputs, label

    return DataSource(
        spec=spec, size=size, sample_shape=shape, classes=classes, _fetch=partial(_stack, checked)
    )


def _user_item(spec: str, dataset: Any, index: int) -> tuple[torch.Tensor, int]:
    """Item ``index`` of a user data set as (float32 tensor, int label), or a UsageError."""
    try:
        item = dataset[index]
    except Exception as exc:
        raise UsageError(
            f"reading item {index} of {spec!r} raised {type(exc).__name__}: {first_line(exc)}"
        ) from None
    if not isinstance(item, tuple | list) or len(item) != 2:
        raise UsageError(
            f"item {index} of {spec!r} is a {type(item).__name__}, not an (input, label) pair"
        )
    inputs, label = item
    try:
        label = operator.index(label)
    except TypeError:
        raise UsageError(
            f"item {index} of {spec!r} has label {label!r}; labels must be integers"
        ) from None
    if isinstance(inputs, torch.Tensor):
        return inputs.detach().to("cpu", torch.float32), label
    try:
        inputs = torch.as_tensor(np.asarray(inputs), dtype=torch.float32)
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"item {index} of {spec!r} has an input that is not a tensor or array: {first_line(exc)}"
        ) from None
    return inputs, label


def _declared_classes(dataset: Any, size: int) -> int | None:
    """Classes a data set declares: ``classes`` (names or a count), or its ``targets``."""
    declared = getattr(dataset, "classes", None)
    if isinstance(declared, int):
        return declared
    if isinstance(declared, Sequence) and not isinstance(declared, str):
        return len(declared)
    targets = getattr(dataset, "targets", None)  # torchvision data sets: labels without inputs
    if targets is not None and len(targets) >= size:
        return int(torch.as_tensor(np.asarray(targets[:size])).max()) + 1
    return None


def _stack(
    item: Callable[[int], tuple[torch.Tensor, int]], indices: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    pairs = [item(i) for i in indices.tolist()]
    inputs = torch.stack([inputs for inputs, _ in pairs]).to(torch.float32)
    return inputs, torch.tensor([label for _, label in pairs], dtype=torch.int64)


def _load_image(path: str, mode: str) -> Any:
    from PIL import Image

    try:
        with Image.open(path) as image:
            return image.convert(mode)
    except OSError as exc:
        raise UsageError(f"cannot read image {path}: {first_line(exc)}") from None


def _subset_size(spec: str, available: int, dataset_size: int | None) -> int:
    if dataset_size is None:
        return available
    if dataset_size > available:
        raise UsageError(
            f"--dataset-size {dataset_size} is more than the {available} samples of {spec!r}; "
            f"pass at most {available}"
        )
    return dataset_size


def _fixed_classes(spec: str, found: int, classes: int | None) -> int:
    if classes is not None and classes < found:
        raise UsageError(
            f"{spec!r} has {found} classes but --classes is {classes}; drop --classes or pass at least {found}"
        )
    return classes or found


def _shape_text(shape: Sequence[int]) -> str:
    return ",".join(str(s) for s in shape)
