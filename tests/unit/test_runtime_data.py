"""Data sources of ``trainplay train --data``: the same samples at the same indices, everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from PIL import Image

from trainplay.errors import UsageError
from trainplay.runtime.data import open_data

DATASETS = "tests.data.datasets"


def test_synthetic_samples_depend_only_on_seed_and_index():
    a = open_data("synthetic", input_shape=(3, 4), seed=5)
    b = open_data("synthetic", input_shape=(3, 4), seed=5)
    other = open_data("synthetic", input_shape=(3, 4), seed=6)
    assert (a.size, a.sample_shape, a.classes) == (1024, (3, 4), 10)
    first = torch.tensor([0, 7, 1023])
    inputs, targets = a.batch(first)
    assert inputs.dtype == torch.float32 and inputs.shape == (3, 3, 4)
    assert targets.dtype == torch.int64 and targets.shape == (3,)
    assert torch.equal(inputs, b.batch(first)[0]) and torch.equal(targets, b.batch(first)[1])
    assert not torch.equal(inputs, other.batch(first)[0])
    all_five, all_targets = a.batch(torch.arange(5))
    some, some_targets = a.batch(torch.tensor([3, 1]))
    assert torch.equal(some, all_five[[3, 1]]) and torch.equal(some_targets, all_targets[[3, 1]])
    assert not torch.equal(all_five[0], all_five[1])  # not one sample repeated


def test_synthetic_size_and_classes_are_honoured():
    data = open_data("synthetic", input_shape=(2,), dataset_size=300, classes=3, seed=-1)
    assert (data.size, data.classes) == (300, 3)
    _, targets = data.batch(torch.arange(300))
    assert set(targets.tolist()) == {0, 1, 2}


def test_digits_are_scaled_8x8_images_of_ten_classes():
    data = open_data("digits")
    assert (data.size, data.sample_shape, data.classes) == (1797, (64,), 10)
    inputs, targets = data.batch(torch.arange(data.size))
    assert inputs.dtype == torch.float32 and inputs.shape == (1797, 64)
    assert inputs.min() == 0.0 and inputs.max() == 1.0
    assert set(targets.tolist()) == set(range(10))
    assert targets[:10].tolist() == list(range(10))  # load_digits starts 0, 1, ..., 9

    images = open_data("digits", input_shape=(1, 8, 8), dataset_size=100)
    assert (images.size, images.sample_shape) == (100, (1, 8, 8))
    square, _ = images.batch(torch.tensor([4, 2]))
    assert torch.equal(square.reshape(2, 64), inputs[[4, 2]])


def test_digits_errors():
    with pytest.raises(UsageError, match="64 values per sample"):
        open_data("digits", input_shape=(3, 8, 8))
    with pytest.raises(UsageError, match="at most 1797"):
        open_data("digits", dataset_size=2000)
    with pytest.raises(UsageError, match="10 classes but --classes is 5"):
        open_data("digits", classes=5)


def _image_folder(root: Path) -> Path:
    """cat/: two black images, dog/: two white ones, of odd sizes."""
    for name, value in (("cat", 0), ("dog", 255)):
        (root / name).mkdir(parents=True)
        for i, size in enumerate(((5, 7), (9, 4))):
            Image.new("RGB", size, (value, value, value)).save(root / name / f"{i}.png")
    return root


def test_imagefolder_resizes_and_labels_by_folder(tmp_path):
    root = _image_folder(tmp_path / "pets")
    data = open_data(f"imagefolder:{root}", input_shape=(3, 6, 6))
    assert (data.size, data.sample_shape, data.classes) == (4, (3, 6, 6), 2)
    inputs, targets = data.batch(torch.arange(4))
    assert inputs.shape == (4, 3, 6, 6) and inputs.dtype == torch.float32
    assert targets.tolist() == [0, 0, 1, 1]  # folders in sorted order: cat, dog
    assert torch.all(inputs[:2] == 0.0) and torch.all(inputs[2:] == 1.0)

    gray = open_data(f"imagefolder:{root}", input_shape=(1, 3, 5), dataset_size=3)
    assert gray.size == 3
    assert gray.batch(torch.tensor([2]))[0].shape == (1, 1, 3, 5)
    assert open_data(f"imagefolder:{root}").sample_shape == (3, 224, 224)


def test_imagefolder_errors(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        open_data(f"imagefolder:{tmp_path / 'nowhere'}")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        open_data(f"imagefolder:{tmp_path / 'file.txt'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match=r"class folder.*own subfolder"):
        open_data(f"imagefolder:{tmp_path / 'empty'}")
    (tmp_path / "empty" / "cat").mkdir()
    with pytest.raises(UsageError, match="no valid file for the classes cat"):
        open_data(f"imagefolder:{tmp_path / 'empty'}")
    root = _image_folder(tmp_path / "pets")
    with pytest.raises(UsageError, match="C,H,W"):
        open_data(f"imagefolder:{root}", input_shape=(6, 6))
    with pytest.raises(UsageError, match=r"C 1 \(grayscale\) or 3"):
        open_data(f"imagefolder:{root}", input_shape=(2, 6, 6))
    with pytest.raises(UsageError, match="imagefolder:PATH"):
        open_data("imagefolder:")


def test_factory_data_set_of_pairs():
    data = open_data(f"{DATASETS}:pairs")
    assert (data.size, data.sample_shape, data.classes) == (6, (2, 3), 3)  # max label + 1
    inputs, targets = data.batch(torch.tensor([5, 0]))
    assert torch.equal(inputs, torch.stack([torch.full((2, 3), 5.0), torch.zeros(2, 3)]))
    assert targets.tolist() == [2, 0]
    assert open_data(f"{DATASETS}:pairs", classes=7, dataset_size=2).classes == 7


def test_factory_classes_attribute_and_numpy_items():
    data = open_data(f"{DATASETS}:named", input_shape=(4,))
    assert (data.size, data.sample_shape, data.classes) == (4, (4,), 5)  # the declared names
    inputs, targets = data.batch(torch.tensor([3]))
    assert inputs.dtype == torch.float32 and inputs.tolist() == [[3.0, 4.0, 5.0, 6.0]]
    assert targets.tolist() == [1]


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        ("tests.data.no_such_module:f", {}, "cannot import module 'tests.data.no_such_module'"),
        (f"{DATASETS}:missing", {}, "has no attribute 'missing'"),
        (f"{DATASETS}:NOT_CALLABLE", {}, "is a int, not a function"),
        (f"{DATASETS}:broken", {}, "raised RuntimeError: data root not configured"),
        (f"{DATASETS}:not_a_dataset", {}, "returned a int, not a map-style data set"),
        (f"{DATASETS}:empty", {}, "empty data set"),
        (f"{DATASETS}:failing", {}, r"item 0 .* raised OSError: sample 0 is on a disk"),
        (f"{DATASETS}:unpaired", {}, r"item 0 .* not an \(input, label\) pair"),
        (f"{DATASETS}:float_labels", {}, "labels must be integers"),
        (f"{DATASETS}:pairs", {"input_shape": (6,)}, "shape 2,3 but --input-shape is 6"),
        (f"{DATASETS}:pairs", {"dataset_size": 7}, "more than the 6 samples"),
        (":pairs", {}, "pkg.mod:factory"),
    ],
)
def test_factory_errors_say_what_is_wrong(spec, options, message):
    with pytest.raises(UsageError, match=message):
        open_data(spec, **options)


def test_factory_items_are_checked_when_fetched():
    ragged = open_data(f"{DATASETS}:ragged")
    with pytest.raises(UsageError, match=r"item 1 .* has shape 4, item 0 has 3"):
        ragged.batch(torch.tensor([0, 1]))
    few = open_data(f"{DATASETS}:pairs", classes=2)
    with pytest.raises(UsageError, match=r"label 2, outside \[0, 2\)"):
        few.batch(torch.tensor([2]))


@pytest.mark.parametrize(
    ("spec", "hint"),
    [
        ("xyz", ""),
        ("digit", " (did you mean 'digits'?)"),
        ("synthtic", " (did you mean 'synthetic'?)"),
    ],
)
def test_unknown_source_names_the_choices(spec, hint):
    expected = (
        f"unknown data source '{spec}'{hint}; use synthetic, digits, imagefolder:PATH, "
        "pkg.mod:factory, or for language models tokens:PATH or text:PATH"
    )
    with pytest.raises(UsageError) as info:
        open_data(spec)
    assert str(info.value) == expected


def test_common_usage_errors():
    with pytest.raises(UsageError, match="--input-shape"):
        open_data("synthetic")
    with pytest.raises(UsageError, match="--dataset-size must be a positive integer, got 0"):
        open_data("synthetic", input_shape=(2,), dataset_size=0)
    with pytest.raises(UsageError, match="--input-shape must be positive"):
        open_data("synthetic", input_shape=(2, 0))
    with pytest.raises(UsageError, match="--classes"):
        open_data("digits", classes=0)
    with pytest.raises(UsageError, match="'imagefolder:PATH'"):
        open_data("imagefolder")


def test_batch_rejects_bad_indices_as_programming_errors():
    data = open_data("digits", dataset_size=10)
    for bad in (torch.tensor([10]), torch.tensor([-1]), torch.tensor([0.0]), torch.zeros(1, 1)):
        with pytest.raises(ValueError) as info:
            data.batch(bad)
        assert not isinstance(info.value, UsageError)
    inputs, targets = data.batch(torch.tensor([], dtype=torch.int64))
    assert inputs.shape == (0, 64) and targets.shape == (0,)
