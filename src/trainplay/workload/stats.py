"""The application-level values of MD-Roofline: :class:`LayerStats` and :class:`WorkloadProfile`.

Both are frozen dataclasses that round-trip through JSON (``to_dict``/``from_dict``) and are the
stable contract other packages and outside tools read. Units are in the field names: FLOPs
(a multiply-add counts 2) and bytes.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field, fields
from typing import Any

from trainplay.errors import UsageError

__all__ = [
    "DTYPES",
    "DTYPE_BYTES",
    "GRANULARITIES",
    "LayerStats",
    "OpGroup",
    "Tie",
    "WorkloadProfile",
]

DTYPES = ("fp32", "bf16", "fp16")
"""Training dtypes trainplay profiles: parameters and activations are held in this dtype."""

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
"""Bytes per element of each training dtype."""

GRANULARITIES = ("blocks", "modules", "ops")
"""``blocks``: the ordered pipeline-cuttable units; ``modules``: the module tree cut at a depth;
``ops``: one row per (module, aten operator)."""


@dataclass(frozen=True, kw_only=True)
class OpGroup:
    """Identical operator calls of one row: same class, phase, aten operator, FLOPs, bytes and
    (where the class is read by them) output positions."""

    cls: str
    """Operator class (:mod:`trainplay.workload.opclass`); ``class`` in JSON."""
    phase: str
    """``fwd`` or ``bwd``."""
    op: str
    """The aten operator, e.g. ``aten.convolution``."""
    flops: int
    """FLOPs of one call."""
    bytes: int
    """Bytes read plus written by one call."""
    count: int
    """How many such calls the row makes."""
    positions: int = 0
    """Positions of the output map, for a class whose curve is read by them
    (:data:`~trainplay.workload.opclass.BY_POSITIONS`: a 1x1 convolution on a narrow map); 0 for
    the others, and left out of JSON then."""

    def to_dict(self) -> dict[str, Any]:
        out = {
            "class": self.cls,
            "phase": self.phase,
            "op": self.op,
            "flops": self.flops,
            "bytes": self.bytes,
            "count": self.count,
        }
        return {**out, "positions": self.positions} if self.positions else out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OpGroup:
        try:
            return cls(
                cls=str(data["class"]),
                phase=str(data["phase"]),
                op=str(data["op"]),
                flops=int(data["flops"]),
                bytes=int(data["bytes"]),
                count=int(data["count"]),
                positions=int(data.get("positions", 0)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"operator entry {data!r} is malformed ({exc})") from None


@dataclass(frozen=True, kw_only=True)
class LayerStats:
    """What one layer (a block, module or operator row) of a training iteration asks of a device."""

    name: str
    """Fully qualified module name of the row (a block is named after its first module)."""
    kind: str
    """Module class name(s) of the row, or the aten operator for ``ops`` granularity."""
    fwd_flops: int = 0
    """FLOPs of the forward pass, all operators (GEMM, elementwise, normalisation, ...)."""
    bwd_flops: int = 0
    """FLOPs of the backward pass, counted from the backward operators autograd actually runs."""
    fwd_bytes: int = 0
    """Bytes read plus bytes written to device memory by the forward operators."""
    bwd_bytes: int = 0
    """Bytes read plus bytes written to device memory by the backward operators."""
    param_bytes: int = 0
    """Bytes of the parameters the row owns (a shared parameter is counted once, where first used)."""
    activation_bytes: int = 0
    """Bytes that cross a pipeline cut placed right after this row (for the last row: the output)."""
    saved_bytes: int = 0
    """Bytes autograd keeps from the forward for the backward, parameters excluded. Each tensor is
    counted once, in the row that saves it first: a tensor a block receives across a cut and keeps
    is counted where it was made (and it is that row's ``activation_bytes``)."""
    params: int = 0
    """Number of parameters the row owns."""
    param_tensors: int = 0
    """Number of parameter tensors the row owns (the optimizer works tensor by tensor)."""
    fwd_gemm_flops: int = 0
    """The part of ``fwd_flops`` spent in convolutions and matrix multiplies."""
    bwd_gemm_flops: int = 0
    """The part of ``bwd_flops`` spent in convolutions and matrix multiplies."""
    ops: tuple[OpGroup, ...] = ()
    """The row's operator calls, identical calls grouped, in order of first call: what a
    device's per-class performance profile prices (:mod:`trainplay.roofline.cost`)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "int" and (not isinstance(value, int) or value < 0):
                raise UsageError(
                    f"layer {self.name!r}: {f.name} must be an integer >= 0, got {value!r}"
                )
        if self.fwd_gemm_flops > self.fwd_flops or self.bwd_gemm_flops > self.bwd_flops:
            raise UsageError(f"layer {self.name!r}: GEMM FLOPs exceed all FLOPs")
        object.__setattr__(self, "ops", tuple(self.ops))

    @property
    def flops(self) -> int:
        """Forward plus backward FLOPs."""
        return self.fwd_flops + self.bwd_flops

    @property
    def bytes(self) -> int:
        """Forward plus backward bytes moved to and from device memory."""
        return self.fwd_bytes + self.bwd_bytes

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LayerStats:
        known = {f.name for f in fields(cls)} - {"ops"}
        missing = {"name", "kind"} - data.keys()
        if missing:
            raise UsageError(f"layer entry lacks {sorted(missing)}; each layer needs name and kind")
        ops = data.get("ops", ())
        if not isinstance(ops, list | tuple):
            raise UsageError(f"layer {data['name']!r}: ops must be a list")
        return cls(
            **{k: v for k, v in data.items() if k in known},
            ops=tuple(OpGroup.from_dict(op) for op in ops),
        )

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "ops"}
        data["ops"] = [op.to_dict() for op in self.ops]
        return data


NUMERIC_KEYS = tuple(f.name for f in fields(LayerStats) if f.type == "int")
"""The summable fields of a layer, in contract order."""


@dataclass(frozen=True)
class Tie:
    """A parameter several blocks use (GPT-2's token embedding and output projection)."""

    name: str
    """Its canonical name (the first ``named_parameters`` gives)."""
    bytes: int
    """Its size at the training dtype."""
    blocks: tuple[int, ...]
    """The blocks that use it, ascending; the profile counts it in the first."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "blocks", tuple(sorted(self.blocks)))

    def copied_in(self, first: int, end: int) -> bool:
        """Whether a pipeline stage of blocks ``[first, end)`` holds a copy of it: a later user
        without the first."""
        return self.blocks[0] < first and any(first <= k < end for k in self.blocks)

    def split_at(self, first: int, end: int) -> bool:
        """Whether a stage of blocks ``[first, end)`` holds some of its users but not all, so sums
        its gradient with the stages that hold the others."""
        inside = [first <= k < end for k in self.blocks]
        return any(inside) and not all(inside)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "bytes": self.bytes, "blocks": list(self.blocks)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Tie:
        return cls(data["name"], int(data["bytes"]), tuple(data["blocks"]))


@dataclass(frozen=True, kw_only=True)
class WorkloadProfile:
    """One training iteration of a model, layer by layer, as counted by :func:`profile_model`."""

    model: str
    """The model as the user named it (torchvision name, preset, or ``module:factory``)."""
    batch_size: int
    """Samples per iteration on one device."""
    dtype: str
    """Training dtype, one of :data:`DTYPES`."""
    input_shape: tuple[int, ...]
    """Shape of one sample (``C,H,W`` for images, ``(seq_len,)`` for token models)."""
    layers: tuple[LayerStats, ...]
    """Rows in execution order; they cover the whole iteration exactly."""
    granularity: str = "blocks"
    """How the iteration was cut into rows, one of :data:`GRANULARITIES`."""
    device: str = "meta"
    """Where the counting ran: ``meta`` (no memory, no kernels), ``cpu`` or ``cuda``."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """Assumptions that apply to this profile (e.g. operators counted by the default rule)."""
    ties: tuple[Tie, ...] = ()
    """Parameters several blocks use (``blocks`` granularity; each counted once, in the first):
    a pipeline stage holding a later user without the first keeps a copy."""

    def __post_init__(self) -> None:
        if self.batch_size <= 0:
            raise UsageError(f"batch_size must be positive, got {self.batch_size}")
        if self.dtype not in DTYPES:
            raise UsageError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.granularity not in GRANULARITIES:
            raise UsageError(
                f"granularity must be one of {', '.join(GRANULARITIES)}, got {self.granularity!r}"
            )
        object.__setattr__(self, "input_shape", tuple(self.input_shape))
        object.__setattr__(self, "layers", tuple(self.layers))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "ties", tuple(self.ties))

    @property
    def totals(self) -> dict[str, int]:
        """Every numeric layer field summed over the rows."""
        return {key: sum(getattr(layer, key) for layer in self.layers) for key in NUMERIC_KEYS}

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "batch_size": self.batch_size,
            "dtype": self.dtype,
            "input_shape": list(self.input_shape),
            "granularity": self.granularity,
            "device": self.device,
            "layers": [layer.to_dict() for layer in self.layers],
            "totals": self.totals,
            "notes": list(self.notes),
            "ties": [t.to_dict() for t in self.ties],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkloadProfile:
        missing = {"model", "batch_size", "dtype", "input_shape", "layers"} - data.keys()
        if missing:
            raise UsageError(f"workload profile lacks {sorted(missing)}")
        return cls(
            model=data["model"],
            batch_size=data["batch_size"],
            dtype=data["dtype"],
            input_shape=tuple(data["input_shape"]),
            layers=tuple(LayerStats.from_dict(layer) for layer in data["layers"]),
            granularity=data.get("granularity", "blocks"),
            device=data.get("device", "meta"),
            notes=tuple(data.get("notes", ())),
            ties=tuple(Tie.from_dict(t) for t in data.get("ties", ())),
        )

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> WorkloadProfile:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"workload profile is not valid JSON: {exc}") from None
        return cls.from_dict(data)

    def to_csv(self) -> str:
        """One header row, one row per layer, then a ``total`` row."""
        out = io.StringIO()
        writer = csv.writer(out)  # RFC 4180: CRLF rows, fields with line breaks quoted
        writer.writerow(["name", "kind", *NUMERIC_KEYS])
        for layer in self.layers:
            writer.writerow([layer.name, layer.kind, *(getattr(layer, k) for k in NUMERIC_KEYS)])
        totals = self.totals
        writer.writerow(["total", "", *(totals[k] for k in NUMERIC_KEYS)])
        return out.getvalue()
