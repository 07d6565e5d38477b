"""Where models come from: torchvision's classifiers, trainplay's decoder presets, user factories.

``resolve_model(name)`` turns what the user typed into a :class:`ModelSource` that builds the model
on a device and makes matching example inputs; unknown names fail with close matches.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache

import torch
from torch import nn

from trainplay.errors import ModelError, TrainplayError, UsageError
from trainplay.factory import first_line, import_factory
from trainplay.workload.decoder import PRESETS, Decoder

__all__ = [
    "CLASSIC_CNNS",
    "DTYPES_TORCH",
    "ModelSource",
    "TorchvisionReference",
    "language_vocab",
    "model_names",
    "parse_shape",
    "resolve_model",
    "torchvision_models",
    "torchvision_reference",
]

DTYPES_TORCH = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}

CLASSIC_CNNS = (
    "alexnet",
    "vgg11",
    "vgg16",
    "vgg19",
    "resnet18",
    "resnet34",
    "resnet50",
    "resnet101",
    "resnet152",
    "densenet121",
    "googlenet",
    "inception_v3",
    "mobilenet_v2",
    "squeezenet1_0",
)
"""Fourteen classic CNNs from torchvision: trainplay's stand-in for the twelve of the MD-Roofline
paper, used by its tests and benchmarks."""

# Built as their default pretrained weights are, so the counts match what torchvision publishes:
# GoogLeNet's weights drop the auxiliary classifiers, Inception v3's keep theirs (a training-only
# head that runs in training mode); a ViT is built for the image size it is given.
_TORCHVISION_OPTIONS: dict[str, dict[str, object]] = {
    "googlenet": {"aux_logits": False, "init_weights": True},
    "inception_v3": {"aux_logits": True, "init_weights": True},
}


@dataclass(frozen=True)
class ModelSource:
    """A model trainplay knows how to build, and what its inputs look like."""

    name: str
    """The name as the user gave it."""
    family: str
    """``torchvision``, ``decoder`` or ``factory``."""
    default_input_shape: tuple[int, ...] | None
    """Shape of one sample when the user gives none (``None``: the user must give one)."""
    builder: Callable[[tuple[int, ...]], nn.Module]
    """Builds the model for a sample shape on the current default device (under ``torch.device``)."""
    vocab_size: int | None = None
    """For token models: inputs are integer ids below this; ``None`` for float inputs."""

    def build(self, input_shape: tuple[int, ...], device: str, dtype: str) -> nn.Module:
        """The model for samples of ``input_shape`` on ``device`` in ``dtype``, in training mode.

        A model whose constructor reads tensor values (RegNet computes its widths with torch ops)
        cannot be built on ``meta``; it is built on the CPU without gradients and then moved.
        """
        try:
            try:
                with torch.device(device):
                    model = self.builder(input_shape)
            except NotImplementedError as exc:
                if device != "meta" or "meta" not in str(exc):
                    raise
                with torch.device("cpu"), torch.no_grad():
                    model = self.builder(input_shape).to("meta")
        except TrainplayError:
            raise
        except Exception as exc:
            raise ModelError(
                f"building {self.name} failed: {type(exc).__name__}: {first_line(exc)}"
            ) from None
        if not isinstance(model, nn.Module):
            raise ModelError(
                f"{self.name} built a {type(model).__name__}, expected a torch.nn.Module"
            )
        return model.to(dtype=DTYPES_TORCH[dtype]).train()

    def inputs(
        self, batch_size: int, input_shape: tuple[int, ...], device: str, dtype: str
    ) -> tuple[torch.Tensor]:
        """One batch of example inputs (random values; only shapes and dtypes matter to counting)."""
        shape = (batch_size, *input_shape)
        if self.vocab_size is not None:
            return (torch.randint(0, self.vocab_size, shape, device=device),)
        return (torch.randn(shape, device=device, dtype=DTYPES_TORCH[dtype]),)


@cache
def torchvision_models() -> tuple[str, ...]:
    """Names of torchvision's image classification models (torchvision is imported on first use:
    it takes a second, which decoder presets and user models need not pay)."""
    import torchvision

    return tuple(torchvision.models.list_models(module=torchvision.models))


def model_names() -> list[str]:
    """Every model name ``resolve_model`` accepts without a ``module:factory`` spec."""
    return [*torchvision_models(), *PRESETS]


@dataclass(frozen=True)
class TorchvisionReference:
    """What torchvision publishes for a model's default weights."""

    gmacs: float
    """``_ops`` of the weights' metadata: billions of multiply-accumulates of one forward."""
    num_params: int
    """``num_params`` of the weights' metadata."""
    crop_size: int
    """Side of the square input the weights were evaluated at (their transforms' crop)."""


def torchvision_reference(name: str, weights: str = "DEFAULT") -> TorchvisionReference:
    import torchvision

    entry = getattr(torchvision.models.get_model_weights(name), weights)
    return TorchvisionReference(
        gmacs=float(entry.meta["_ops"]),
        num_params=int(entry.meta["num_params"]),
        crop_size=int(entry.transforms().crop_size[0]),
    )


def _torchvision_source(name: str) -> ModelSource:
    crop = torchvision_reference(name).crop_size

    def build(input_shape: tuple[int, ...]) -> nn.Module:
        options = dict(_TORCHVISION_OPTIONS.get(name, {}))
        if name.startswith("vit_"):
            options["image_size"] = input_shape[-1]
        import torchvision

        return torchvision.models.get_model(name, weights=None, **options)

    return ModelSource(
        name=name, family="torchvision", default_input_shape=(3, crop, crop), builder=build
    )


def _factory_source(spec: str) -> ModelSource:
    factory = import_factory(spec, what="model", error=ModelError)

    def build(_input_shape: tuple[int, ...]) -> nn.Module:
        try:
            return factory()
        except Exception as exc:
            raise ModelError(
                f"factory {spec!r} raised {type(exc).__name__}: {first_line(exc)}"
            ) from None

    return ModelSource(name=spec, family="factory", default_input_shape=None, builder=build)


def resolve_model(
    name: str, *, vocab_size: int | None = None, seq_len: int | None = None
) -> ModelSource:
    """The :class:`ModelSource` for a torchvision name, a decoder preset, or ``module:factory``.

    ``vocab_size`` marks a ``module:factory`` model as a language model: it takes int64 token ids
    below ``vocab_size`` (a preset knows its own). So does ``seq_len`` without it: the
    vocabulary is then read off the model (:func:`language_vocab`), as ``trainplay train`` reads
    it, so that ``profile``, ``analyze``, ``plan`` and ``validate`` take a user's own decoder
    with ``--seq-len`` as ``train`` does."""
    if ":" in name and vocab_size is None and seq_len is not None:
        vocab_size = language_vocab(_factory_source(name), seq_len)
    if vocab_size is not None and ":" in name:
        return replace(_factory_source(name), vocab_size=vocab_size)
    if name in PRESETS:
        config = PRESETS[name]
        return ModelSource(
            name=name,
            family="decoder",
            default_input_shape=(config.context_len,),
            builder=lambda _shape: Decoder(config),
            vocab_size=config.vocab_size,
        )
    if ":" in name:
        return _factory_source(name)
    if name in torchvision_models():
        return _torchvision_source(name)
    close = difflib.get_close_matches(name, model_names(), n=5, cutoff=0.5)
    hint = f"; close matches: {', '.join(close)}" if close else ""
    raise ModelError(
        f"unknown model {name!r}{hint} (a torchvision classifier, a preset such as gpt2-small, "
        "or package.module:factory)"
    )


_VOCABS: dict[tuple[str, int], int] = {}
""":func:`language_vocab`'s answers by (model name, sequence length): ``train`` and ``plan``
resolve one model several times, and each reading runs the model's forward on ``meta``."""


def language_vocab(source: ModelSource, seq_len: int) -> int:
    """A user language model's vocabulary: the last size of its output (logits ``[batch, seq,
    vocab]``) for token ids ``[2, seq_len]``, run on ``meta`` (nothing allocated), once per
    process. :class:`UsageError` where it does not take token ids or returns something else."""
    key = (source.name, seq_len)
    if key not in _VOCABS:
        _VOCABS[key] = _vocab_read(source, seq_len)
    return _VOCABS[key]


def _vocab_read(source: ModelSource, seq_len: int) -> int:
    if seq_len <= 0:
        raise UsageError(f"--seq-len must be a positive integer, got {seq_len}")
    with torch.device("meta"):
        model = source.build((seq_len,), "meta", "fp32")
        try:
            out = model(torch.zeros(2, seq_len, dtype=torch.int64))
        except Exception as exc:  # the user's model rejected token ids
            raise UsageError(
                f"{source.name} does not take token ids [batch, {seq_len}] (int64): "
                f"{first_line(exc)[:200].rstrip('.')}; a model of other samples takes --input-shape"
            ) from None
    if not isinstance(out, torch.Tensor) or out.dim() != 3 or tuple(out.shape[:2]) != (2, seq_len):
        shape = list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise UsageError(
            f"{source.name} returns {shape} for token ids [2, {seq_len}]; a language model returns "
            f"logits [batch, seq, vocab]"
        )
    return int(out.shape[-1])


def parse_shape(text: str) -> tuple[int, ...]:
    """``"3,224,224"`` -> ``(3, 224, 224)``; every entry a positive integer."""
    parts = [p.strip() for p in text.split(",")]
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        shape = ()
    if not shape or any(s <= 0 for s in shape):
        raise UsageError(
            f"--input-shape takes positive integers separated by commas, like 3,224,224; got {text!r}"
        )
    return shape
