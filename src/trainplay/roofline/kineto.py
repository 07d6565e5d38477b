"""Reading one PyTorch profiler (Kineto) trace: where each step's time went on one rank.

A trace is the Chrome-trace JSON that ``torch.profiler`` writes (``prof.export_chrome_trace`` or
``tensorboard_trace_handler``, plain or ``.gz``). What is read from it, and how:

- **Rank**: ``distributedInfo.rank`` (Kineto writes it when ``torch.distributed`` is initialised),
  else ``rank<N>`` in the file name (``tensorboard_trace_handler(worker_name="rank<N>")``).
- **Steps**: the ``ProfilerStep#<N>`` spans that ``prof.step()`` records. Their thread is the
  *main thread*; everything below is measured on it, step by step.
- **Operator time**: the main thread's time inside ``cpu_op`` events, each operator counted by
  its self time (its duration less its children's), in one of three classes: *collective* for
  communication (``c10d::*`` launches, ``record_param_comms``, and everything inside them),
  *compute* for GEMMs (convolution, mm, addmm, bmm, matmul, linear, attention, and their backward
  nodes), *memory* for everything else (pointwise, normalisation, pooling, copies, the optimizer:
  the operators MD-Roofline finds memory-bound). An operator without a class of its own takes its
  caller's, so a GEMM's internals (``aten::mkldnn_convolution`` under ``aten::convolution``) are
  compute; a backward node passes nothing down (``AddmmBackward0``'s ``aten::sum``, the bias
  gradient, is memory).
- **Waiting in collectives**: time the main thread runs no operator while a collective is in
  flight: a backend's event on its own thread (gloo: ``gloo:all_reduce``, ``gloo:broadcast``, as
  ``user_annotation`` events on gloo's worker threads) or a launch on the main thread
  (``c10d::allreduce_``, ``c10d::broadcast_``). ``work.wait()`` and DDP's wait for its buckets
  record no event of their own, so a wait shows as this idle time.
- **Blocks**: a block's forward is its ``trainplay.block:<name>`` span (see
  :mod:`trainplay.roofline.annotate`); its backward is every outermost
  ``autograd::engine::evaluate_function: <Node>`` event whose ``Sequence number`` is that of a
  forward operator inside the span. A forward operator records the number autograd will give the
  next node it creates, so number ``n`` belongs to the *last* forward operator that recorded it.

On a GPU the kernels run asynchronously to the host thread read here; these times then measure
the host's launches and waits, not the device's work.

Times in the trace are microseconds; every value here is in seconds.
"""

from __future__ import annotations

import bisect
import gzip
import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainplay.errors import UsageError
from trainplay.roofline.annotate import block_of_annotation

__all__ = [
    "OP_CLASSES",
    "RankTrace",
    "StepTimes",
    "is_collective",
    "load_trace",
    "op_class",
    "read_trace",
]

OP_CLASSES = ("compute", "memory", "collective")
"""Operator classes: GEMMs, everything else on the device, collective launches."""

_STEP = re.compile(r"ProfilerStep#(\d+)$")
_RANK_IN_NAME = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)
_BACKWARD = "autograd::engine::evaluate_function"
_COLLECTIVE_PREFIXES = ("c10d::", "c10d_functional::", "_c10d_functional::", "gloo:", "nccl:")
_COLLECTIVE_NAMES = frozenset({"record_param_comms"})
_GEMM_OP = re.compile(
    r"""^(aten::)?(
        _?convolution(_backward)?(_overrideable)? | conv[123]d | conv_transpose[123]d | conv_tbc
      | (mkldnn|cudnn|miopen)_convolution\w* | _?slow_conv\w* | thnn_conv\w* | mkldnn_linear\w*
      | _nnpack_spatial_convolution | _?(add|b|baddb|addb)?mm | _addmm_activation | _int_mm
      | _scaled_mm | matmul | linear | bilinear | einsum
      | _?scaled_dot_product\w* | _?(flash|efficient|cudnn)_attention\w*
      | _native_multi_head_attention
    )$""",
    re.VERBOSE,
)
_GEMM_NODE = re.compile(
    r"^\w*(Convolution|Conv\dD|Addmm|Mm|Bmm|Baddbmm|Addbmm|Linear|ScaledDotProduct\w*)Backward\d*$"
)
_NODE = re.compile(r"^[A-Z]\w*Backward\d*$")
_US = 1e-6


def is_collective(name: str) -> bool:
    """Whether an event is communication: a c10d launch or a backend's collective."""
    return name.startswith(_COLLECTIVE_PREFIXES) or name in _COLLECTIVE_NAMES


def op_class(name: str) -> str | None:
    """``collective``, ``compute`` (a GEMM) or ``None`` (unclassified: the enclosing op decides).

    Backward wrappers (``autograd::engine::evaluate_function: XxxBackward0``) are classified by
    their node name, so a convolution's backward is compute.
    """
    if is_collective(name):
        return "collective"
    if name.startswith(_BACKWARD):
        name = name.rpartition(": ")[2]
    return "compute" if _GEMM_OP.match(name) or _GEMM_NODE.match(name) else None


@dataclass(frozen=True)
class StepTimes:
    """One training step on one rank, measured on its main thread."""

    step: int
    """The step's number, ``N`` of ``ProfilerStep#N``."""
    step_s: float
    """Duration of the step span."""
    compute_s: float
    """Time in compute-class operators (GEMMs: convolution, matmul, attention)."""
    memory_s: float
    """Time in the other operators (pointwise, normalisation, pooling, copies, optimizer)."""
    collective_call_s: float
    """Time inside collective launches (``c10d::allreduce_``, ...), not waiting for them."""
    collective_wait_s: float
    """Time with no operator running while a collective is in flight: waiting for peers."""
    blocks_s: dict[str, float] = field(default_factory=dict)
    """Forward + backward time of each annotated block, in forward order."""

    @property
    def busy_s(self) -> float:
        """Time in operators other than waiting: compute + memory + collective launches."""
        return self.compute_s + self.memory_s + self.collective_call_s

    @property
    def collective_s(self) -> float:
        """Time in collectives: launching them and waiting for them."""
        return self.collective_call_s + self.collective_wait_s

    @property
    def idle_s(self) -> float:
        """The rest: Python between operators, idle with nothing in flight, descheduled."""
        return max(0.0, self.step_s - self.busy_s - self.collective_wait_s)

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "step_s": self.step_s,
            "compute_s": self.compute_s,
            "memory_s": self.memory_s,
            "collective_call_s": self.collective_call_s,
            "collective_wait_s": self.collective_wait_s,
            "blocks_s": dict(self.blocks_s),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepTimes:
        return cls(**{**data, "blocks_s": dict(data.get("blocks_s", {}))})


@dataclass(frozen=True)
class RankTrace:
    """What one rank's trace says, step by step."""

    path: str
    """The trace file."""
    rank: int
    """The rank that wrote it."""
    world_size: int | None
    """Ranks in the job, when the trace records it (``distributedInfo``)."""
    steps: tuple[StepTimes, ...]
    """Profiled steps, in order."""
    predicted_busy_s: float | None = None
    """The cost model's forward + backward + optimizer seconds per step for this rank, when
    ``trainplay train --profile-steps`` wrote the trace (its ``trainplay`` metadata)."""
    cpu_floor: float = 1.0
    """The rank's threads over the CPUs its process could use, when more than 1 (a CPU quota or a
    narrower affinity; the ``trainplay`` metadata's ``cpu_floor``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(self.steps))
        if self.rank < 0:
            raise ValueError(f"rank must be non-negative, got {self.rank}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "rank": self.rank,
            "world_size": self.world_size,
            "steps": [s.to_dict() for s in self.steps],
            "predicted_busy_s": self.predicted_busy_s,
            "cpu_floor": self.cpu_floor,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RankTrace:
        return cls(
            path=data["path"],
            rank=data["rank"],
            world_size=data.get("world_size"),
            steps=tuple(StepTimes.from_dict(s) for s in data["steps"]),
            predicted_busy_s=data.get("predicted_busy_s"),
            cpu_floor=data.get("cpu_floor", 1.0),
        )


def load_trace(path: Path) -> dict[str, Any]:
    """The JSON of a Kineto trace; :class:`UsageError` naming the file if it is not one."""
    try:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
    except UnicodeDecodeError:
        raise UsageError(
            f"{path} is not a PyTorch profiler trace (not UTF-8 JSON); write traces with "
            "torch.profiler"
        ) from None
    except (OSError, EOFError) as exc:
        raise UsageError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{path} is not a PyTorch profiler trace (not JSON: {exc.msg} at line {exc.lineno})"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise UsageError(f"{path} is not a PyTorch profiler trace (no traceEvents)")
    if "schemaVersion" not in data and "baseTimeNanoseconds" not in data:
        raise UsageError(
            f"{path} is not a PyTorch profiler trace (a Chrome trace without Kineto's "
            "schemaVersion; write it with torch.profiler)"
        )
    return data


def _rank(data: dict[str, Any], path: Path) -> tuple[int, int | None]:
    info = data.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        size = info.get("world_size")
        return info["rank"], size if isinstance(size, int) else None
    if match := _RANK_IN_NAME.search(path.name):
        return int(match.group(1)), None
    raise UsageError(
        f"{path}: cannot tell its rank (no distributedInfo in the trace, no rank<N> in the name); "
        "initialise torch.distributed before profiling or name the file rank<N>"
    )


def _cpu_floor(data: dict[str, Any]) -> float:
    """The rank's threads over the CPUs it could use, from its ``trainplay`` metadata (1 without)."""
    meta = data.get("trainplay")
    floor = meta.get("cpu_floor") if isinstance(meta, dict) else None
    return float(floor) if isinstance(floor, int | float) and floor > 1.0 else 1.0


def _predicted_busy_s(data: dict[str, Any]) -> float | None:
    """Forward + backward + optimizer seconds trainplay predicted for the rank (its metadata)."""
    meta = data.get("trainplay")
    predicted = meta.get("predicted") if isinstance(meta, dict) else None
    if not isinstance(predicted, dict):
        return None
    total = sum(float(predicted.get(k) or 0.0) for k in ("fwd_s", "bwd_s", "optimizer_s"))
    return total or None


def _union(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Total length of the intersection of two sorted, disjoint interval lists."""
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _complement(
    busy: list[tuple[float, float]], start: float, end: float
) -> list[tuple[float, float]]:
    gaps, cursor = [], start
    for lo, hi in busy:
        if lo > cursor:
            gaps.append((cursor, min(lo, end)))
        cursor = max(cursor, hi)
        if cursor >= end:
            break
    if cursor < end:
        gaps.append((cursor, end))
    return [g for g in gaps if g[1] > g[0]]


def _is_backward_node(name: str) -> bool:
    return name.startswith(_BACKWARD) or _NODE.match(name) is not None


def _self_times(ops: list[dict[str, Any]]) -> list[tuple[float, float, str]]:
    """``(start, self time, class)`` of each operator on one thread, nesting by time.

    An operator's class is its own (:func:`op_class`), else that of the nearest enclosing
    operator; everything inside a collective launch is collective. A backward node passes its
    class on to nothing: ``AddmmBackward0``'s ``aten::sum`` (the bias gradient) is memory.
    """
    ops = sorted(ops, key=lambda e: (e["ts"], -e["dur"]))
    out: list[list[Any]] = []
    stack: list[tuple[float, int, str]] = []  # (end, index in out, class passed to children)
    for e in ops:
        start, dur = float(e["ts"]), float(e["dur"])
        while stack and start >= stack[-1][0]:
            stack.pop()
        inherited = stack[-1][2] if stack else "memory"
        own = op_class(e["name"])
        cls = inherited if inherited == "collective" or own is None else own
        if stack:
            out[stack[-1][1]][1] -= dur
        out.append([start, dur, cls])
        passed = inherited if _is_backward_node(e["name"]) else cls
        stack.append((start + dur, len(out) - 1, passed))
    return [(s, max(d, 0.0), c) for s, d, c in out]


def _backward_by_block(
    ops: list[dict[str, Any]], spans: list[tuple[float, float, str]], main: Any
) -> list[tuple[float, float, str]]:
    """``(start, duration, block)`` of each outermost backward node of an annotated block.

    A forward operator records the sequence number autograd will give the next node it creates,
    so the node with number ``n`` comes from the *last* forward operator that recorded ``n``.
    """
    starts = [s for s, _, _ in spans]
    block_of_seq: dict[int, str | None] = {}
    for e in sorted(ops, key=lambda e: e["ts"]):
        seq = e.get("args", {}).get("Sequence number")
        if e["tid"] != main or seq is None or _is_backward_node(e["name"]):
            continue
        i = bisect.bisect_right(starts, e["ts"]) - 1
        inside = i >= 0 and e["ts"] + e["dur"] <= spans[i][1]
        block_of_seq[seq] = spans[i][2] if inside else None
    out = []
    end_of_last: dict[Any, float] = defaultdict(lambda: float("-inf"))
    backward = [e for e in ops if e["name"].startswith(_BACKWARD)]
    for e in sorted(backward, key=lambda e: (e["ts"], -e["dur"])):
        if e["ts"] < end_of_last[e["tid"]]:
            continue  # nested in a backward node already counted
        end_of_last[e["tid"]] = e["ts"] + e["dur"]
        block = block_of_seq.get(e.get("args", {}).get("Sequence number"))
        if block is not None:
            out.append((float(e["ts"]), float(e["dur"]), block))
    return out


def _complete_events(data: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    """The complete (``ph: X``) events, with ``ts`` and ``dur`` as floats and a string name."""
    events = []
    for e in data["traceEvents"]:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        try:
            ts, dur = float(e["ts"]), float(e["dur"])
        except (KeyError, TypeError, ValueError):
            raise UsageError(
                f"{path} is not a PyTorch profiler trace (an event without numeric ts/dur: "
                f"{str(e)[:80]})"
            ) from None
        args = e.get("args")
        events.append(
            {
                "name": str(e.get("name", "")),
                "cat": e.get("cat"),
                "tid": e.get("tid"),
                "ts": ts,
                "dur": dur,
                "args": args if isinstance(args, dict) else {},
            }
        )
    return events


def read_trace(path: Path) -> RankTrace:
    """Read one rank's trace; :class:`UsageError` if it is not a trace or has no steps."""
    data = load_trace(path)
    rank, world_size = _rank(data, path)
    events = _complete_events(data, path)
    steps = sorted(
        (e["ts"], e["ts"] + e["dur"], int(m.group(1)), e["tid"])
        for e in events
        if (m := _STEP.match(e["name"]))
    )
    if not steps:
        raise UsageError(
            f"{path} has no step spans (ProfilerStep#N): call prof.step() once per training step"
        )
    main = steps[0][3]
    starts = [start for start, _, _, _ in steps]

    def step_of(ts: float) -> int | None:
        i = bisect.bisect_right(starts, ts) - 1
        return i if i >= 0 and ts < steps[i][1] else None

    ops = [e for e in events if e["cat"] == "cpu_op"]
    main_ops = [e for e in ops if e["tid"] == main]
    in_flight = _union((e["ts"], e["ts"] + e["dur"]) for e in events if is_collective(e["name"]))
    spans = sorted(
        (e["ts"], e["ts"] + e["dur"], block)
        for e in events
        if e["tid"] == main and (block := block_of_annotation(e["name"])) is not None
    )
    order = list(dict.fromkeys(block for _, _, block in spans))

    by_class = [dict.fromkeys(OP_CLASSES, 0.0) for _ in steps]
    for ts, self_us, cls in _self_times(main_ops):
        if (i := step_of(ts)) is not None:
            by_class[i][cls] += self_us
    blocks: list[dict[str, float]] = [defaultdict(float) for _ in steps]
    for ts, stop, block in spans:
        if (i := step_of(ts)) is not None:
            blocks[i][block] += stop - ts
    for ts, dur, block in _backward_by_block(ops, spans, main):
        if (i := step_of(ts)) is not None:
            blocks[i][block] += dur
    op_spans = _union((e["ts"], e["ts"] + e["dur"]) for e in main_ops)
    result = []
    for i, (start, end, number, _) in enumerate(steps):
        lo = bisect.bisect_left(op_spans, (start, start)) - 1
        idle = _complement(
            op_spans[max(lo, 0) : bisect.bisect_right(op_spans, (end, end))], start, end
        )
        result.append(
            StepTimes(
                step=number,
                step_s=(end - start) * _US,
                compute_s=by_class[i]["compute"] * _US,
                memory_s=by_class[i]["memory"] * _US,
                collective_call_s=by_class[i]["collective"] * _US,
                collective_wait_s=_overlap(idle, in_flight) * _US,
                blocks_s={b: blocks[i][b] * _US for b in order if b in blocks[i]},
            )
        )
    return RankTrace(
        path=str(path),
        rank=rank,
        world_size=world_size,
        steps=tuple(result),
        predicted_busy_s=_predicted_busy_s(data),
        cpu_floor=_cpu_floor(data),
    )
