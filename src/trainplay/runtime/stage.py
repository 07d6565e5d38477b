"""One rank's stage of the plan: the modules it runs, on its device, under their model's names.

Two ways to build it, chosen by :func:`trainplay.workload.chain.structure` on the ``meta`` model:

- **A chain** (the forward is the blocks' modules one after the other: trainplay's decoders, any
  ``nn.Sequential``): the whole model is built on ``meta``, the stage keeps the modules of its own
  blocks at their own paths (:class:`ChainStage`, so ``layers.3.attn.qkv.weight`` keeps its name),
  and only those get real tensors, on the rank's device (:func:`~trainplay.runtime.materialise.
  materialise`). No rank ever holds the whole model. The stage runs as plain eager modules, so
  autocast, recomputation and any device work as in one process.
- **Anything else** (torchvision's classifiers flatten between pooling and classifier): built whole
  on the CPU from the job's seed, then cut by ``torch.distributed.pipelining.pipeline`` (it traces
  the forward with ``torch.export``) at the planned blocks, as the runtime always did. Tracing on
  ``meta`` is not an option: the graph keeps ``device=meta`` in its factory calls. The cut
  stage's submodules are ``torch.export``'s unflattened ``InterpreterModule`` modules, which by
  default run their graph through ``torch.fx.Interpreter``, node by node in Python (for its stack
  traces): here about 50 µs a node, and 200 before a convolution, so a stage of
  mobilenet_v3_small's first ten blocks took 18.2 ms forward per micro-batch of 8 (88x88, one
  thread) where the same eager modules took 10.3. :func:`traced_stage` has them run their graph's
  generated code instead (``InterpreterModule``'s own path when Dynamo compiles it; the same
  graph, the same results): 11.3 ms.

**Tied parameters.** A parameter known by several names (GPT-2's token embedding is also its output
projection) lives once in a stage that holds all its users. When its users sit in different stages,
each of those stages holds a copy, equal at initialisation (same canonical name, same value); the
runner sums their gradients over the ranks that hold one (:func:`cross_stage_ties` says which
stages), so the copies stay equal, as the usual pipeline recipe does (Megatron-LM's embedding
group). Checkpoints key every tensor by its canonical name, so one copy is stored and each stage
restores its own from it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.distributed.pipelining import SplitPoint, pipeline
from torch.export.unflatten import InterpreterModule, UnflattenedModule

from trainplay.errors import UsageError
from trainplay.plan.plan import Plan
from trainplay.runtime.materialise import canonical_names, materialise
from trainplay.workload.blocks import Block
from trainplay.workload.chain import block_of, shared_names

__all__ = ["ChainStage", "Stage", "chain_stage", "cross_stage_ties", "traced_stage"]


class ChainStage(nn.Module):
    """The modules at ``paths`` of ``root``, at those same paths, run one after the other."""

    def __init__(self, root: nn.Module, paths: tuple[str, ...]):
        super().__init__()
        self.paths = paths
        for path in paths:
            parent: nn.Module = self
            *outer, leaf = path.split(".")
            for name in outer:
                if name not in parent._modules:
                    parent.add_module(name, nn.Module())
                parent = parent._modules[name]  # type: ignore[assignment]
            parent.add_module(leaf, root.get_submodule(path))
        self._chain = [root.get_submodule(path) for path in paths]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for module in self._chain:
            x = module(x)
        return x


@dataclass(frozen=True, eq=False)
class Stage:
    """What one rank runs, with the names its tensors go by in checkpoints."""

    module: nn.Module
    canonical: dict[str, str]
    """Name of each parameter and buffer in ``module`` -> its canonical name in the model."""
    tied: dict[str, tuple[int, ...]]
    """Canonical name of each parameter shared with another stage -> the stages holding it."""

    def state(self) -> dict[str, torch.Tensor]:
        """Parameters and persistent buffers by canonical name, each once (in-place views)."""
        return {self.canonical.get(k, k): v for k, v in self.module.state_dict().items()}

    def named_parameters(self) -> dict[str, nn.Parameter]:
        """Parameters by canonical name, each once."""
        return {self.canonical.get(k, k): p for k, p in self.module.named_parameters()}


def cross_stage_ties(
    root: nn.Module, blocks: tuple[Block, ...], plan: Plan
) -> dict[str, tuple[int, ...]]:
    """Canonical name -> the stages of ``plan`` that hold a user of it, for every tensor of
    ``root`` whose users span more than one stage."""
    stage_of_block = {
        k: s
        for s, stage in enumerate(plan.stages)
        for k in range(stage.blocks[0], stage.blocks[1] + 1)
    }
    out = {}
    for canonical, names in shared_names(root).items():
        stages = {stage_of_block.get(block_of(n, blocks)) for n in names} - {None}
        if len(stages) > 1:
            out[canonical] = tuple(sorted(stages))  # type: ignore[arg-type]
    return out


def chain_stage(
    root: nn.Module,
    blocks: tuple[Block, ...],
    plan: Plan,
    stage: int,
    *,
    seed: int,
    device: torch.device,
) -> Stage:
    """Stage ``stage`` of a chain model ``root`` (on ``meta``), materialised on ``device``."""
    first, last = plan.stages[stage].blocks
    paths = tuple(path for block in blocks[first : last + 1] for path in block.modules)
    module = ChainStage(root, paths)
    canonical = canonical_names(root)
    names = {n: canonical[id(t)] for n, t in module.named_parameters(remove_duplicate=False)}
    names |= {n: canonical[id(t)] for n, t in module.named_buffers(remove_duplicate=False)}
    ties = cross_stage_ties(root, blocks, plan)
    materialise(root, module, seed=seed, device=device)
    held = set(names.values())
    return Stage(module, names, {k: v for k, v in ties.items() if k in held})


def traced_stage(
    model: nn.Module,
    plan: Plan,
    stage: int,
    *,
    example: torch.Tensor,
    device: torch.device,
) -> Stage:
    """Stage ``stage`` cut from the whole ``model`` (built on the CPU) by tracing it with
    ``example``, one micro-batch of this rank's replica, and moved to ``device``."""
    names = plan.block_names
    if shared_names(model) and len(plan.stages) > 1:
        raise UsageError(
            "this model shares parameters between its modules and is not a chain of its blocks; "
            "trainplay pipelines such a model only when its forward runs its blocks in sequence"
        )
    spec = {names[st.blocks[0]]: SplitPoint.BEGINNING for st in plan.stages[1:]}
    pipe = pipeline(model, mb_args=(example,), split_spec=spec)
    module = pipe.get_stage_module(stage).to(device)
    _generated_code(module)
    return Stage(module, {}, {})


def _generated_code(module: nn.Module) -> None:
    """Have every unflattened module in ``module`` (``InterpreterModule`` and
    ``UnflattenedModule``, the two that carry the flag) run its graph's generated code, not
    ``torch.fx.Interpreter`` (see the module docstring)."""
    for sub in module.modules():
        if isinstance(sub, (InterpreterModule, UnflattenedModule)):
            sub._run_with_interpreter = False  # the flag torch.export.unflatten sets per module
