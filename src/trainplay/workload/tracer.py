"""Record one training iteration of a model as a list of costed aten operator calls.

How each operator is attributed to the model's structure, using PyTorch's own machinery only:

- **Forward**: global module forward hooks keep the stack of modules being run; each operator goes
  to the innermost module and to the current *block* (the cursor moves when a block's first
  module starts, so operators between two blocks belong to the earlier one: a pipeline split at
  the beginning of the next block puts them there too).
- **Backward**: a ``TorchFunctionMode`` tags every autograd node with the module and block that
  created it, at creation; during backward each operator goes to the tag of the node autograd is
  running (``torch._C._current_autograd_node``). So backward is counted from the operators autograd
  really runs, attributed exactly, never assumed to be a multiple of forward.
- **Cost**: a ``TorchDispatchMode`` sees every aten operator below autograd and costs it with
  :func:`~trainplay.workload.opcost.op_cost` (GEMM formulas from ``FlopCounterMode``'s registry).
- **Identical calls are counted once.** On ``meta`` an operator's outputs are only shapes, so a
  call whose signature (operator, argument shapes, strides, dtypes and scalars) was seen before
  gets new empty tensors of the remembered shapes, and the remembered cost, instead of running
  the operator's meta kernel again (operators whose outputs alias an input always run). The 48
  identical blocks of a GPT-2 XL are traced at the price of one and a little bookkeeping.
- **What crosses a cut**: every tensor storage produced in the forward remembers the operator that
  produced it and the last operator that read it; a cut after operator ``c`` carries every storage
  with ``producer <= c < last reader`` (the model input counts as produced before the first
  operator, the model output is read after the last).
- **Saved for backward**: ``saved_tensors_hooks`` see every tensor autograd keeps; each storage is
  counted once, where it is first saved (the clock tells an operator saving its outputs from the
  next module saving its inputs); parameters and buffers are not activations.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.graph import saved_tensors_hooks
from torch.multiprocessing.reductions import StorageWeakRef
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map

from trainplay.workload.opclass import BY_POSITIONS, op_class, positions
from trainplay.workload.opcost import OpCost, op_cost

__all__ = ["OpEvent", "Trace", "record_iteration"]

_TAG = "trainplay.origin"
Observer = Callable[[Any, tuple, dict], str]
"""Key under which an autograd node's ``metadata`` holds the (block, module) that created it."""


@dataclass(slots=True)
class OpEvent:
    """One aten operator call of the iteration."""

    phase: str
    """``fwd`` or ``bwd``."""
    time: int
    """Forward clock: ticks once per forward operator and once per module entry. A forward
    operator's own tick; a backward operator gets the tick of the forward operator that created
    the autograd node running it. Blocks are cut on this axis."""
    module: str
    """Path of the innermost module that ran it (``""``: the model's own forward code)."""
    op: str
    """The aten operator, e.g. ``aten.convolution``."""
    cost: OpCost
    cls: str
    """Operator class (:func:`~trainplay.workload.opclass.op_class`)."""
    key: str = ""
    """What an observer passed to :func:`record_iteration` called this call (e.g. its signature)."""
    positions: int = 0
    """Output positions per map, for a class whose curve is read by them
    (:data:`~trainplay.workload.opclass.BY_POSITIONS`); 0 for the others."""


@dataclass
class Trace:
    """What :func:`record_iteration` saw."""

    events: list[OpEvent]
    """Every operator call, forward then backward, in execution order."""
    live_after: list[int]
    """``live_after[i]``: bytes of forward storages alive between forward operators i and i+1."""
    entries: dict[str, int]
    """Module path -> forward clock tick of its first entry."""
    param_first_use: dict[str, int]
    """Parameter name -> index of the first event that touched it."""
    fused_attention: int = 0
    """Calls of ``scaled_dot_product_attention`` on ``meta`` counted as the fused kernel."""
    saved: list[tuple[float, str, int]] = field(default_factory=list)
    """(forward clock, module, bytes) of each storage saved for backward, where it was first saved.
    The clock tells apart an operator saving its outputs (before the next module is entered) and
    the next module's first operator saving its inputs."""

    @property
    def n_forward(self) -> int:
        return len(self.live_after)


def _key(t: torch.Tensor) -> int:
    return t.untyped_storage()._cdata


@dataclass(frozen=True, slots=True)
class _MetaTensor:
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype


def _skeleton(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return _MetaTensor(tuple(x.shape), tuple(x.stride()), x.dtype)
    return x


def _rebuild(x: Any) -> Any:
    if isinstance(x, _MetaTensor):
        return torch.empty_strided(x.shape, x.stride, dtype=x.dtype, device="meta")
    return x


def _replayable(func: Any) -> bool:
    """Whether ``func``'s outputs are new tensors (no output aliases an input), so a meta call
    can be replayed from its outputs' shapes."""
    cached = _REPLAYABLE.get(func)
    if cached is None:
        returns = func._schema.returns
        cached = (
            not func.is_view
            and all(r.alias_info is None for r in returns)
            and all(isinstance(r.type, torch.TensorType) for r in returns)
        )
        _REPLAYABLE[func] = cached
    return cached


_REPLAYABLE: dict[Any, bool] = {}


def _signature(func: Any, args: tuple, kwargs: dict[str, Any]) -> tuple | None:
    """The call's identity on ``meta`` (``None`` when it must run: a real device, an aliasing
    operator, or an argument that is neither a tensor nor a plain value)."""
    if not _replayable(func):
        return None
    parts: list[Any] = [func]
    for x in tree_leaves((args, kwargs)):
        if isinstance(x, torch.Tensor):
            if x.device.type != "meta":
                return None
            parts.append((tuple(x.shape), tuple(x.stride()), x.dtype, x.storage_offset()))
        elif x is None or isinstance(x, bool | int | float | str | torch.dtype | torch.device):
            parts.append(x)
        elif isinstance(x, torch.memory_format | torch.layout):
            parts.append(str(x))
        else:
            return None
    return (*parts, _structure(args), tuple(sorted(kwargs)))


def _structure(args: tuple) -> str:
    """Where the leaves sat (a list of two ints and two ints are different calls)."""
    return "".join("L" if isinstance(a, list | tuple) else "." for a in args)


class _Recorder(TorchDispatchMode):
    """Costs every aten call and keeps the forward liveness of storages."""

    def __init__(self, static_keys: dict[int, str], observer: Observer | None = None):
        super().__init__()
        self.observer = observer
        self.memo: dict[tuple, tuple[Any, OpCost, tuple[str, int]]] = {}
        self.module = ""  # innermost module of the forward, kept by _ModuleStack
        self.static_keys = static_keys  # parameter and buffer storages -> parameter name or ""
        self.events: list[OpEvent] = []
        self.n_fwd = 0  # forward operators so far: the index of forward events and live_after
        self.clock = 0  # forward operators and module entries so far
        self.last_clock = 0  # tick of the latest forward operator
        self.producer: dict[int, tuple[StorageWeakRef, int, int]] = {}  # key -> (ref, op, bytes)
        self.last_read: dict[int, int] = {}
        self.param_first_use: dict[str, int] = {}
        self.bw_origin = (0, "")
        self._paused = False

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Operators run inside are not recorded."""
        self._paused = True
        try:
            yield
        finally:
            self._paused = False

    def note_input(self, tensors: list[torch.Tensor]) -> None:
        for t in tensors:
            self.producer[_key(t)] = (
                StorageWeakRef(t.untyped_storage()),
                -1,
                t.untyped_storage().nbytes(),
            )

    def _call(self, func, args, kwargs) -> tuple[Any, OpCost, tuple[str, int]]:
        """Run (or, for a meta call seen before, replay) ``func``: outputs, cost, and class with
        the output map's positions where the class is read by them (else 0)."""
        key = _signature(func, args, kwargs)
        if key is not None and key in self.memo:
            skeleton, cost, cls = self.memo[key]
            return tree_map(_rebuild, skeleton), cost, cls
        out = func(*args, **kwargs)
        cost = op_cost(func, args, kwargs, out)
        name = op_class(func, args, cost.category)
        cls = (name, positions(func, args) if name in BY_POSITIONS else 0)
        if key is not None:
            self.memo[key] = (tree_map(_skeleton, out), cost, cls)
        return out, cost, cls

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self._paused:
            return func(*args, **kwargs)
        out, cost, (cls, where) = self._call(func, args, kwargs)
        backward = torch._C._current_graph_task_id() != -1
        if backward:
            node = torch._C._current_autograd_node()
            if node is not None and _TAG in node.metadata:
                self.bw_origin = node.metadata[_TAG]
            time, module = self.bw_origin
        else:
            time, module = self.clock, self.module
            self.last_clock = self.clock
            self.clock += 1
        index = len(self.events)
        inputs = [x for x in tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
        for t in inputs:
            key = _key(t)
            name = self.static_keys.get(key)
            if name:
                self.param_first_use.setdefault(name, index)
            elif not backward and key in self.producer:
                self.last_read[key] = self.n_fwd
        if not backward:
            for t in tree_leaves(out):
                if isinstance(t, torch.Tensor):
                    key = _key(t)
                    known = self.producer.get(key)
                    if key not in self.static_keys and (known is None or known[0].expired()):
                        ref = StorageWeakRef(t.untyped_storage())
                        self.producer[key] = (ref, self.n_fwd, t.untyped_storage().nbytes())
                        self.last_read.pop(key, None)
        self.n_fwd += 0 if backward else 1
        self.events.append(
            OpEvent(
                "bwd" if backward else "fwd",
                time,
                module,
                str(func.overloadpacket),
                cost,
                cls,
                self.observer(func, args, kwargs) if self.observer else "",
                where,
            )
        )
        return out

    def live_after(self, outputs: list[torch.Tensor]) -> list[int]:
        """Bytes alive across each gap between forward operators (difference array over ops)."""
        for t in outputs:
            self.last_read[_key(t)] = self.n_fwd
        delta = [0] * (self.n_fwd + 1)
        for key, (_, produced, nbytes) in self.producer.items():
            last = self.last_read.get(key, produced)
            if last > produced:
                delta[max(produced, 0)] += nbytes
                delta[last] -= nbytes
        live, running = [], 0
        for i in range(self.n_fwd):
            running += delta[i]
            live.append(running)
        return live


class _NodeTagger(TorchFunctionMode):
    """Tags each new autograd node with the forward position and module that created it."""

    def __init__(self, recorder: _Recorder):
        super().__init__()
        self.recorder = recorder
        self.fused_attention = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention and _fusable_on_meta(*args, **kwargs):
            out = _fused_attention(*args, **kwargs)
            self.fused_attention += 1
        else:
            out = func(*args, **kwargs)
        if torch.is_grad_enabled():
            origin = None
            for t in tree_leaves(out):
                if isinstance(t, torch.Tensor) and t.grad_fn is not None:
                    origin = origin or (self.recorder.last_clock, self.recorder.module)
                    _tag_new_nodes(t.grad_fn, origin)
        return out


def _fusable_on_meta(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
) -> bool:
    return (
        query.device.type == "meta"
        and attn_mask is None
        and dropout_p == 0.0
        and not enable_gqa
        and query.shape[:-1] == value.shape[:-1]
    )


def _fused_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
) -> torch.Tensor:
    """On ``meta``, count attention as the fused (flash) kernel CPUs and GPUs run, not the
    unfused math fallback ``meta`` would pick, which materialises the attention matrix."""
    kernel = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    return kernel(query, key, value, 0.0, is_causal, scale=scale)[0]


def _tag_new_nodes(root: Any, origin: tuple[int, str]) -> None:
    stack = [root]
    while stack:
        node = stack.pop()
        if node is None or _TAG in node.metadata:
            continue
        node.metadata[_TAG] = origin
        stack.extend(fn for fn, _ in node.next_functions)


class _ModuleStack:
    """Which module the forward is in, from global module hooks; tells the recorder."""

    def __init__(self, model: nn.Module, recorder: _Recorder):
        self.paths = {id(m): name for name, m in model.named_modules()}
        self.recorder = recorder
        self.stack: list[str] = []
        self.entries: dict[str, int] = {}
        self.failed_in: tuple[str, str] | None = None

    def pre(self, module: nn.Module, _inputs: Any) -> None:
        path = self.paths.get(id(module), self.stack[-1] if self.stack else "")
        self.entries.setdefault(path, self.recorder.clock)
        self.recorder.clock += 1
        self.stack.append(path)
        self.recorder.module = path

    def post(self, module: nn.Module, _inputs: Any, _output: Any) -> None:
        path = self.stack.pop()
        self.recorder.module = self.stack[-1] if self.stack else ""
        if self.failed_in is None and sys.exc_info()[1] is not None:
            self.failed_in = (path, type(module).__name__)


def record_iteration(
    model: nn.Module,
    inputs: tuple[torch.Tensor, ...],
    observer: Observer | None = None,
    loss: Callable[[Any], torch.Tensor] | None = None,
) -> Trace:
    """Run forward and backward of ``model(*inputs)`` once and record every operator.

    ``observer(func, args, kwargs)``, when given, sees every recorded call; what it returns is kept
    as the event's ``key``.

    Without ``loss`` the backward starts from a gradient of ones for every output that requires
    grad. With ``loss(output) -> scalar`` (the training loss) its operators are recorded too, as
    forward operators after the model's (the model output still is what crosses the last cut), and
    the backward starts from the loss. If the forward raises, the exception propagates with
    ``exc.trainplay_module = (path, class name)`` of the innermost module it came from (``None``
    when it came from outside any module).
    """
    static_keys: dict[int, str] = {}
    for name, p in model.named_parameters():
        static_keys.setdefault(_key(p), name)
    for b in model.buffers():
        static_keys.setdefault(_key(b), "")
    recorder = _Recorder(static_keys, observer)
    modules = _ModuleStack(model, recorder)
    recorder.note_input([t for t in inputs if isinstance(t, torch.Tensor)])
    saved: dict[int, tuple[float, str, int]] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        key = _key(t)
        if key not in static_keys and key not in saved:
            # Half a tick back: after the latest tick (an operator saving its outputs, or a module
            # entry followed by its first operator saving its inputs), before the next one.
            saved[key] = (recorder.clock - 0.5, recorder.module, t.untyped_storage().nbytes())
        return t

    # Gradients of the outputs are made outside the recorder: they are the loss's, not the model's.
    pre = register_module_forward_pre_hook(modules.pre)
    post = register_module_forward_hook(modules.post, always_call=True)
    try:
        with recorder:
            tagger = _NodeTagger(recorder)
            with tagger, saved_tensors_hooks(pack, _unpack):
                try:
                    output = model(*inputs)
                except Exception as exc:
                    exc.trainplay_module = modules.failed_in  # type: ignore[attr-defined]
                    raise
            outputs = [t for t in tree_leaves(output) if isinstance(t, torch.Tensor)]
            live = recorder.live_after(outputs)
            if loss is not None:
                with tagger, saved_tensors_hooks(pack, _unpack):
                    outputs = [loss(output)]
            roots = [t for t in outputs if t.requires_grad]
            with recorder.paused():
                grads = [torch.ones_like(t) for t in roots]
            if roots:
                torch.autograd.backward(roots, grads)
    finally:
        pre.remove()
        post.remove()
    return Trace(
        events=recorder.events,
        live_after=live,
        entries=modules.entries,
        param_first_use=recorder.param_first_use,
        fused_attention=tagger.fused_attention,
        saved=sorted(saved.values()),
    )


def _unpack(t: torch.Tensor) -> torch.Tensor:
    return t
