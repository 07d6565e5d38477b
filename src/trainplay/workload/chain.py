"""A model as a chain of its blocks: what a pipeline stage may be built from on its own.

Most models a team pipelines (decoders, ``nn.Sequential`` stacks) compute ``head(...(embed(x)))``:
each block takes exactly what the block before it returned. For such a model a stage is just
its blocks' modules run in order, so every rank can build the model on ``meta`` and keep only
the modules of its own stage (:mod:`trainplay.runtime.stage`). A forward that does anything
between its blocks (torchvision's ResNet flattens between pooling and classifier) is not a chain;
its stages have to be cut from a traced graph instead.

:func:`structure` finds out on ``meta`` (no memory, no kernels): it runs the forward once with
hooks on every unit of :func:`~trainplay.workload.blocks.split_blocks` and calls the model a chain
when the first unit receives the model's input tensor itself, each next unit receives the very
tensor the previous one returned (nothing else, no keyword arguments), every unit runs once, the
model returns the last unit's output, and no parameter or buffer lives outside the units.

Parameters shared between blocks (GPT-2's token embedding is also its output projection) are
named by the first name ``named_parameters`` gives them, their *canonical* name. The profiler
counts such a parameter once, in the first block that uses it; a pipeline stage that holds a later
user without that block keeps a copy, and the copies' gradients are summed across the stages
(:class:`~trainplay.workload.stats.Tie`, :func:`tied_parameters`, which the profiler records).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from trainplay.workload.blocks import Block, split_blocks
from trainplay.workload.cache import cached
from trainplay.workload.stats import Tie
from trainplay.workload.zoo import ModelSource

__all__ = [
    "ModelStructure",
    "block_of",
    "cached_parameter_layout",
    "largest_by_block",
    "parameter_layout",
    "shared_names",
    "structure",
    "tied_parameters",
]


@dataclass(frozen=True)
class ModelStructure:
    blocks: tuple[Block, ...]
    """The model's blocks, as the profiler and the planner cut it."""
    chain: bool
    """Whether the forward is the blocks' modules run one after the other (module docstring)."""
    why_not: str = ""
    """Why it is not a chain (empty when it is)."""


def structure(model: nn.Module, inputs: tuple[Any, ...]) -> ModelStructure:
    """Blocks of ``model`` and whether it is a chain of them, from one forward of ``inputs``
    (run under ``torch.no_grad``; use ``meta`` tensors to spend nothing)."""
    entries: dict[str, int] = {}
    calls: dict[str, list[tuple[tuple[Any, ...], dict[str, Any], Any]]] = {}
    handles = []
    for path, module in model.named_modules():
        if not path:
            continue

        def pre(mod, args, kwargs, path=path):  # type: ignore[no-untyped-def]
            entries.setdefault(path, len(entries))
            calls.setdefault(path, []).append((args, kwargs, None))

        def post(mod, args, kwargs, output, path=path):  # type: ignore[no-untyped-def]
            a, k, _ = calls[path][-1]
            calls[path][-1] = (a, k, output)

        handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(module.register_forward_hook(post, with_kwargs=True))
    try:
        with torch.no_grad():
            output = model(*inputs)
    finally:
        for handle in handles:
            handle.remove()
    blocks = tuple(split_blocks(model, entries))
    why = _not_a_chain(model, blocks, inputs, calls, output)
    return ModelStructure(blocks=blocks, chain=not why, why_not=why)


def _not_a_chain(
    model: nn.Module,
    blocks: tuple[Block, ...],
    inputs: tuple[Any, ...],
    calls: dict[str, list[tuple[tuple[Any, ...], dict[str, Any], Any]]],
    output: Any,
) -> str:
    units = [path for block in blocks for path in block.modules]
    if units == [""]:
        return "it has no child modules"
    if len(inputs) != 1:
        return f"its forward takes {len(inputs)} inputs"
    held = {path for path in units}
    for path, module in model.named_modules():
        inside = any(path == u or path.startswith(u + ".") for u in held)
        own = [n for n, _ in module.named_parameters(recurse=False)]
        own += [n for n, _ in module.named_buffers(recurse=False)]
        if own and not inside:
            where = path or "the model itself"
            return f"{where} holds {own[0]!r} outside its blocks"
    previous: Any = inputs[0]
    for path in units:
        seen = calls.get(path, [])
        if len(seen) != 1:
            return f"{path} runs {len(seen)} times in one forward"
        args, kwargs, result = seen[0]
        if kwargs or len(args) != 1 or args[0] is not previous:
            return f"{path} is not given the output of the module before it"
        previous = result
    if output is not previous:
        return f"the forward does more after {units[-1]}"
    return ""


def shared_names(model: nn.Module) -> dict[str, tuple[str, ...]]:
    """Canonical name -> every name of a parameter or buffer known by more than one name."""
    names: dict[int, list[str]] = {}
    for name, tensor in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(tensor), []).append(name)
    for name, tensor in model.named_buffers(remove_duplicate=False):
        names.setdefault(id(tensor), []).append(name)
    return {group[0]: tuple(group) for group in names.values() if len(group) > 1}


def block_of(name: str, blocks: tuple[Block, ...]) -> int | None:
    """Index of the block whose modules hold the parameter or buffer ``name``."""
    for i, block in enumerate(blocks):
        if any(name.startswith(path + ".") for path in block.modules):
            return i
    return None


def tied_parameters(model: nn.Module, blocks: tuple[Block, ...]) -> tuple[Tie, ...]:
    """Every parameter of ``model`` used by more than one of ``blocks``, by canonical name (the
    order the runtime sums their gradients in)."""
    params = dict(model.named_parameters(remove_duplicate=False))
    ties = []
    for canonical, group in shared_names(model).items():
        if canonical not in params:
            continue
        users = {block_of(name, blocks) for name in group} - {None}
        if len(users) > 1:
            tensor = params[canonical]
            ties.append(Tie(canonical, tensor.numel() * tensor.element_size(), tuple(users)))  # type: ignore[arg-type]
    return tuple(sorted(ties, key=lambda t: t.name))


def largest_by_block(model: nn.Module, blocks: tuple[Block, ...]) -> tuple[int, ...]:
    """Per block, the bytes of its largest parameter, counting a shared one in every block that
    uses it."""
    largest = [0] * len(blocks)
    for name, tensor in model.named_parameters(remove_duplicate=False):
        k = block_of(name, blocks)
        if k is not None:
            largest[k] = max(largest[k], tensor.numel() * tensor.element_size())
    return tuple(largest)


def parameter_layout(
    source: ModelSource, input_shape: tuple[int, ...], dtype: str, names: tuple[str, ...]
) -> tuple[int, ...]:
    """:func:`largest_by_block` of ``source``'s model built on ``meta`` in ``dtype`` for samples
    of ``input_shape``, whose profile has blocks ``names``."""
    model = source.build(input_shape, "meta", dtype)
    found = structure(model, source.inputs(2, input_shape, "meta", dtype))
    if tuple(b.name for b in found.blocks) != tuple(names):
        raise RuntimeError(f"blocks {[b.name for b in found.blocks]} are not the profile's {names}")
    return largest_by_block(model, found.blocks)


def cached_parameter_layout(
    source: ModelSource,
    input_shape: tuple[int, ...],
    dtype: str,
    names: tuple[str, ...],
) -> tuple[int, ...]:
    """:func:`parameter_layout`, kept on disk beside the profiles
    (:mod:`trainplay.workload.cache`): a planner that read its profiles from the cache need not
    build the model again."""
    key = {
        "kind": "parameter_layout", "model": source.name, "vocab": source.vocab_size,
        "shape": list(input_shape), "dtype": dtype, "names": list(names),
    }  # fmt: skip

    def load(text: str) -> tuple[int, ...]:
        largest = tuple(json.loads(text)["largest_param_bytes"])
        if len(largest) != len(names):
            raise ValueError("a cached parameter layout for other blocks")
        return largest

    return cached(
        key,
        lambda: parameter_layout(source, input_shape, dtype, names),
        dump=lambda got: json.dumps({"largest_param_bytes": got}),
        load=load,
    )
