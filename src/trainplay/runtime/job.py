"""The training job: what ``trainplay train`` and ``python -m trainplay.runtime.worker`` take.

The job's flags are the same in both places, so the launcher hands its workers exactly what the
user typed (:meth:`TrainJob.to_argv`) and a cluster can run the worker under plain torchrun with
the same words. Launcher-only flags (nodes, rendezvous, restarts) live in ``cli/train.py``.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from trainplay.cli import positive_int
from trainplay.errors import UsageError

__all__ = ["DTYPES", "OPTIMIZERS", "TrainJob", "add_job_arguments", "parse_shape", "parse_steps"]

OPTIMIZERS = ("sgd", "adam")
"""The optimizers the planner prices (plan/memory.py's state factors) and the runtime restores."""
DTYPES = ("fp32", "bf16", "fp16")
"""Training precisions (:mod:`trainplay.runtime.precision`)."""


def parse_shape(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        shape = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise UsageError(f"--input-shape takes integers like 3,32,32, got {text!r}") from None
    if not shape or min(shape) < 1:
        raise UsageError(f"--input-shape needs positive sizes, got {text!r}")
    return shape


def parse_steps(text: str | None) -> tuple[int, int] | None:
    """``A:B`` (steps ``A`` to ``B - 1``, counted from 0) for ``--profile-steps``."""
    if text is None:
        return None
    first, colon, end = text.partition(":")
    try:
        steps = (int(first), int(end))
    except ValueError:
        steps = None
    if not colon or steps is None or steps[0] < 0 or steps[1] <= steps[0]:
        raise UsageError(
            f"--profile-steps takes A:B with 0 <= A < B (steps A to B-1), got {text!r}; "
            "e.g. --profile-steps 10:15"
        )
    return steps


def _number(text: str, *, zero: bool) -> float:
    """A finite float, ``> 0`` (or ``>= 0`` with ``zero``), for argparse."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise argparse.ArgumentTypeError(
            f"expected a finite number {'>=' if zero else '>'} 0, got {text}"
        )
    return value


def _seed(text: str) -> int:
    """A seed torch takes: a whole number from 0 to 2^63 - 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"expected a seed from 0 to 2^63 - 1, got {text}")
    return value


def _non_negative_float(text: str) -> float:
    return _number(text, zero=True)


def _positive_float(text: str) -> float:
    return _number(text, zero=False)


@dataclass(frozen=True, kw_only=True)
class TrainJob:
    model: str
    data: str = "synthetic"
    input_shape: tuple[int, ...] | None = None
    seq_len: int | None = None
    """Tokens per sample of a language model (a preset defaults to its context length)."""
    dtype: str = "fp32"
    """``fp32``, or ``bf16``/``fp16``: autocast over fp32 master weights (fp16 scales the loss)."""
    dataset_size: int | None = None
    classes: int | None = None
    global_batch: int
    steps: int | None = None
    epochs: int | None = None
    optimizer: str = "sgd"
    lr: float = 0.01
    momentum: float = 0.9
    seed: int = 0
    checkpoint_dir: Path | None = None
    checkpoint_every: int = 100
    checkpoint_async: bool = False
    """Write checkpoints with ``torch.distributed.checkpoint.async_save`` (:mod:`.saving`)."""
    journal: Path | None = None
    cluster: str = "local"
    microbatches: int | None = None
    plan: Path | None = None
    collective_timeout_s: float = 60.0
    profile_steps: tuple[int, int] | None = None
    """Steps ``[A, B)`` to trace with the PyTorch profiler, one trace per rank."""
    profile_dir: Path | None = None
    """Where the traces go (default: ``<journal>.traces/``, else ``<checkpoint-dir>/traces``)."""
    calibration: bool = True
    """Learn the devices' speeds from the run and re-plan when that pays
    (:mod:`trainplay.runtime.calibration`); off: price them as ``--cluster`` says."""
    progress: bool = True

    def __post_init__(self) -> None:
        if self.steps is not None and self.epochs is not None:
            raise UsageError("give --steps or --epochs, not both")
        if self.dtype not in DTYPES:
            raise UsageError(f"--dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.optimizer not in OPTIMIZERS:
            raise UsageError(
                f"--optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.optimizer!r}"
            )
        if self.microbatches is not None and self.global_batch % self.microbatches:
            raise UsageError(
                f"--microbatches {self.microbatches} must divide --global-batch "
                f"{self.global_batch} (micro-batches have one size); pick a divisor"
            )
        if self.profile_steps is not None and self.traces_dir is None:
            raise UsageError(
                "--profile-steps needs a place for its traces: give --profile-dir DIR "
                "(or --journal, whose traces go to <journal>.traces/)"
            )

    @property
    def traces_dir(self) -> Path | None:
        """The folder of the ``--profile-steps`` traces."""
        if self.profile_dir is not None:
            return self.profile_dir
        if self.journal is not None:
            return self.journal.with_name(self.journal.name + ".traces")
        return None if self.checkpoint_dir is None else self.checkpoint_dir / "traces"

    def to_argv(self) -> list[str]:
        """The worker's command line for this job."""
        out = [self.model]
        for f in fields(self):
            value = getattr(self, f.name)
            flag = "--" + f.name.replace("_", "-").removesuffix("-s")
            if f.name == "model" or value is None:
                continue
            if f.name == "progress":
                out += [] if value else ["--no-progress"]
            elif f.name == "calibration":
                out += [] if value else ["--no-calibration"]
            elif f.name == "checkpoint_async":
                out += [flag] if value else []
            elif f.name == "input_shape":
                out += [flag, ",".join(str(x) for x in value)]
            elif f.name == "profile_steps":
                out += [flag, f"{value[0]}:{value[1]}"]
            else:
                out += [flag, str(value)]
        return out

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> TrainJob:
        values: dict[str, Any] = {
            f.name: getattr(args, f.name)
            for f in fields(cls)
            if f.name not in ("progress", "calibration")
        }
        values["calibration"] = not args.no_calibration
        values["input_shape"] = parse_shape(args.input_shape)
        values["profile_steps"] = parse_steps(args.profile_steps)
        values["progress"] = not args.no_progress
        return cls(**values)


def add_job_arguments(parser: argparse.ArgumentParser) -> None:
    """The job's flags, shared by ``trainplay train`` and the worker."""
    parser.add_argument("model", help="model name (`trainplay models`) or pkg.module:factory")
    parser.add_argument(
        "--data",
        default="synthetic",
        help="synthetic, digits, imagefolder:PATH, pkg.module:factory; for language models "
        "tokens:PATH[:u32] or text:PATH (default synthetic)",
    )
    parser.add_argument("--input-shape", metavar="C,H,W", help="shape of one sample")
    parser.add_argument(
        "--seq-len", type=positive_int, metavar="L", help="tokens per sample (language models)"
    )
    parser.add_argument(
        "--dtype",
        choices=DTYPES,
        default="fp32",
        help="fp32 (default), or bf16/fp16 autocast over fp32 master weights",
    )
    parser.add_argument("--dataset-size", type=positive_int, help="samples to use (default: all)")
    parser.add_argument("--classes", type=positive_int, help="classes of synthetic data (10)")
    parser.add_argument("--global-batch", type=positive_int, required=True, metavar="B")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--steps", type=positive_int, metavar="N", help="optimizer steps")
    length.add_argument("--epochs", type=positive_int, metavar="E", help="epochs (default 1)")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default="sgd")
    parser.add_argument("--lr", type=_positive_float, default=0.01)
    parser.add_argument("--momentum", type=_non_negative_float, default=0.9, help="for sgd")
    parser.add_argument("--seed", type=_seed, default=0, help="weights and sample order")
    parser.add_argument("--checkpoint-dir", type=Path, help="shared by all nodes")
    parser.add_argument("--checkpoint-every", type=positive_int, default=100, metavar="K")
    parser.add_argument(
        "--checkpoint-async",
        action="store_true",
        help="write checkpoints while the next steps train (DCP async_save)",
    )
    parser.add_argument("--journal", type=Path, help="JSON lines of the run's events")
    parser.add_argument(
        "--cluster", default="local", help="cluster YAML, a preset (`trainplay hw list`), or local"
    )
    parser.add_argument("--microbatches", type=positive_int, help="fix the micro-batch count")
    parser.add_argument("--plan", type=Path, help="run this plan (`trainplay plan --out`)")
    parser.add_argument(
        "--collective-timeout",
        dest="collective_timeout_s",
        type=_positive_float,
        default=60.0,
        metavar="S",
        help="seconds a collective may hang before the worker gives up (60)",
    )
    parser.add_argument(
        "--profile-steps",
        metavar="A:B",
        help="trace steps A to B-1 with the PyTorch profiler, one trace per rank, for "
        "`trainplay diagnose` and Holistic Trace Analysis",
    )
    parser.add_argument(
        "--profile-dir", type=Path, metavar="DIR", help="folder of the traces (<journal>.traces)"
    )
    parser.add_argument(
        "--no-calibration",
        action="store_true",
        help="price the devices as --cluster says: no learning from measured step times, no "
        "re-plan for them",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
