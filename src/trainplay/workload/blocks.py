"""Cutting a model into *blocks*: the ordered, pipeline-cuttable units the planner cuts between.

A block is a run of consecutive top-level modules, named after its first module, whose fully
qualified name is where ``torch.distributed.pipelining`` splits (``SplitPoint.BEGINNING``). The rule,
applied to any ``nn.Module``:

1. Start from the model's children. Expand pure containers in place: an ``nn.Sequential`` that
   keeps ``Sequential.forward``, an ``nn.ModuleList``, an ``nn.ModuleDict`` without a forward of its
   own, and any module holding more than half of the model's parameters (a ViT encoder, a
   transformer trunk). What remains are *units*.
2. Order units by when the forward first enters them; a unit the forward never enters is dropped
   (its parameters, if any, are reported where they are first used, or on the first block).
3. A unit with no parameters (activation, pooling, dropout) or only a normalisation layer joins the
   block before it, so a block ends after its activation and pooling, the natural cut.

For a ResNet this gives the stem, each bottleneck, and the classifier; for trainplay's decoders the
embedding, each transformer block, and the head.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

__all__ = ["Block", "split_blocks"]

_NORMS = (
    nn.modules.batchnorm._NormBase,
    nn.LayerNorm,
    nn.GroupNorm,
    nn.RMSNorm,
    nn.LocalResponseNorm,
)


@dataclass(frozen=True)
class Block:
    """One pipeline-cuttable unit: consecutive modules, cut before the first."""

    name: str
    """Fully qualified name of the first module: the split point."""
    modules: tuple[str, ...]
    """Fully qualified names of the modules in the block, in forward order."""
    kind: str
    """Class names of those modules joined by ``+`` (consecutive repeats collapsed)."""
    start: int
    """Forward position (operator index) where the block begins."""


def _is_container(module: nn.Module) -> bool:
    if isinstance(module, nn.Sequential):
        return type(module).forward is nn.Sequential.forward
    if isinstance(module, nn.ModuleList):
        return True
    return isinstance(module, nn.ModuleDict) and type(module).forward is nn.Module.forward


def _units(model: nn.Module) -> list[tuple[str, nn.Module]]:
    total = sum(p.numel() for p in model.parameters()) or 1
    units: list[tuple[str, nn.Module]] = []

    def visit(prefix: str, module: nn.Module) -> None:
        for name, child in module.named_children():
            path = f"{prefix}{name}"
            big = 2 * sum(p.numel() for p in child.parameters()) > total
            if any(True for _ in child.children()) and (_is_container(child) or big):
                visit(f"{path}.", child)
            else:
                units.append((path, child))

    visit("", model)
    return units


def _joins_previous(module: nn.Module) -> bool:
    return isinstance(module, _NORMS) or not any(True for _ in module.parameters())


def _kind(classes: list[str]) -> str:
    collapsed = [c for i, c in enumerate(classes) if i == 0 or classes[i - 1] != c]
    return "+".join(collapsed)


def split_blocks(model: nn.Module, entries: dict[str, int]) -> list[Block]:
    """Blocks of ``model`` given when the forward first entered each module (``Trace.entries``).

    A model with no children, or whose children the forward never enters, is one block named
    ``(model)``.
    """
    called = sorted(
        ((entries[path], path, module) for path, module in _units(model) if path in entries),
        key=lambda unit: unit[0],
    )
    groups: list[list[tuple[int, str, nn.Module]]] = []
    for unit in called:
        if groups and _joins_previous(unit[2]):
            groups[-1].append(unit)
        else:
            groups.append([unit])
    if len(groups) > 1 and all(_joins_previous(m) for _, _, m in groups[0]):
        groups[1] = groups[0] + groups[1]
        del groups[0]
    if not groups:
        return [Block(name="(model)", modules=("",), kind=type(model).__name__, start=0)]
    blocks = [
        Block(
            name=group[0][1],
            modules=tuple(path for _, path, _ in group),
            kind=_kind([type(m).__name__ for _, _, m in group]),
            start=group[0][0],
        )
        for group in groups
    ]
    # Operators the model runs before its first block (input transforms) belong to the first block.
    blocks[0] = Block(blocks[0].name, blocks[0].modules, blocks[0].kind, 0)
    return blocks
