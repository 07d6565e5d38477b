"""How results are shown: terminal tables, number formats (plots and HTML join with analysis).

``profile_table`` loads on first use, so the number formats import without torch.
"""

from __future__ import annotations

from typing import Any

from trainplay.report.units import format_bytes, format_count, format_flops

__all__ = ["format_bytes", "format_count", "format_flops", "profile_table"]


def __getattr__(name: str) -> Any:
    if name == "profile_table":  # the function, not its module of the same name
        from trainplay.report.profile_table import profile_table

        globals()[name] = profile_table
        return profile_table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
