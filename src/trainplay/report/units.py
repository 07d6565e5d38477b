"""Human-readable numbers for tables and sentences: never scientific notation, one unit per column.

FLOPs and rates take SI prefixes, bytes binary (IEC) ones. A number keeps three significant
digits in fixed notation (``0.000012``, ``0.5``, ``186``); from 1,000 up it is a whole number
with thousands separators (``14,370``). A table column has one unit, chosen from its largest
value (:func:`column_scale`, :func:`time_scale`), and columns of one quantity share it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = [
    "IEC",
    "SI",
    "column_scale",
    "format_bytes",
    "format_count",
    "format_duration",
    "format_flops",
    "format_number",
    "format_rate",
    "plural",
    "time_scale",
]

SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
IEC = ((2**50, "Pi"), (2**40, "Ti"), (2**30, "Gi"), (2**20, "Mi"), (2**10, "Ki"), (1, ""))
TIMES = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"))


def _pick(value: float, prefixes: tuple[tuple[float, str], ...]) -> tuple[float, str]:
    for scale, prefix in prefixes:
        if abs(value) >= scale:
            return scale, prefix
    return prefixes[-1]


def format_number(value: float, digits: int = 3) -> str:
    """``1.2e-05`` -> ``0.000012``; ``0.4999`` -> ``0.5``; ``14370.2`` -> ``14,370``."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    if abs(value) >= 10 ** (digits - 1) or abs(round(value)) >= 1000:
        return f"{value:,.0f}"
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    text = f"{round(value, decimals):.{max(decimals, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_count(value: float) -> str:
    """``25557032`` -> ``25.6M``."""
    scale, prefix = _pick(value, SI)
    return f"{format_number(value / scale)}{prefix}"


def format_flops(value: float) -> str:
    """``4.1e9`` -> ``4.1 GFLOP``."""
    scale, prefix = _pick(value, SI)
    return f"{format_number(value / scale)} {prefix}FLOP"


def format_rate(value: float | None, unit: str) -> str:
    """``8.1e12, "FLOP/s"`` -> ``8.1 TFLOP/s``; ``3.2e11, "B/s"`` -> ``320 GB/s``; ``None`` -> ``–``
    (decimal prefixes, as datasheets give rates)."""
    if value is None:
        return "–"
    scale, prefix = _pick(value, SI)
    return f"{format_number(value / scale)} {prefix}{unit}"


def format_bytes(value: float) -> str:
    """``102760448`` -> ``98 MiB``."""
    scale, prefix = _pick(value, IEC)
    return f"{format_number(value / scale)} {prefix}B"


def format_duration(seconds: float) -> str:
    """``0.1864`` -> ``186 ms``; ``14.37`` -> ``14.4 s``; ``19302`` -> ``5.36 h``."""
    if abs(seconds) >= 3600:
        return f"{format_number(seconds / 3600)} h"
    if abs(seconds) >= 60:
        return f"{format_number(seconds / 60)} min"
    scale, unit = _pick(seconds, TIMES)
    return f"{format_number(seconds / scale)} {unit}"


def column_scale(values: Iterable[float], binary: bool) -> tuple[float, str]:
    """One scale for a whole table column, chosen by its largest value: ``(divisor, prefix)``."""
    return _pick(max(values, default=0), IEC if binary else SI)


def time_scale(seconds: Iterable[float]) -> tuple[float, str]:
    """One unit (s, ms or µs) for columns of durations, chosen by the largest: ``(divisor, unit)``."""
    return _pick(max(seconds, default=0), TIMES)


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 worker``, ``2 workers`` (``many`` for irregular plurals)."""
    return f"{count:,} {word if count == 1 else (many or word + 's')}"
