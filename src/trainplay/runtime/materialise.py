"""Real tensors only where they are trained: a stage built on ``meta`` gets its parameters and
buffers on its device, each initialised from the job's seed and its own name.

- **By name.** A tensor's initial value depends on the seed and its *canonical* name (the first
  name ``named_parameters`` gives it in the whole model) and nothing else, so the same job gets the
  same initial weights under any plan, any number of ranks, after any restart. Random draws come
  from a ``torch.Generator`` seeded with the first 8 bytes of SHA-256 of ``"<seed>/<name>"``
  (:func:`name_seed`; Python's ``hash`` is salted per process).
- **Which value.** A trainplay :class:`~trainplay.workload.decoder.Decoder` names its own
  (:func:`~trainplay.workload.decoder.initial_value`: GPT-2's scheme). Any other module is
  initialised by its ``reset_parameters()`` (every ``torch.nn`` layer has one), on the CPU, with
  the default generator seeded from the module's name. A parameter or buffer that neither covers
  (a module without ``reset_parameters``, or one whose reset leaves a tensor unset) is an error
  that names it: :func:`check_initialisable` finds the first kind before anything starts.
- **Tied tensors** (one tensor under several names, GPT-2's embedding and output projection) get
  one value, under the canonical name, wherever a stage holds any of the names.
- **Where.** Values are made on the CPU module by module and moved to the device: a rank never
  holds more than its stage plus one module's tensors, and a CPU and a GPU run start from the same
  numbers.
"""

from __future__ import annotations

import copy
import hashlib
import math

import torch
from torch import nn

from trainplay.errors import UsageError
from trainplay.workload.decoder import Decoder, initial_value

__all__ = ["canonical_names", "check_initialisable", "materialise", "name_seed"]


def name_seed(seed: int, name: str) -> int:
    """A 63-bit seed from the job's seed and a tensor's or module's name, the same in every
    process."""
    digest = hashlib.sha256(f"{seed}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def canonical_names(model: nn.Module) -> dict[int, str]:
    """``id(tensor)`` -> the tensor's canonical name, for every parameter and buffer of
    ``model``."""
    out: dict[int, str] = {}
    for name, tensor in model.named_parameters(remove_duplicate=False):
        out.setdefault(id(tensor), name)
    for name, tensor in model.named_buffers(remove_duplicate=False):
        out.setdefault(id(tensor), name)
    return out


def check_initialisable(model: nn.Module) -> None:
    """Raise :class:`UsageError` if some tensor of ``model`` has no initialiser (module docstring)."""
    if isinstance(model, Decoder):
        return
    for path, module in model.named_modules():
        own = [n for n, _ in module.named_parameters(recurse=False)]
        own += [n for n, _ in module.named_buffers(recurse=False)]
        if own and not callable(getattr(module, "reset_parameters", None)):
            raise _uninitialisable(path, module, own[0], "has no reset_parameters()")


def _uninitialisable(path: str, module: nn.Module, name: str, why: str) -> UsageError:
    where = f"{path}.{name}" if path else name
    return UsageError(
        f"cannot initialise {where!r}: {type(module).__name__} {why}; trainplay builds each "
        "stage on meta and initialises it module by module, so give the module a "
        "reset_parameters() that sets every parameter and buffer"
    )


class _Values:
    """Initial CPU values by canonical name, made on demand (a module's at once)."""

    def __init__(self, root: nn.Module, seed: int):
        self.root = root
        self.seed = seed
        self.by_module: dict[str, dict[str, torch.Tensor]] = {}

    def value(self, name: str, like: torch.Tensor) -> torch.Tensor:
        if isinstance(self.root, Decoder):
            generator = torch.Generator().manual_seed(name_seed(self.seed, name))
            return initial_value(self.root.config, name, tuple(like.shape), generator)
        path, _, attr = name.rpartition(".")
        if path not in self.by_module:
            self.by_module[path] = self._reset(path)
        return self.by_module[path].pop(attr)

    def _reset(self, path: str) -> dict[str, torch.Tensor]:
        module = self.root.get_submodule(path)
        if not callable(getattr(module, "reset_parameters", None)):
            own = next(iter({**module._parameters, **module._buffers}))
            raise _uninitialisable(path, module, own, "has no reset_parameters()")
        clone = copy.copy(module)  # the original keeps its meta tensors until they are replaced
        clone.__dict__["_parameters"] = {
            k: None if v is None else nn.Parameter(_blank(v), v.requires_grad)
            for k, v in module._parameters.items()
        }
        clone.__dict__["_buffers"] = {
            k: None if v is None else _blank(v) for k, v in module._buffers.items()
        }
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.default_generator.manual_seed(name_seed(self.seed, path))
            clone.reset_parameters()
        out = {}
        for k, v in {**clone._parameters, **clone._buffers}.items():
            if v is None:
                continue
            if _unset(v):
                raise _uninitialisable(path, module, k, "leaves it unset in reset_parameters()")
            out[k] = v.detach()
        return out


def _blank(like: torch.Tensor) -> torch.Tensor:
    """A CPU tensor shaped like ``like`` that no initialiser would leave as it is."""
    out = torch.empty(like.shape, dtype=like.dtype)
    if out.is_floating_point():
        return out.fill_(math.nan)
    if out.dtype != torch.bool:
        return out.fill_(torch.iinfo(out.dtype).min)
    return out


def _unset(value: torch.Tensor) -> bool:
    if value.is_floating_point():
        return bool(torch.isnan(value).any())
    if value.dtype != torch.bool:
        return bool((value == torch.iinfo(value.dtype).min).any())
    return False


def materialise(root: nn.Module, stage: nn.Module, *, seed: int, device: torch.device) -> None:
    """Give every parameter and buffer of ``stage`` (modules of ``root``, on ``meta``) its initial
    value on ``device``, in place. ``root`` is the whole model on ``meta``: names and
    initialisers come from it. ``stage`` may be ``root`` itself (one process, all of it)."""
    canonical = canonical_names(root)
    values = _Values(root, seed)
    made: dict[int, torch.Tensor] = {}
    kept: list[torch.Tensor] = []  # the meta tensors stay alive, so their ids stay unique
    for _, module in stage.named_modules(remove_duplicate=False):
        for store, is_param in ((module._parameters, True), (module._buffers, False)):
            for attr, tensor in list(store.items()):
                if tensor is None:
                    continue
                key = id(tensor)
                if key not in made:
                    kept.append(tensor)
                    value = values.value(canonical[key], tensor).to(device, tensor.dtype)
                    made[key] = nn.Parameter(value, tensor.requires_grad) if is_param else value
                store[attr] = made[key]
