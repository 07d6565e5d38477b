"""APF (bf16, fp32) and APM of a CUDA device against its catalog entry: one short command.

Run on a GPU machine: ``python benchmarks/gpu_peaks.py`` (about a minute). Prints the table and
writes ``benchmarks/results/gpu_peaks_<device>.md`` and ``.json``. The catalog's numbers are
dense datasheet peaks; the ratio is the share of them this device achieves here.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

from trainplay.hardware import catalog
from trainplay.hardware.measure.kernels import measure_apf, measure_apm
from trainplay.hardware.spec import SpecError

RESULTS = Path(__file__).parent / "results"
SIZES = [1024, 2048, 4096, 8192]


def main() -> int:
    if not torch.cuda.is_available():
        print("gpu_peaks: no CUDA device visible; run this on a GPU machine", file=sys.stderr)
        return 2
    device = torch.device("cuda", 0)
    name = torch.cuda.get_device_name(device)
    try:
        entry = catalog.device(name.replace("NVIDIA ", "").split()[0])
    except SpecError:
        entry = None
    started = time.perf_counter()
    figures = {dtype: measure_apf(device, dtype, SIZES, budget_s=20) for dtype in ("bf16", "fp32")}
    apm = measure_apm(device, 1024 * 2**20, budget_s=10)
    rows = []
    for dtype, result in figures.items():
        listed = entry.peak_flops.get(dtype) if entry else None
        rows.append(
            {
                "figure": f"APF {dtype}",
                "measured": result.flops,
                "catalog": listed,
                "unit": "TFLOP/s",
                "scale": 1e12,
                "cv": result.cv,
                "detail": f"best n={result.best_size}",
            }
        )
    rows.append(
        {
            "figure": "APM",
            "measured": apm.bps,
            "catalog": entry.mem_bw_bps if entry else None,
            "unit": "GB/s",
            "scale": 1e9,
            "cv": apm.cv,
            "detail": f"copy {apm.copy_bps / 1e9:.0f}, triad {apm.triad_bps / 1e9:.0f} GB/s",
        }
    )
    lines = [
        f"# {name}: achievable peaks against the catalog",
        "",
        f"Command: `python benchmarks/gpu_peaks.py` ({time.perf_counter() - started:.0f} s, torch {torch.__version__}, "
        f"catalog entry: {entry.name if entry else 'none'}).",
        "",
        "| figure | measured | catalog (dense datasheet) | measured / catalog | spread | detail |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        listed = "-" if r["catalog"] is None else f"{r['catalog'] / r['scale']:.1f} {r['unit']}"
        ratio = "-" if r["catalog"] is None else f"{r['measured'] / r['catalog']:.2f}"
        lines.append(
            f"| {r['figure']} | {r['measured'] / r['scale']:.1f} {r['unit']} | {listed} | {ratio} "
            f"| ±{100 * r['cv']:.1f}% | {r['detail']} |"
        )
    print("\n".join(lines))
    RESULTS.mkdir(exist_ok=True)
    stem = "gpu_peaks_" + name.replace("NVIDIA ", "").replace(" ", "-")
    (RESULTS / f"{stem}.md").write_text("\n".join(lines) + "\n")
    (RESULTS / f"{stem}.json").write_text(
        json.dumps({"device": name, "rows": rows}, indent=2) + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
