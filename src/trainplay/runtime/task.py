"""What a job trains: a classifier on labelled samples, or a language model on token windows.

:func:`open_task` reads the job's model and ``--data`` and checks that they go together, the same
way in ``trainplay train`` (before anything starts) and in every worker:

- **Language model**: a decoder preset (``gpt2-*``, ``llama-*``), or a ``pkg.mod:factory`` model
  given token data (``tokens:``/``text:``) or ``--seq-len``. It takes int64 token ids
  ``[batch, L]`` and returns logits ``[batch, L, vocab]``; a factory's vocabulary is read off its
  output on ``meta``. ``L`` is ``--seq-len`` (a preset defaults to its context length). Data:
  :mod:`trainplay.runtime.tokens`.
- **Classifier**: anything else; inputs of the data's sample shape to ``[batch, classes...]``
  logits. Data: :mod:`trainplay.runtime.data`.

Either way the loss is cross-entropy summed over every sample and position (:func:`summed_loss`);
the runner divides it by the global batch's count of positions, so any split of the batch gives
its exact mean.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn

from trainplay.errors import UsageError
from trainplay.factory import first_line
from trainplay.plan.api import block_costs
from trainplay.plan.costs import BlockCosts
from trainplay.runtime.data import DataSource, open_data
from trainplay.runtime.materialise import check_initialisable
from trainplay.runtime.tokens import TokenSource, is_token_spec, open_tokens
from trainplay.workload.chain import ModelStructure, structure
from trainplay.workload.decoder import PRESETS
from trainplay.workload.zoo import ModelSource, language_vocab, resolve_model

__all__ = ["Task", "open_task", "summed_loss"]


def summed_loss(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy summed over samples and positions: ``output`` ``[n, ..., classes]``,
    ``target`` ``[n, ...]`` (a label per sample, or a next token per position)."""
    return nn.functional.cross_entropy(
        output.reshape(-1, output.shape[-1]), target.reshape(-1), reduction="sum"
    )


@dataclass(frozen=True)
class Task:
    source: ModelSource
    """The model; ``vocab_size`` is set for a language model."""
    data: DataSource | TokenSource
    language: bool

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return self.data.sample_shape

    @property
    def positions(self) -> int:
        """Loss terms per sample: tokens for a language model, one label for a classifier."""
        return self.data.sample_shape[0] if self.language else 1

    def example(self, batch: int, device: str | torch.device) -> torch.Tensor:
        """Zeros shaped and typed as ``batch`` samples of model input."""
        dtype = torch.int64 if self.language else torch.float32
        return torch.zeros(batch, *self.sample_shape, dtype=dtype, device=device)

    def meta_model(self) -> nn.Module:
        """The whole model on ``meta``, fp32 (parameters take no memory)."""
        return self.source.build(self.sample_shape, "meta", "fp32")

    def structure(self, model: nn.Module) -> ModelStructure:
        """Blocks of ``model`` (this task's, on ``meta``) and whether it is a chain of them."""
        return structure(model, (self.example(2, "meta"),))

    def block_costs(self, dtype: str) -> BlockCosts:
        """The planner's costs of the model's blocks at ``dtype`` for this task's samples."""
        if self.language:
            return block_costs(
                self.source.name, dtype=dtype, seq_len=self.sample_shape[0],
                vocab_size=self.source.vocab_size,
            )  # fmt: skip
        return block_costs(self.source.name, dtype=dtype, input_shape=self.sample_shape)


def open_task(job: Any) -> Task:
    """The job's model and data, checked against each other (:class:`UsageError` otherwise).
    ``job`` is a :class:`~trainplay.runtime.job.TrainJob`."""
    source = resolve_model(job.model)
    language = source.vocab_size is not None or job.seq_len is not None or is_token_spec(job.data)
    if not language:
        data = open_data(
            job.data, input_shape=job.input_shape, seed=job.seed,
            dataset_size=job.dataset_size, classes=job.classes,
        )  # fmt: skip
        task = Task(source, data, language=False)
        _check_classifier(job, task)
        return _checked_init(task)
    if job.input_shape is not None:
        raise UsageError(f"{job.model} is a language model: give --seq-len, not --input-shape")
    if job.classes is not None:
        raise UsageError(f"--classes is for classifiers; {job.model} predicts tokens")
    seq_len = job.seq_len
    if job.model in PRESETS:
        context = PRESETS[job.model].context_len
        seq_len = seq_len or context
        if seq_len > context:
            raise UsageError(
                f"--seq-len {seq_len} is longer than {job.model}'s context of {context} tokens"
            )
    elif seq_len is None:
        raise UsageError(f"{job.model} takes token ids: give the tokens per sample with --seq-len")
    vocab = source.vocab_size or language_vocab(source, seq_len)
    if job.data not in ("synthetic",) and not is_token_spec(job.data):
        raise UsageError(
            f"{job.model} is a language model; train it on --data tokens:PATH[:u32], text:PATH "
            f"or synthetic, not {job.data!r}"
        )
    data = open_tokens(
        job.data, seq_len=seq_len, vocab_size=vocab, seed=job.seed, dataset_size=job.dataset_size
    )
    return _checked_init(Task(replace(source, vocab_size=vocab), data, language=True))


def _checked_init(task: Task) -> Task:
    """A chain model's stages are built on ``meta``: every tensor must have an initialiser."""
    model = task.meta_model()
    if task.structure(model).chain:
        check_initialisable(model)
    return task


def _check_classifier(job: Any, task: Task) -> None:
    """The model takes the data's samples and gives at least its classes."""
    data = task.data
    assert isinstance(data, DataSource)
    with torch.device("meta"):
        model = task.meta_model()
        try:
            out = model(torch.zeros(2, *data.sample_shape))
        except Exception as exc:  # the user's model rejected the shape
            raise UsageError(
                f"{job.model} does not take samples of shape {list(data.sample_shape)} from "
                f"--data {job.data}: {first_line(exc)[:200]}"
            ) from None
    if out.dim() != 2 or out.shape[1] < data.classes:
        raise UsageError(
            f"{job.model} outputs {list(out.shape[1:])} per sample; --data {job.data} has "
            f"{data.classes} classes, so it needs at least {data.classes} logits"
        )
