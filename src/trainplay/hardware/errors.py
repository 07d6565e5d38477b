"""The hardware level's error: a wrong value in a cluster description, named by its field path."""

from __future__ import annotations

from collections.abc import Sequence

from trainplay.errors import UsageError

__all__ = ["SpecError", "format_path"]


class SpecError(UsageError):
    """A value of a cluster description is wrong; ``path`` says which (``nodes[1].devices[0].count``)."""

    def __init__(self, path: Sequence[str | int], message: str):
        self.path = tuple(path)
        self.reason = message
        super().__init__(f"{format_path(self.path)}: {message}" if self.path else message)


def format_path(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
