"""``profile``: the one call behind ``trainplay profile``, by model name."""

from __future__ import annotations

import math

import torch

from trainplay.errors import ModelError, UsageError
from trainplay.workload.cache import cached_profile
from trainplay.workload.loss import training_loss
from trainplay.workload.names import DEVICES
from trainplay.workload.profiler import profile_model
from trainplay.workload.stats import DTYPES, WorkloadProfile
from trainplay.workload.zoo import resolve_model

__all__ = ["DEVICES", "profile"]


def profile(
    model: str,
    *,
    batch_size: int = 1,
    input_shape: tuple[int, ...] | None = None,
    seq_len: int | None = None,
    dtype: str = "fp32",
    device: str = "meta",
    granularity: str = "blocks",
    depth: int = 1,
    loss: bool = False,
    vocab_size: int | None = None,
) -> WorkloadProfile:
    """Profile one training iteration (forward + backward) of a model given by name.

    ``model`` is a torchvision classifier (``resnet50``), a decoder preset (``gpt2-small``) or
    ``package.module:factory``. The input defaults to the model's reference size (torchvision: its
    weights' crop; decoders: the preset's context length). On ``meta`` nothing is allocated and no
    kernel runs, so a 175B-parameter model profiles on a laptop. ``loss=True`` counts the training
    loss too (:mod:`trainplay.workload.loss`), as ``analyze`` and ``plan`` do. ``vocab_size`` makes
    a ``package.module:factory`` model a language model fed token ids below it; so does
    ``seq_len``, with the vocabulary read off the model (:func:`~.zoo.language_vocab`).
    """
    if batch_size <= 0:
        raise UsageError(f"--batch must be a positive integer, got {batch_size}")
    if dtype not in DTYPES:
        raise UsageError(f"--dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if device not in DEVICES:
        raise UsageError(f"--device must be one of {', '.join(DEVICES)}, got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError(
            "--device cuda needs a CUDA device, and torch sees none; use --device meta or cpu"
        )
    source = resolve_model(model, vocab_size=vocab_size, seq_len=seq_len)
    shape = _input_shape(
        source.name, source.default_input_shape, source.vocab_size, input_shape, seq_len
    )
    elements = batch_size * math.prod(shape)
    if elements >= 2**63:
        raise UsageError(
            f"--batch {batch_size} of samples shaped {list(shape)} is {elements} input elements, "
            "more than one tensor holds (2^63); give a smaller --batch or sample shape"
        )

    def count() -> WorkloadProfile:
        net = source.build(shape, device, dtype)
        inputs = source.inputs(batch_size, shape, device, dtype)
        try:
            return profile_model(
                net,
                inputs,
                name=model,
                batch_size=batch_size,
                input_shape=shape,
                dtype=dtype,
                granularity=granularity,
                depth=depth,
                loss=training_loss if loss else None,
            )
        except ModelError as exc:
            if "overflow" not in str(exc):
                raise
            raise ModelError(
                f"{exc}; at --batch {batch_size} an activation outgrows what one tensor holds "
                "(2^63 elements): give a smaller --batch"
            ) from None

    if device != "meta":
        return count()
    key = {
        "model": model, "batch": batch_size, "shape": list(shape), "dtype": dtype,
        "granularity": granularity, "depth": depth, "loss": loss, "vocab": source.vocab_size,
    }  # fmt: skip
    return cached_profile(key, count)


def _input_shape(
    name: str,
    default: tuple[int, ...] | None,
    vocab_size: int | None,
    input_shape: tuple[int, ...] | None,
    seq_len: int | None,
) -> tuple[int, ...]:
    if seq_len is not None:
        if vocab_size is None:
            raise UsageError(
                f"--seq-len is for token models such as gpt2-small; {name} takes --input-shape"
            )
        if seq_len <= 0:
            raise UsageError(f"--seq-len must be a positive integer, got {seq_len}")
        return (seq_len,)
    if input_shape is not None:
        if vocab_size is not None:
            raise UsageError(f"{name} takes token ids; give --seq-len instead of --input-shape")
        return input_shape
    if default is None:
        raise UsageError(
            f"{name} is a user model: give the shape of one sample with --input-shape, e.g. 3,224,224"
        )
    return default
