"""Profiles cached on disk, so a model is counted once per shape, dtype and code version; the
planner's parameter layout of a model (:func:`trainplay.workload.chain.cached_parameter_layout`)
is kept the same way, so a ``plan`` whose profiles are cached builds no model.

A profile on ``meta`` depends only on the model's code, the batch, the sample shape, the dtype,
how it is cut into rows and whether the loss is counted; the key is all of these with the torch,
torchvision and trainplay versions, a digest of trainplay's counting code (``workload/``), and for
a ``pkg.mod:factory`` model a digest of its module's source file. A change to any of them is a
new key. Files live in ``<cache dir>/profiles/`` (:func:`trainplay.cachedir.cache_dir`);
``TRAINPLAY_PROFILE_CACHE=0`` turns the cache off. A file that does not read back is ignored.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable
from contextlib import suppress
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import torch

from trainplay import __version__
from trainplay.cachedir import cache_dir, write_whole
from trainplay.errors import UsageError
from trainplay.workload.stats import WorkloadProfile

__all__ = ["cached", "cached_profile"]

T = TypeVar("T")


@cache
def _code_digest() -> str:
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for path in sorted(here.glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _module_digest(model: str) -> str:
    if ":" not in model:
        return ""
    try:
        spec = importlib.util.find_spec(model.partition(":")[0])
    except (ImportError, ValueError):
        return "?"
    origin = spec.origin if spec is not None else None
    try:
        return hashlib.sha256(Path(origin).read_bytes()).hexdigest()[:16] if origin else "?"
    except OSError:
        return "?"


def _versions() -> dict[str, str]:
    try:
        import importlib.metadata

        vision = importlib.metadata.version("torchvision")
    except Exception:
        vision = "?"
    return {"torch": torch.__version__, "torchvision": vision, "trainplay": __version__}


def cached_profile(key: dict[str, Any], make: Callable[[], WorkloadProfile]) -> WorkloadProfile:
    """The profile ``key`` describes, from the cache or ``make()`` (then stored)."""
    return cached(
        key,
        make,
        dump=lambda profile: profile.to_json(indent=None),
        load=WorkloadProfile.from_json,
    )


def cached(
    key: dict[str, Any],
    make: Callable[[], T],
    *,
    dump: Callable[[T], str],
    load: Callable[[str], T],
) -> T:
    """What ``key`` describes (with the versions and code digests of the module docstring), read
    back with ``load`` from the cache, or ``make()`` (then stored with ``dump``)."""
    if os.environ.get("TRAINPLAY_PROFILE_CACHE") == "0":
        return make()
    full = {
        **key,
        **_versions(),
        "code": _code_digest(),
        "module": _module_digest(str(key.get("model", ""))),
    }
    name = hashlib.sha256(json.dumps(full, sort_keys=True).encode()).hexdigest()[:32]
    path = cache_dir() / "profiles" / f"{name}.json"
    try:
        return load(path.read_text())
    except (OSError, UsageError, ValueError, TypeError, KeyError):
        pass
    value = make()
    with suppress(OSError):
        write_whole(path, dump(value))
    return value
