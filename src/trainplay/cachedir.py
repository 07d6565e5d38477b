"""Where trainplay keeps what it measured and counted: ``$TRAINPLAY_CACHE_DIR``, else
``$XDG_CACHE_HOME/trainplay``, else ``~/.cache/trainplay``."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    base = os.environ.get("TRAINPLAY_CACHE_DIR")
    if base is None:
        base = str(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "trainplay")
    return Path(base)
