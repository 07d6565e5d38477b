"""Mark each block's forward in profiler traces, so traces can be read per block.

While a model runs, every block's forward (from its first module's entry to the next block's)
is a ``torch.profiler.record_function`` span named ``trainplay.block:<name>``. In a PyTorch
profiler (Kineto) trace these are ``user_annotation`` events; the backward of a block is found
through the autograd sequence numbers of the operators inside its span.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch loads when a model is annotated, not when a trace is read
    from torch import nn

__all__ = ["BLOCK_PREFIX", "annotate_blocks", "block_of_annotation"]

BLOCK_PREFIX = "trainplay.block:"


def block_of_annotation(name: str) -> str | None:
    """The block name of a ``trainplay.block:<name>`` annotation, else ``None``."""
    return name[len(BLOCK_PREFIX) :] if name.startswith(BLOCK_PREFIX) else None


@contextmanager
def annotate_blocks(model: nn.Module, block_names: Sequence[str]) -> Iterator[None]:
    """Within the context, each forward of ``model`` records one span per block.

    ``block_names`` are the fully qualified names of each block's first module (``Block.name``),
    in forward order; ``(model)`` or ``""`` stands for a model that is a single block.
    """
    from torch.autograd.profiler import record_function

    starts = {}
    for name in block_names:
        module = model if name in ("", "(model)") else model.get_submodule(name)
        starts[id(module)] = name
    current: list[Any] = []

    def close() -> None:
        while current:
            current.pop().__exit__(None, None, None)

    def enter(module: nn.Module, _inputs: Any) -> None:
        name = starts.get(id(module))
        if name is None:
            return
        close()
        span = record_function(BLOCK_PREFIX + name)
        span.__enter__()
        current.append(span)

    def leave(_module: nn.Module, _inputs: Any, _output: Any) -> None:
        close()

    handles = [m.register_forward_pre_hook(enter) for m in model.modules() if id(m) in starts]
    if id(model) not in starts:
        handles.append(model.register_forward_pre_hook(lambda m, i: close()))
    handles.append(model.register_forward_hook(leave, always_call=True))
    try:
        yield
    finally:
        close()
        for handle in handles:
            handle.remove()
