"""Human-readable numbers: FLOPs and counts in SI prefixes, bytes in binary (IEC) prefixes."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["IEC", "SI", "column_scale", "format_bytes", "format_count", "format_flops"]

SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
IEC = ((2**50, "Pi"), (2**40, "Ti"), (2**30, "Gi"), (2**20, "Mi"), (2**10, "Ki"), (1, ""))


def _pick(value: float, prefixes: tuple[tuple[float, str], ...]) -> tuple[float, str]:
    for scale, prefix in prefixes:
        if abs(value) >= scale:
            return scale, prefix
    return prefixes[-1]


def format_count(value: float) -> str:
    """``25557032`` -> ``25.6M``."""
    scale, prefix = _pick(value, SI)
    return f"{value / scale:.3g}{prefix}"


def format_flops(value: float) -> str:
    """``4.1e9`` -> ``4.1 GFLOP``."""
    scale, prefix = _pick(value, SI)
    return f"{value / scale:.3g} {prefix}FLOP"


def format_bytes(value: float) -> str:
    """``102760448`` -> ``98 MiB``."""
    scale, prefix = _pick(value, IEC)
    scaled = value / scale
    return f"{scaled:.0f} {prefix}B" if scaled >= 1000 else f"{scaled:.3g} {prefix}B"


def column_scale(values: Iterable[float], binary: bool) -> tuple[float, str]:
    """One scale for a whole table column, chosen by its largest value: ``(divisor, prefix)``."""
    return _pick(max(values, default=0), IEC if binary else SI)
