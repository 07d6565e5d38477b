"""Checkpoints that survive a crash at any moment and load into any plan.

- **Format.** A checkpoint is a folder ``step-<8 digits>`` (the steps completed) holding the files
  of ``torch.distributed.checkpoint`` (DCP) and ``trainplay.json`` (:class:`CheckpointInfo`). Its
  keys are ``model.<fqn>`` for a parameter and ``optim.<fqn>.<state>`` for an optimizer state
  (``momentum_buffer``; ``step``, ``exp_avg``, ``exp_avg_sq``), ``fqn`` being the parameter's name
  in the whole model. Values are whole tensors, nothing else, so restoring under another plan
  (other stage boundaries, replica count or world size) is each rank asking for the keys of its
  new stage. Replicas of a stage save the same keys; DCP writes each once.
- **Atomic.** :func:`save` is collective over a process group (all ranks, or those with state);
  the group's rank 0 leads. The leader first removes what a crashed save left; then every rank
  writes into ``step-N.partial`` with DCP, whose coordinator (the leader) writes ``.metadata``
  last; then the leader writes ``trainplay.json`` into it, renames it to ``step-N``
  and seals it with its manifest (:mod:`trainplay.runtime.manifest`: size and SHA-256 of every
  file, written last), renames it to ``step-N`` (``os.rename`` is atomic on one file system) and
  keeps the newest :data:`KEEP` checkpoints, while a barrier holds every rank until then. A crash
  at any moment leaves the previous checkpoint complete.
- **Verified before trusted.** :func:`scan` (and :func:`latest`) take the newest checkpoint whose
  manifest matches every file, whose ``trainplay.json`` parses and whose ``.metadata`` passes the
  check below; damaged newer ones (a truncated shard, garbage in ``.metadata``, no manifest) are
  returned with the reason, for the caller to report in one line, and skipped. The directory must be one
  file system that every rank sees.
- **Safe to load.** DCP's reader unpickles ``.metadata`` with plain ``pickle``, which runs
  whatever a crafted file names. Here it is read by an unpickler that builds only the classes DCP
  metadata of tensors is made of (:data:`ALLOWED`) and refuses anything else; tensor data is read
  with ``torch.load(weights_only=True)``, and no bytes items (unpickled by DCP's planner) exist.
- **Optimizer state** is flattened to tensors so that a fresh optimizer given it with
  :func:`apply_optimizer_state` takes the next step exactly as the uninterrupted one would.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import warnings
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.filesystem import FileSystemReader, FileSystemWriter, _StorageInfo
from torch.distributed.checkpoint.metadata import Metadata, StorageMeta, TensorStorageMetadata

from trainplay.errors import UsageError
from trainplay.runtime import manifest

__all__ = [
    "ALLOWED",
    "KEEP",
    "MODEL_PREFIX",
    "OPTIM_PREFIX",
    "CheckpointInfo",
    "CheckpointWriteError",
    "Damaged",
    "Scan",
    "apply_optimizer_state",
    "begin",
    "check_matches",
    "end_async",
    "finish",
    "latest",
    "load",
    "model_state",
    "optimizer_state",
    "optimizer_template",
    "save",
    "save_async",
    "scan",
    "step_path",
]

KEEP = 2
"""Complete checkpoints kept; older ones are deleted after each save."""
MODEL_PREFIX = "model."
OPTIM_PREFIX = "optim."
INFO_FILE = "trainplay.json"
OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}

_META = "torch.distributed.checkpoint.metadata"
ALLOWED = frozenset(
    {(_META, name) for name in ("Metadata", "TensorStorageMetadata", "ChunkStorageMetadata")}
    | {(_META, name) for name in ("TensorProperties", "_MEM_FORMAT_ENCODING")}
    | {(_META, "MetadataIndex"), (_META, "StorageMeta")}
    | {("torch.distributed.checkpoint.filesystem", "_StorageInfo")}
    | {("torch", "Size"), ("torch.serialization", "_get_layout")}
)
"""What a trainplay ``.metadata`` may name (found with ``pickletools`` on torch 2.14's), besides
``torch.<dtype>``. Not ``BytesStorageMetadata``: trainplay saves tensors only, and DCP unpickles
bytes items with ``weights_only=False``. Not ``pathlib``: :func:`save` writes the id as a str."""

_COMPLETE = re.compile(r"step-(\d{8,})")
_LEFTOVER = re.compile(r"step-\d{8,}\.(partial|replaced)")
_DATA_FILE = re.compile(r"__\d+_\d+\.distcp")


@dataclass(frozen=True, kw_only=True)
class CheckpointInfo:
    """What a checkpoint is of, written as ``trainplay.json`` next to its DCP files."""

    model: str
    """The model name or spec as given."""
    block_names: tuple[str, ...]
    """The model's blocks, to tell its checkpoints from another model's."""
    step: int
    """Steps completed: the next step to train."""
    samples_seen: int
    """Position in the job's sample order: ``step * global_batch``."""
    global_batch: int
    seed: int
    optimizer: str
    """``sgd``, ``adam`` or ``adamw``."""
    plan_id: str
    """The plan that wrote the checkpoint."""
    devices: tuple[str, ...]
    """Device ids of that plan."""
    world_size: int
    written_at_s: float
    """Unix time."""

    def __post_init__(self) -> None:
        if self.global_batch < 1:
            raise UsageError(f"global_batch must be a positive integer, got {self.global_batch}")
        if self.step < 0:
            raise UsageError(f"step must be >= 0, got {self.step}")
        if self.samples_seen != self.step * self.global_batch:
            raise UsageError(
                f"samples_seen {self.samples_seen} is not step {self.step} x global_batch "
                f"{self.global_batch}"
            )
        if self.optimizer not in OPTIMIZERS:
            raise UsageError(
                f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.optimizer!r}"
            )
        if self.world_size < 1:
            raise UsageError(f"world_size must be a positive integer, got {self.world_size}")

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Any) -> CheckpointInfo:
        if not isinstance(data, dict):
            raise UsageError(f"expected a JSON object, got {type(data).__name__}")
        values = {}
        for f in fields(cls):
            if f.name not in data:
                raise UsageError(f"it has no {f.name!r}")
            values[f.name] = _typed(f.name, str(f.type), data[f.name])
        return cls(**values)


def _typed(name: str, type_name: str, value: Any) -> Any:
    if type_name == "tuple[str, ...]":
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
    elif type_name == "float":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif isinstance(value, {"int": int, "str": str}[type_name]) and not isinstance(value, bool):
        return value
    raise UsageError(f"{name} must be {type_name}, got {value!r}")


def _distributed() -> bool:
    return dist.is_available() and dist.is_initialized()


@contextmanager
def _alone() -> Iterator[None]:
    """Without a process group DCP works in this process only, as meant; it warns that it does."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "torch.distributed is disabled", UserWarning)
        yield


class _NotOurs(UsageError):
    """A folder that is not a trainplay checkpoint; ``why`` says in a few words."""

    def __init__(self, where: Path, why: str):
        super().__init__(
            f"{where} is not a trainplay checkpoint: {why}; remove it or use another "
            "--checkpoint-dir"
        )
        self.why = why


def _not_ours(where: Path, why: str) -> _NotOurs:
    return _NotOurs(where, why)


class _MetadataUnpickler(pickle.Unpickler):
    def __init__(self, file: Any, where: Path):
        super().__init__(file)
        self.where = where

    def find_class(self, module: str, name: str) -> Any:
        # vars(), not getattr(): torch's module __getattr__ imports submodules on request
        dtype = module == "torch" and isinstance(vars(torch).get(name), torch.dtype)
        if dtype or (module, name) in ALLOWED:
            return super().find_class(module, name)
        raise _not_ours(self.where, f"its metadata names {module}.{name}")


class _Reader(FileSystemReader):
    """DCP's file reader, with ``.metadata`` read by :class:`_MetadataUnpickler` and checked."""

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        where = Path(self.path)
        try:
            with open(self._get_metadata_path(kwargs.get("rank")), "rb") as file:
                metadata = _MetadataUnpickler(file, where).load()
            _check(metadata, where)
        except UsageError:
            raise
        except FileNotFoundError:
            raise _not_ours(where, "it has no .metadata") from None
        except Exception as exc:  # whatever a damaged pickle raises
            raise _not_ours(where, f"its metadata is damaged ({type(exc).__name__})") from None
        metadata.storage_meta = metadata.storage_meta or StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata


def _check(metadata: Any, where: Path) -> None:
    if not isinstance(metadata, Metadata):
        raise _not_ours(where, f"its metadata is a {type(metadata).__name__}")
    for key, entry in metadata.state_dict_metadata.items():
        if not isinstance(entry, TensorStorageMetadata):
            raise _not_ours(where, f"{key!r} is not a tensor")
    for entry in metadata.storage_data.values():
        if not (
            isinstance(entry, _StorageInfo)
            and isinstance(entry.relative_path, str)
            and _DATA_FILE.fullmatch(entry.relative_path)
            and not entry.transform_descriptors
        ):
            raise _not_ours(where, f"its metadata points at {entry!r}")


class _Writer(FileSystemWriter):
    """DCP's file writer; the checkpoint id goes into ``.metadata`` as a str, not a ``Path``."""

    def storage_meta(self) -> StorageMeta | None:
        return StorageMeta(checkpoint_id=str(self.checkpoint_id), save_id=self.save_id)


def _complete(directory: Path) -> list[tuple[int, Path]]:
    found = []
    for entry in directory.iterdir():
        match = _COMPLETE.fullmatch(entry.name)
        if match and entry.is_dir():
            found.append((int(match[1]), entry))
    return sorted(found)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def step_path(directory: Path, step: int) -> Path:
    """The folder of the checkpoint of ``step`` steps completed."""
    return Path(directory) / f"step-{step:08d}"


def save(
    directory: Path,
    state: Mapping[str, torch.Tensor],
    info: CheckpointInfo,
    *,
    process_group: dist.ProcessGroup | None = None,
) -> Path:
    """Write ``state`` (this rank's part, possibly empty) as the checkpoint of ``info.step``; return
    its folder. Collective over ``process_group`` (default: all ranks) when ``torch.distributed``
    is initialized: each of its ranks calls it with the same ``info``, and its rank 0 finishes the
    checkpoint. A complete checkpoint of the same step is replaced."""
    partial, final = begin(directory, state, info.step, process_group)
    with _alone(), _writing(directory):
        dcp.save(
            dict(state),
            storage_writer=_Writer(partial),
            process_group=process_group,
            no_dist=not _distributed(),
        )
    finish(directory, info, process_group)
    if _distributed():
        dist.barrier(process_group)  # nobody goes on before the checkpoint is complete
    return final


def save_async(
    directory: Path,
    state: Mapping[str, torch.Tensor],
    info: CheckpointInfo,
    *,
    process_group: dist.ProcessGroup | None = None,
) -> Future:
    """Start :func:`save` with ``torch.distributed.checkpoint.async_save``: returns once ``state``
    is copied to memory (DCP's staging), the write goes on in a thread, and the checkpoint is
    complete only after :func:`end_async` of the returned future. The write's collectives run
    over ``process_group``: give it a gloo group of its own, not the one training uses."""
    partial, _ = begin(directory, state, info.step, process_group)
    if not _distributed():  # the write warns from its thread, outside _alone()
        warnings.filterwarnings("ignore", "torch.distributed is disabled", UserWarning)
    with _alone(), _writing(directory):
        return dcp.async_save(
            dict(state),
            storage_writer=_Writer(partial),
            process_group=process_group,
            no_dist=not _distributed(),
        )


def end_async(
    directory: Path,
    written: Future,
    info: CheckpointInfo,
    *,
    process_group: dist.ProcessGroup | None = None,
) -> Path:
    """Wait for a :func:`save_async` write and finish its checkpoint (the leader seals it); its
    folder. Not collective: each rank may call it when its write is done."""
    with _writing(Path(directory)):
        written.result()
    finish(directory, info, process_group)
    return step_path(Path(directory), info.step)


def begin(
    directory: Path,
    state: Mapping[str, torch.Tensor],
    step: int,
    process_group: dist.ProcessGroup | None = None,
) -> tuple[Path, Path]:
    """Before a checkpoint of ``step`` is written: the ``.partial`` folder it is written into and
    its final folder. Collective like :func:`save`; the leader clears what an interrupted save
    left, and nobody writes before it has."""
    for key, value in state.items():
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"a checkpoint holds tensors only; {key!r} is a {type(value).__name__}")
    directory = Path(directory)
    final = step_path(directory, step)
    if _leads(process_group):
        with _writing(directory):
            directory.mkdir(parents=True, exist_ok=True)
            for entry in directory.iterdir():
                if _LEFTOVER.fullmatch(entry.name):
                    shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    if _distributed():
        dist.barrier(process_group)  # nobody writes into step-N.partial before it is cleared
    return final.with_name(final.name + ".partial"), final


def finish(
    directory: Path, info: CheckpointInfo, process_group: dist.ProcessGroup | None = None
) -> None:
    """After every rank's part of ``info.step`` is written (DCP's save returned): the leader
    seals and renames it (:func:`_finish`); the others do nothing."""
    if _leads(process_group):
        final = step_path(Path(directory), info.step)
        with _writing(Path(directory)):
            _finish(Path(directory), final.with_name(final.name + ".partial"), final, info)


def _leads(process_group: dist.ProcessGroup | None) -> bool:
    return not _distributed() or dist.get_rank(process_group) == 0


class CheckpointWriteError(UsageError):
    """The checkpoint directory refused a write (read-only, full, gone): no retry will help."""


@contextmanager
def _writing(directory: Path) -> Iterator[None]:
    """An ``OSError`` of this rank's, or one DCP gathered from any rank (DCP raises them in a
    ``CheckpointException``, a ``BaseException``), as one line."""
    try:
        yield
    except OSError as exc:
        raise _write_error(directory, exc) from None
    except CheckpointException as exc:
        errors = [e for e, _ in exc.failures.values() if isinstance(e, OSError)]
        if not errors:
            raise
        raise _write_error(directory, errors[0]) from None


def _write_error(directory: Path, exc: OSError) -> CheckpointWriteError:
    where = f" ({exc.filename})" if exc.filename else ""
    return CheckpointWriteError(
        f"cannot write a checkpoint in --checkpoint-dir {directory}: {exc.strerror or exc}{where}; "
        "make it writable (permissions, free space) and run again to resume"
    )


def _finish(directory: Path, partial: Path, final: Path, info: CheckpointInfo) -> None:
    """The leader's part: the info file, the manifest, the rename, the old ones removed."""
    with open(partial / INFO_FILE, "w") as file:
        json.dump(info.to_dict(), file, indent=2)
        file.flush()
        os.fsync(file.fileno())
    manifest.seal(partial)
    replaced = final.with_name(final.name + ".replaced")
    if final.exists():
        os.rename(final, replaced)
    os.rename(partial, final)
    _fsync_dir(directory)
    shutil.rmtree(replaced, ignore_errors=True)
    for _, old in _complete(directory)[:-KEEP]:
        if old != final:
            shutil.rmtree(old)


@dataclass(frozen=True)
class Damaged:
    """A checkpoint folder that is not trusted, and why."""

    path: Path
    why: str

    def line(self) -> str:
        return f"checkpoint {self.path} is damaged: {self.why}"


@dataclass(frozen=True)
class Scan:
    """What :func:`scan` found: the newest intact checkpoint, and the damaged ones newer than it."""

    found: tuple[Path, CheckpointInfo] | None
    damaged: tuple[Damaged, ...] = ()


def _intact(step: int, path: Path) -> tuple[Path, CheckpointInfo] | Damaged:
    why = manifest.verify(path)
    if why is not None:
        return Damaged(path, why)
    try:
        info = CheckpointInfo.from_dict(json.loads((path / INFO_FILE).read_text()))
    except (OSError, ValueError) as exc:  # UsageError and JSON/Unicode errors are ValueErrors
        return Damaged(path, f"{INFO_FILE}: {exc}")
    if info.step != step:
        return Damaged(path, f"{INFO_FILE} says step {info.step}")
    try:
        _Reader(path).read_metadata()
    except _NotOurs as exc:
        return Damaged(path, exc.why)
    return path, info


def scan(directory: Path) -> Scan:
    """The newest checkpoint in ``directory`` that its manifest, ``trainplay.json`` and
    ``.metadata`` vouch for, and every damaged one newer than it (newest first). Raises
    :class:`UsageError` when checkpoints are there but none is intact: training afresh would
    throw the job away, so that is for the user to decide."""
    directory = Path(directory)
    if not directory.exists():
        return Scan(None)
    if not directory.is_dir():
        raise UsageError(f"--checkpoint-dir {directory} is a file; give a directory")
    damaged: list[Damaged] = []
    for step, path in reversed(_complete(directory)):
        result = _intact(step, path)
        if isinstance(result, Damaged):
            damaged.append(result)
            continue
        return Scan(result, tuple(damaged))
    if damaged:
        reasons = "; ".join(f"{d.path.name}: {d.why}" for d in damaged)
        raise UsageError(
            f"no intact checkpoint in {directory} ({reasons}); move them away to start the job "
            "afresh, or restore the folder"
        )
    return Scan(None)


def latest(directory: Path) -> tuple[Path, CheckpointInfo] | None:
    """The newest intact checkpoint in ``directory`` and its info (:func:`scan`); ``None`` if
    there is none."""
    return scan(directory).found


def load(
    path: Path,
    state: Mapping[str, torch.Tensor],
    *,
    process_group: dist.ProcessGroup | None = None,
) -> None:
    """Fill the tensors of ``state`` in place from the checkpoint at ``path``, only those keys.
    Collective over ``process_group`` (default: all ranks) when ``torch.distributed`` is
    initialized; each rank asks for its own keys."""
    path = Path(path)
    reader = _Reader(path)
    saved = reader.read_metadata().state_dict_metadata
    missing = [key for key in state if key not in saved]
    other = [key for key in state if key in saved and saved[key].size != state[key].shape]
    # a rank that cannot load still takes part in the collective load, with nothing to read
    wanted = {} if missing or other else dict(state)
    with _alone():
        dcp.load(
            wanted, storage_reader=reader, process_group=process_group, no_dist=not _distributed()
        )
    if missing:
        raise UsageError(
            f"checkpoint {path} has no {missing[0]!r} ({len(missing)} of the {len(state)} keys "
            "asked for are missing); it is of another model, use another --checkpoint-dir"
        )
    if other:
        key = other[0]
        raise UsageError(
            f"checkpoint {path} holds {key!r} of shape {list(saved[key].size)}, the model's is "
            f"{list(state[key].shape)}; it is of another model, use another --checkpoint-dir"
        )


def check_matches(
    info: CheckpointInfo,
    *,
    model: str,
    block_names: tuple[str, ...] | list[str],
    global_batch: int,
    seed: int,
    optimizer: str,
    directory: Path,
) -> None:
    """Raise :class:`UsageError` unless the checkpoint ``info`` is of this job."""
    if info.model != model or tuple(info.block_names) != tuple(block_names):
        raise UsageError(
            f"checkpoint directory {directory} holds a checkpoint of {info.model!r} "
            f"({len(info.block_names)} blocks, step {info.step}), not of {model!r} "
            f"({len(block_names)} blocks); use another --checkpoint-dir or the same model"
        )
    for name, saved, given in (
        ("global-batch", info.global_batch, global_batch),
        ("seed", info.seed, seed),
        ("optimizer", info.optimizer, optimizer),
    ):
        if saved != given:
            raise UsageError(
                f"checkpoint directory {directory} holds a job with --{name} {saved}, not "
                f"{given}; pass --{name} {saved} to resume it or use another --checkpoint-dir"
            )


def model_state(named_params: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``model.<fqn>`` -> the parameter itself, for :func:`save` and :func:`load` (in place)."""
    return {MODEL_PREFIX + fqn: p for fqn, p in named_params.items()}


def _state_names(kind: str, momentum: float) -> tuple[str, ...]:
    if kind == "sgd":
        return ("momentum_buffer",) if momentum else ()
    if kind in ("adam", "adamw"):
        return ("step", "exp_avg", "exp_avg_sq")
    raise UsageError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {kind!r}")


def _momentum(optimizer: torch.optim.Optimizer, kind: str) -> float:
    if not isinstance(optimizer, OPTIMIZERS[kind]):
        raise ValueError(f"the optimizer is a {type(optimizer).__name__}, not {kind}")
    if any(group.get("amsgrad") for group in optimizer.param_groups):
        raise ValueError("amsgrad's max_exp_avg_sq is not checkpointed")
    return optimizer.param_groups[0].get("momentum", 0.0) if kind == "sgd" else 0.0


def _zero(name: str, p: torch.Tensor) -> torch.Tensor:
    if name == "step":
        return torch.zeros((), dtype=torch.float32)
    return torch.zeros_like(p, memory_format=torch.contiguous_format)


def optimizer_template(
    kind: str, named_params: Mapping[str, nn.Parameter], momentum: float = 0.0
) -> dict[str, torch.Tensor]:
    """Zero tensors with the keys and shapes of :func:`optimizer_state`, for :func:`load` to fill
    before the optimizer has ever stepped. ``momentum`` matters for ``sgd`` only."""
    names = _state_names(kind, momentum)
    return {
        f"{OPTIM_PREFIX}{fqn}.{n}": _zero(n, p) for fqn, p in named_params.items() for n in names
    }


def optimizer_state(
    optimizer: torch.optim.Optimizer, named_params: Mapping[str, nn.Parameter], kind: str
) -> dict[str, torch.Tensor]:
    """``optim.<fqn>.<state>`` -> the optimizer's state of each parameter (zeros, and an Adam step
    of 0, for one it has not stepped yet). One ``momentum`` for all parameter groups."""
    names = _state_names(kind, _momentum(optimizer, kind))
    out = {}
    for fqn, p in named_params.items():
        state = optimizer.state.get(p, {})
        for n in names:
            value = state.get(n)
            out[f"{OPTIM_PREFIX}{fqn}.{n}"] = (
                value.detach() if isinstance(value, torch.Tensor) else _zero(n, p)
            )
    return out


def apply_optimizer_state(
    optimizer: torch.optim.Optimizer,
    named_params: Mapping[str, nn.Parameter],
    loaded: Mapping[str, torch.Tensor],
    kind: str,
) -> None:
    """Install the ``optim.`` tensors of ``loaded`` as the state of each parameter, so that the next
    ``optimizer.step()`` is the uninterrupted optimizer's. An Adam step of 0 (never stepped) leaves
    the state empty; a zero SGD momentum buffer is the same as none when dampening is 0."""
    names = _state_names(kind, _momentum(optimizer, kind))
    group_of = {p: group for group in optimizer.param_groups for p in group["params"]}
    for fqn, p in named_params.items():
        keys = {n: f"{OPTIM_PREFIX}{fqn}.{n}" for n in names}
        absent = [key for key in keys.values() if key not in loaded]
        if absent:
            raise ValueError(f"no {absent[0]!r} among the loaded tensors")
        values = {n: loaded[key].detach() for n, key in keys.items()}
        if not values or ("step" in values and float(values["step"]) == 0):
            continue
        group = group_of[p]
        on_param = group.get("capturable") or group.get("fused")
        optimizer.state[p] = {
            n: v.to(p.device if on_param else "cpu") if n == "step" else v.to(p.device, p.dtype)
            for n, v in values.items()
        }
