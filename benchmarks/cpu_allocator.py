"""What glibc's allocator costs a plain PyTorch training step on this CPU (a finding, not a model).

A CPU training step allocates its activations and gradients afresh every iteration. glibc's
``malloc`` serves a request above its mmap threshold (dynamic, at most 32 MiB on 64-bit: the
``mallopt`` manual page) with a fresh ``mmap`` and returns a freed top of the heap to the kernel
beyond its trim threshold, so the next iteration touches new pages: a minor page fault and a
zeroed page for every 4 KiB. The cost model prices no such term; ``trainplay hw measure``'s
sweeps time an operator called over and over on the same sizes (what they see of it is not
measured here).

Each case is one torchvision classifier trained with SGD (momentum 0.9, ``zero_grad`` to
``None``) on random data in a process of its own, with PyTorch's default threads, twice per
repeat, alternated: ``default`` (glibc as shipped) and ``retained``
(``GLIBC_TUNABLES=glibc.malloc.trim_threshold=...:glibc.malloc.mmap_threshold=...`` set so
high that freed memory stays with the process). Per run: the median of ``--iters`` timed steps
after 2 warm-up steps, and the median of their minor page faults (``getrusage``); per arm the
median over ``--repeats`` runs. Nothing here calibrates anything: the models are the classics of
``validate_cpu.py``'s development set, and this measures the machine, not a prediction.

    python benchmarks/cpu_allocator.py --repeats 3

Writes ``benchmarks/results/cpu_allocator.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
RETAINED = "glibc.malloc.trim_threshold=1099511627776:glibc.malloc.mmap_threshold=4294967296"
"""Trim only beyond 1 TiB of free heap; mmap only requests of 4 GiB or more (glibc's largest)."""
CASES = [
    ("alexnet", 4),
    ("resnet18", 4),
    ("resnet50", 4),
    ("mobilenet_v2", 4),
    ("squeezenet1_0", 4),
    ("densenet121", 1),
    ("googlenet", 4),
]
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def run_case(name: str, batch: int, iters: int) -> dict[str, float]:
    """One process's figures (called in the child)."""
    import torch
    import torchvision

    torch.manual_seed(0)
    kwargs = {"aux_logits": False, "init_weights": False} if name == "googlenet" else {}
    model = getattr(torchvision.models, name)(**kwargs)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(batch, 3, 224, 224), torch.randint(0, 1000, (batch,))

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    for _ in range(2):
        step()
    times, faults = [], []
    for _ in range(iters):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return {"step_s": statistics.median(times), "faults": statistics.median(faults)}


def measure(name: str, batch: int, iters: int, retained: bool) -> dict[str, float]:
    env = {**os.environ}
    env.pop("GLIBC_TUNABLES", None)
    if retained:
        env["GLIBC_TUNABLES"] = RETAINED
    done = subprocess.run(
        [sys.executable, __file__, "--case", name, str(batch), str(iters)],
        capture_output=True, text=True, env=env, timeout=600, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(results: dict) -> str:
    lines = [
        "# What glibc's allocator costs a plain PyTorch training step on this CPU",
        "",
        f"`{results['command']}` ({results['cpus']} cores, one process, PyTorch's default "
        "threads). `default`: glibc as shipped; `retained`: its trim and mmap thresholds set "
        "so high that freed memory stays with the process. Medians over the repeats of each "
        "run's median step; page faults are minor faults per step.",
        "",
        "| model | batch | default ms | retained ms | default costs | faults per step "
        "(default) | faulted MiB per step | faults per step (retained) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in results["cases"]:
        d, r = row["default"], row["retained"]
        lines.append(
            f"| {row['model']} | {row['batch']} | {1e3 * d['step_s']:.1f} | "
            f"{1e3 * r['step_s']:.1f} | {100 * (d['step_s'] / r['step_s'] - 1):+.1f}% | "
            f"{d['faults']:,.0f} | {d['faults'] * PAGE_BYTES / 2**20:.1f} | {r['faults']:,.0f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iters", type=int, default=5)
    args = parser.parse_args()
    results: dict = {
        "command": "python benchmarks/cpu_allocator.py " + " ".join(sys.argv[1:]),
        "cpus": os.cpu_count(),
        "cases": [],
    }
    for name, batch in CASES:
        runs: dict[str, list[dict[str, float]]] = {"default": [], "retained": []}
        for k in range(args.repeats):
            for arm in ("default", "retained") if k % 2 == 0 else ("retained", "default"):
                runs[arm].append(measure(name, batch, args.iters, arm == "retained"))
        row = {"model": name, "batch": batch, "runs": runs}
        for arm, got in runs.items():
            row[arm] = {key: statistics.median(g[key] for g in got) for key in got[0]}
        results["cases"].append(row)
        print(report(results).splitlines()[-1], flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cpu_allocator.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "cpu_allocator.md").write_text(report(results))
    print(report(results))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--case":
        print(json.dumps(run_case(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
    else:
        main()
