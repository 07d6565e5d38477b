"""The table both runtime benchmarks write: ``trainplay train`` against a hand-written script,
run by run, alternated, and the medians."""

from __future__ import annotations

import statistics


def pace_table(rows: dict[str, list[float]], unit: str, digits: int) -> list[str]:
    """Markdown lines of the runs in ``rows`` (``trainplay`` and ``handwritten``) in ``unit``."""
    lines = [
        f"| run | trainplay train ({unit}) | hand-written pipelining ({unit}) |",
        "|---|---|---|",
    ]
    for k, (a, b) in enumerate(zip(rows["trainplay"], rows["handwritten"], strict=True)):
        lines.append(f"| {k} | {a:.{digits}f} | {b:.{digits}f} |")
    tp, hand = statistics.median(rows["trainplay"]), statistics.median(rows["handwritten"])
    lines.append(f"| **median** | **{tp:.{digits}f}** | **{hand:.{digits}f}** |")
    return lines
