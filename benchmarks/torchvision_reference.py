"""Every torchvision classifier, every published weight: our counts against torchvision's metadata.

For each weights entry torchvision publishes ``_ops`` (GMACs of one forward at the weights' crop
size) and ``num_params``. trainplay profiles the model at that size on ``meta`` and compares
``fwd_gemm_flops / 2`` per sample (convolutions and matrix multiplies, the published convention)
and its parameter count. Acceptance: within 3% and exactly equal.

Run: ``python benchmarks/torchvision_reference.py``. Writes ``benchmarks/results/torchvision_reference.md``
and ``.json``; exits 1 if any model misses.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torchvision
from rich.console import Console
from rich.progress import track

from trainplay.errors import TrainplayError
from trainplay.workload import profile
from trainplay.workload.zoo import torchvision_models

RESULTS = Path(__file__).parent / "results"
TOLERANCE = 0.03
BATCH = 2  # Inception v3 trains its auxiliary head on a 1x1 map, which needs 2+ samples


def _entries() -> list[tuple[str, str, float, int, int]]:
    """(model, weights, GMACs, num_params, crop) for every distinct (model, crop, params) published."""
    entries, seen = [], set()
    for name in torchvision_models():
        for weights in torchvision.models.get_model_weights(name):
            crop = int(weights.transforms().crop_size[0])
            key = (name, crop, weights.meta["num_params"])
            if key not in seen:
                seen.add(key)
                entries.append(
                    (
                        name,
                        weights.name,
                        float(weights.meta["_ops"]),
                        int(weights.meta["num_params"]),
                        crop,
                    )
                )
    return entries


def main() -> int:
    rows, started = [], time.perf_counter()
    for name, weights, gmacs, num_params, crop in track(
        _entries(), description="profiling", transient=True
    ):
        t0 = time.perf_counter()
        try:
            result = profile(name, batch_size=BATCH, input_shape=(3, crop, crop))
        except TrainplayError as exc:
            rows.append({"model": name, "weights": weights, "error": str(exc)})
            continue
        ours = result.totals["fwd_gemm_flops"] / 2 / BATCH / 1e9
        rows.append(
            {
                "model": name,
                "weights": weights,
                "crop": crop,
                "gmacs_torchvision": gmacs,
                "gmacs_trainplay": round(ours, 4),
                "error_pct": round(100 * (ours - gmacs) / gmacs, 3),
                "params_torchvision": num_params,
                "params_trainplay": result.totals["params"],
                "seconds": round(time.perf_counter() - t0, 2),
            }
        )
    failures = [
        r
        for r in rows
        if "error" in r
        or abs(r["error_pct"]) > 100 * TOLERANCE
        or r["params_trainplay"] != r["params_torchvision"]
    ]
    ok = [r for r in rows if "error" not in r]
    worst = max(ok, key=lambda r: abs(r["error_pct"]))
    lines = [
        "# trainplay against torchvision's published GMACs and parameter counts",
        "",
        f"Command: `python benchmarks/torchvision_reference.py` ({len(rows)} weights entries of "
        f"{len({r['model'] for r in rows})} models, batch {BATCH}, meta device, "
        f"{time.perf_counter() - started:.0f} s in all).",
        f"Within {100 * TOLERANCE:.0f}% GMACs and exact parameters: {len(rows) - len(failures)} of {len(rows)}. "
        f"Largest GMACs difference: {worst['error_pct']:+.2f}% ({worst['model']}). "
        f"Mean absolute difference: {sum(abs(r['error_pct']) for r in ok) / len(ok):.3f}%.",
        "",
        "| model | weights | crop | GMACs torchvision | GMACs trainplay | diff % | params torchvision | params trainplay |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['weights']} | | | | | | error: {r['error']} |")
        else:
            lines.append(
                f"| {r['model']} | {r['weights']} | {r['crop']} | {r['gmacs_torchvision']:.3f} | "
                f"{r['gmacs_trainplay']:.3f} | {r['error_pct']:+.2f} | {r['params_torchvision']} | {r['params_trainplay']} |"
            )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "torchvision_reference.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "torchvision_reference.json").write_text(json.dumps(rows, indent=2) + "\n")
    console = Console()
    console.print("\n".join(lines[2:4]))
    for r in failures:
        console.print(f"[red]miss[/red] {r}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
