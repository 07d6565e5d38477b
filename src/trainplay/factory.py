"""``package.module:function`` specs, the way users hand trainplay their own models and data."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from trainplay.errors import TrainplayError, UsageError

__all__ = ["first_line", "import_factory"]


def first_line(exc: BaseException) -> str:
    """An exception's first line of text (its type's name when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def import_factory(
    spec: str, *, what: str, error: type[TrainplayError] = UsageError
) -> Callable[[], Any]:
    """The function ``spec`` names, imported with the current directory on the path (as
    ``python -m`` would, so a local file is found); ``what`` says what it makes ("model",
    "data set") in the one-line errors."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise error(f"a {what} factory is given as pkg.mod:factory, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # the user's module: any error in it is theirs to see
        raise error(
            f"cannot import module {module_name!r} for {what} {spec!r}: {type(exc).__name__}: "
            f"{first_line(exc)}"
        ) from None
    if not hasattr(module, attr):
        raise error(f"module {module_name!r} has no attribute {attr!r}; check the name after ':'")
    factory = getattr(module, attr)
    if not callable(factory):
        raise error(
            f"{spec!r} is a {type(factory).__name__}, not a function; name a function that "
            f"returns the {what}"
        )
    return factory
