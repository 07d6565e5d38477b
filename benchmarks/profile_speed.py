"""How fast trainplay profiles, side by side with fvcore, ptflops and calflops on the same models.

Each (tool, model) is measured in a fresh process, several times; the table gives medians.
``seconds`` is building the model plus counting, after every module is imported;
``peak RSS`` is the process's maximum resident set size. Every tool runs on the ``meta`` device
when it can (no weights, no kernels), otherwise on the CPU with real tensors, and the table says which.
Also timed: the whole ``trainplay profile resnet50 --batch 32`` command, interpreter start included.

Run: ``make bench`` (installs the ``bench`` extra), or ``python benchmarks/profile_speed.py``.
Writes ``benchmarks/results/profile_speed.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
CASES = [("resnet50", 32), ("gpt2-small", 1), ("gpt3-175b", 1)]
TOOLS = ("trainplay", "fvcore", "ptflops", "calflops")
REPEATS = 3

# What each tool counts, from its documentation and from the numbers below (gpt2-small: fvcore and
# calflops miss exactly the 38.7 GFLOP of its 12 layers' attention GEMMs).
COUNTS = {
    "trainplay": "fwd + bwd (real backward ops); bytes, activations, saved; all ops incl. elementwise",
    "fvcore": "fwd only; MACs of conv/matmul/norm/pool handles; elementwise and SDPA attention not counted; no bytes",
    "ptflops": "fwd only (aten backend); MACs of conv/mm/bmm/addmm; no elementwise; no bytes",
    "calflops": "fwd; bwd assumed 2x fwd; patched functionals incl. elementwise; SDPA attention not counted; no bytes",
}


def _build(model: str, device: str, batch: int):
    from trainplay.workload import resolve_model

    source = resolve_model(model)
    shape = source.default_input_shape
    return source.build(shape, device, "fp32"), source.inputs(batch, shape, device, "fp32")


def _count(tool: str, model: str, batch: int) -> dict:
    """Build and count one model with one tool, on meta if the tool can, else on the CPU."""
    warnings.filterwarnings("ignore")
    if tool == "trainplay":
        from trainplay.workload import profile

        result = profile(model, batch_size=batch)
        return {
            "device": "meta",
            "fwd_flops": result.totals["fwd_flops"],
            "bwd_flops": result.totals["bwd_flops"],
        }
    if tool == "fvcore":
        from fvcore.nn import FlopCountAnalysis

        net, inputs = _build(model, "cpu", batch)  # jit tracing needs real tensors
        analysis = FlopCountAnalysis(net, inputs)
        analysis.unsupported_ops_warnings(False)
        analysis.uncalled_modules_warnings(False)
        return {
            "device": "cpu",
            "fwd_flops": 2 * analysis.total(),
            "bwd_flops": None,
        }  # fvcore counts MACs
    if tool == "ptflops":
        from ptflops import get_model_complexity_info

        net, inputs = _build(model, "meta", batch)
        macs, _ = get_model_complexity_info(
            net,
            (1,),
            as_strings=False,
            print_per_layer_stat=False,
            input_constructor=lambda _shape: inputs[0],
            backend="aten",
        )
        return {"device": "meta", "fwd_flops": 2 * macs, "bwd_flops": None}
    from calflops import calculate_flops

    net, inputs = _build(model, "meta", batch)
    flops, _macs, _ = calculate_flops(
        model=net,
        args=list(inputs),
        output_as_string=False,
        print_results=False,
        print_detailed=False,
        include_backPropagation=True,
    )
    # with include_backPropagation calflops reports forward x 3 (backward assumed 2x forward)
    return {"device": "meta", "fwd_flops": flops / 3, "bwd_flops": 2 * flops / 3}


_IMPORTS = {
    "trainplay": [],
    "fvcore": ["fvcore.nn"],
    "ptflops": ["ptflops"],
    "calflops": ["calflops"],
}


def _worker(tool: str, model: str, batch: int) -> None:
    import importlib

    # Imports happen before the clock starts, as in a user's script that has already loaded them.
    for module in ["torch", "torchvision", "trainplay.workload", *_IMPORTS[tool]]:
        importlib.import_module(module)
    start = time.perf_counter()
    try:
        result = _count(tool, model, batch)
        result["seconds"] = time.perf_counter() - start
    except Exception as exc:  # a tool that cannot count this model: say why
        result = {
            "error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ''}"
        }
    result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(result))


def _run_worker(tool: str, model: str, batch: int) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--worker", tool, model, str(batch)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:160]}
    return json.loads(lines[-1])


def _cli_seconds() -> float:
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "trainplay",
            "profile",
            "resnet50",
            "--batch",
            "32",
            "--format",
            "json",
        ],
        capture_output=True,
        check=True,
        timeout=300,
    )
    return time.perf_counter() - start


def _skip(tool: str, model: str) -> str | None:
    if tool == "fvcore" and model == "gpt3-175b":
        return "needs real tensors: 700 GB of fp32 weights"
    return None


def main() -> None:
    from rich.console import Console
    from rich.progress import track
    from rich.table import Table

    rows = []
    plan = [(tool, model, batch) for model, batch in CASES for tool in TOOLS]
    for tool, model, batch in track(plan, description="timing", transient=True):
        reason = _skip(tool, model)
        runs = (
            [{"error": reason}]
            if reason
            else [_run_worker(tool, model, batch) for _ in range(REPEATS)]
        )
        ok = [r for r in runs if "error" not in r]
        row = {"tool": tool, "model": model, "batch": batch, "counts": COUNTS[tool]}
        if ok:
            row.update(
                device=ok[0]["device"],
                seconds_median=statistics.median(r["seconds"] for r in ok),
                seconds_all=[round(r["seconds"], 3) for r in ok],
                peak_rss_bytes_median=statistics.median(r["peak_rss_bytes"] for r in ok),
                fwd_flops=ok[0]["fwd_flops"],
                bwd_flops=ok[0]["bwd_flops"],
            )
        else:
            row["error"] = runs[0]["error"]
        rows.append(row)
    cli = [_cli_seconds() for _ in range(REPEATS)]

    table = Table(title="Profiling speed and what is counted (medians of fresh processes)")
    for header in (
        "model",
        "tool",
        "device",
        "seconds",
        "peak RSS GiB",
        "fwd GFLOP",
        "bwd GFLOP",
        "counts",
    ):
        table.add_column(
            header, justify="left" if header in ("model", "tool", "device", "counts") else "right"
        )
    lines = [
        "# Profiling speed, side by side",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {_cpus()} CPUs, Python {platform.python_version()}. "
        f"Command: `python benchmarks/profile_speed.py`. Medians of {REPEATS} fresh processes; seconds = build the model "
        "+ count (after all imports); FLOPs of MAC-counting tools are doubled to FLOPs.",
        "",
        "| model | batch | tool | device | seconds | peak RSS GiB | fwd GFLOP | bwd GFLOP | what it counts |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            cells = [r["model"], r["tool"], "-", "n/a", "-", "-", "-", r["error"]]
        else:
            cells = [
                r["model"],
                r["tool"],
                r["device"],
                f"{r['seconds_median']:.2f}",
                f"{r['peak_rss_bytes_median'] / 2**30:.2f}",
                f"{r['fwd_flops'] / 1e9:.1f}",
                "-" if r["bwd_flops"] is None else f"{r['bwd_flops'] / 1e9:.1f}",
                r["counts"],
            ]
        table.add_row(*cells)
        lines.append(f"| {cells[0]} | {r['batch']} | " + " | ".join(cells[1:]) + " |")
    lines += [
        "",
        f"`trainplay profile resnet50 --batch 32` as a command (interpreter start, imports, profile, print): "
        f"median {statistics.median(cli):.2f} s of {', '.join(f'{s:.2f}' for s in cli)}.",
    ]
    Console().print(table)
    Console().print(lines[-1])
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "profile_speed.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "profile_speed.json").write_text(
        json.dumps({"rows": rows, "cli_seconds": cli}, indent=2) + "\n"
    )


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--worker", nargs=3, metavar=("TOOL", "MODEL", "BATCH"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker[0], args.worker[1], int(args.worker[2]))
    else:
        main()
