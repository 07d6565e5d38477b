"""Where trainplay keeps what it measured and counted: ``$TRAINPLAY_CACHE_DIR``, else
``$XDG_CACHE_HOME/trainplay``, else ``~/.cache/trainplay``."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "write_whole"]


def cache_dir() -> Path:
    base = os.environ.get("TRAINPLAY_CACHE_DIR")
    if base is None:
        base = str(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "trainplay")
    return Path(base)


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (its folder made if missing) through a file of this process's
    own beside it, renamed over it: a reader, or another process writing the same cache file,
    never sees half of it. Raises ``OSError`` where the folder cannot be written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)
