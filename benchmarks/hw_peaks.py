"""Achievable peaks of this machine, checked against independent measurements in the same run.

- ``trainplay hw measure`` (default and ``--quick``, one worker), timed as whole commands;
- NumPy's BLAS GEMM (float32, best of several sizes) and a NumPy array copy on arrays twice the
  last-level cache: independent of PyTorch, printed beside APF and APM with their ratio;
- ``trainplay hw measure --nproc 2`` (gloo through torchrun): APB and the alpha-beta fits' R².

Run: ``python benchmarks/hw_peaks.py``. Writes ``benchmarks/results/hw_peaks.md`` and ``.json``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from trainplay.hardware.machine import cpu_name, last_level_cache_bytes, usable_cpus

RESULTS = Path(__file__).parent / "results"
REPEATS = 3


def _measure(*flags: str) -> tuple[float, dict]:
    """Wall seconds of one `trainplay hw measure` command and its JSON."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "TRAINPLAY_CACHE_DIR": cache}
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "trainplay", "hw", "measure", "--format", "json", *flags],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
            env=env,
        )
        return time.perf_counter() - start, json.loads(done.stdout)


def _numpy_gemm_flops() -> float:
    """Best median FLOP/s of float32 matmul over sizes, NumPy's own BLAS."""
    best = 0.0
    for n in (512, 1024, 2048):
        a = np.random.default_rng(0).random((n, n), dtype=np.float32)
        b = a.copy()
        a @ b
        samples = []
        for _ in range(5):
            start, calls = time.perf_counter(), 0
            while time.perf_counter() - start < 0.2:
                a @ b
                calls += 1
            samples.append(2 * n**3 * calls / (time.perf_counter() - start))
        best = max(best, statistics.median(samples))
    return best


def _numpy_copy_bps() -> float:
    """Median bytes read + written per second of np.copyto on arrays twice the LLC (>= 256 MiB)."""
    nbytes = max(256 * 2**20, 2 * last_level_cache_bytes())
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    samples = []
    for _ in range(7):
        start = time.perf_counter()
        np.copyto(dst, src)
        samples.append(2 * src.nbytes / (time.perf_counter() - start))
    return statistics.median(samples)


def main() -> None:
    from rich.console import Console
    from rich.progress import track

    runs: dict[str, list[tuple[float, dict]]] = {}
    plan = [
        ("default", ()),
        ("quick", ("--quick",)),
        ("nproc2", ("--nproc", "2")),
        ("nproc2-quick", ("--nproc", "2", "--quick")),
    ]
    for label, flags in track(
        [p for p in plan for _ in range(REPEATS)], description="measuring", transient=True
    ):
        runs.setdefault(label, []).append(_measure(*flags))
    gemm, copy = _numpy_gemm_flops(), _numpy_copy_bps()

    def med(label: str, key: str, worker: int = 0) -> float:
        return statistics.median(r[1]["workers"][worker][key] for r in runs[label])

    def secs(label: str) -> list[float]:
        return [round(r[0], 2) for r in runs[label]]

    apf, apm = med("default", "apf"), med("default", "apm")
    rows = {
        "machine": f"{cpu_name()}, {usable_cpus()} CPUs, last-level cache {last_level_cache_bytes() / 2**20:.0f} MiB",
        "apf_flops": apf,
        "numpy_gemm_flops": gemm,
        "apf_ratio": apf / gemm,
        "apm_bps": apm,
        "numpy_copy_bps": copy,
        "apm_ratio": apm / copy,
        "apm_copy_bps": med("default", "apm_copy"),
        "apm_triad_bps": med("default", "apm_triad"),
        "seconds_default": secs("default"),
        "seconds_quick": secs("quick"),
        "seconds_nproc2": secs("nproc2"),
        "seconds_nproc2_quick": secs("nproc2-quick"),
        "nproc2": {
            label: [
                {
                    k: w[k]
                    for k in (
                        "rank",
                        "apf",
                        "apm",
                        "apb",
                        "alpha_s",
                        "beta_bps",
                        "r2",
                        "p2p_alpha_s",
                        "p2p_beta_bps",
                        "p2p_r2",
                        "spread",
                    )
                }
                for r in runs[label]
                for w in r[1]["workers"]
            ]
            for label in ("nproc2", "nproc2-quick")
        },
    }
    r2 = [w["r2"] for label in ("nproc2", "nproc2-quick") for w in rows["nproc2"][label]]
    p2p_r2 = [w["p2p_r2"] for label in ("nproc2", "nproc2-quick") for w in rows["nproc2"][label]]
    lines = [
        "# Achievable peaks of this machine",
        "",
        f"{rows['machine']}. Command: `python benchmarks/hw_peaks.py` (medians of {REPEATS} runs of each command).",
        "",
        "| figure | trainplay hw measure | independent (same run) | ratio |",
        "|---|---|---|---|",
        f"| APF fp32 | {apf / 1e9:.1f} GFLOP/s | NumPy BLAS sgemm {gemm / 1e9:.1f} GFLOP/s | {apf / gemm:.2f} |",
        f"| APM | {apm / 1e9:.2f} GB/s (copy {rows['apm_copy_bps'] / 1e9:.2f}, triad {rows['apm_triad_bps'] / 1e9:.2f}) "
        f"| NumPy array copy {copy / 1e9:.2f} GB/s | {apm / copy:.2f} |",
        "",
        f"Whole-command wall time, one worker: default {secs('default')} s, `--quick` {secs('quick')} s.",
        f"Two workers (gloo): default {secs('nproc2')} s, `--quick` {secs('nproc2-quick')} s.",
        "",
        "| run | rank | APB bus GB/s | all-reduce α µs | β GB/s | R² | p2p α µs | β GB/s | R² |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label in ("nproc2", "nproc2-quick"):
        for w in rows["nproc2"][label]:
            lines.append(
                f"| {label} | {w['rank']} | {w['apb'] / 1e9:.3f} | {w['alpha_s'] * 1e6:.0f} | {w['beta_bps'] / 1e9:.3f} "
                f"| {w['r2']:.4f} | {w['p2p_alpha_s'] * 1e6:.0f} | {w['p2p_beta_bps'] / 1e9:.3f} | {w['p2p_r2']:.4f} |"
            )
    lines += [
        "",
        f"All-reduce fit R²: min {min(r2):.4f}, median {statistics.median(r2):.4f}; "
        f"point-to-point R²: min {min(p2p_r2):.4f}, median {statistics.median(p2p_r2):.4f}.",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "hw_peaks.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "hw_peaks.json").write_text(json.dumps(rows, indent=2) + "\n")
    Console().print("\n".join(lines))


if __name__ == "__main__":
    main()
