"""``trainplay hw list | show | measure``: the hardware level."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from trainplay.cli import endpoint, process_count, write_output
from trainplay.errors import UsageError
from trainplay.hardware.spec import DTYPES
from trainplay.userfile import check_writable

if TYPE_CHECKING:  # imported when measuring: the CLI starts without torch
    from trainplay.hardware.measurement import Measurement

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    hw = commands.add_parser("hw", help="hardware: the catalog, cluster files, measured peaks")
    sub = hw.add_subparsers(dest="hw_command", required=True, parser_class=type(hw))

    ls = sub.add_parser(
        "list", help="catalog of devices and links, with sources, and the cluster presets"
    )
    ls.add_argument("--format", choices=("table", "json"), default="table")
    ls.set_defaults(run=_list)

    show = sub.add_parser(
        "show", help="validate a cluster file (or a preset, or `local`) and print it"
    )
    show.add_argument(
        "cluster",
        help="a cluster YAML file, a preset (lab, 8xA100-80GB, ...: `trainplay hw list`), "
        "or `local` for this machine",
    )
    show.add_argument("--format", choices=("table", "yaml", "json"), default="table")
    show.add_argument("--dtype", choices=DTYPES, default="fp32", help="datatype of the APF column")
    show.set_defaults(run=_show)

    m = sub.add_parser(
        "measure",
        help="measure each worker's achievable peaks (APF, APM, APB) through torchrun",
        description=(
            "Measure the achievable peaks of every worker: APF (dense GEMM), APM (copy/triad), "
            "and with two or more workers APB (all-reduce and point-to-point, alpha-beta fit). "
            "Runs under torchrun's elastic agent: gloo on CPU, NCCL on GPU. Run the same command "
            "on each node with --nnodes and --rdzv-endpoint to measure several machines."
        ),
    )
    m.add_argument("--nproc", type=process_count, default=1, help="workers on this node")
    m.add_argument("--nnodes", default="1", help="nodes, N or MIN:MAX as for torchrun")
    m.add_argument(
        "--rdzv-endpoint", type=endpoint, metavar="HOST:PORT", help="rendezvous of several nodes"
    )
    m.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when a GPU is visible")
    m.add_argument("--dtype", default="fp32", help="GEMM dtypes, e.g. bf16,fp32; the first is APF")
    m.add_argument(
        "--quick",
        action="store_true",
        help="a short measurement: fewer sizes, one sweep pass (what a first --cluster local runs)",
    )
    m.add_argument(
        "--out", type=Path, metavar="FILE.yaml", help="write a cluster YAML with the peaks"
    )
    m.add_argument(
        "--placement",
        choices=("shared", "split"),
        help="time one CPU worker's operators with its CPUs sharing a cache or split, waiting "
        "for it (default: as they are when the sweep begins; trainplay.hardware.placement)",
    )
    m.add_argument("--format", choices=("table", "json"), default="table")
    m.add_argument("--no-cache", action="store_true", help="do not update the local cache")
    m.add_argument(
        "--fresh",
        action="store_true",
        help="cache this measurement alone, not pooled with the layout's earlier ones "
        "(trainplay.hardware.moments): after the machine changed in a way its fingerprint misses",
    )
    m.set_defaults(run=_measure)


def _list(args: argparse.Namespace, out: Console, _err: Console) -> int:
    from trainplay.hardware.catalog import DEVICES, LINKS
    from trainplay.hardware.local import cpu_device, resolve_cluster
    from trainplay.hardware.presets import ALIASES, describe, preset_names
    from trainplay.hardware.spec import SpecError
    from trainplay.report.hardware_tables import catalog_tables, device_summary, preset_table

    try:
        cpu = cpu_device()
        cpu_note = f"measured on this machine: {cpu.source.removeprefix('measured: ')}"
        cpu_figures = {
            "peak_flops": cpu.peak_flops,
            "mem_bw_bps": cpu.mem_bw_bps,
            "mem_bytes": cpu.mem_bytes,
        }
    except SpecError:
        cpu_note, cpu_figures = (
            "built from measurement: run `trainplay hw measure` to fill it in",
            None,
        )
    presets = {name: (resolve_cluster(name), describe(name)) for name in preset_names()}
    if args.format == "json":
        data = {
            "devices": {**{n: vars(d) for n, d in DEVICES.items()}, "cpu": cpu_figures},
            "links": {n: vars(link) for n, link in LINKS.items()},
            "presets": {
                name: {
                    "devices": device_summary(cluster),
                    "what": what,
                    "aliases": [a for a, target in ALIASES.items() if target == name],
                }
                for name, (cluster, what) in presets.items()
            },
        }
        print(json.dumps(data, indent=2))
        return 0
    devices, links = catalog_tables(cpu_note)
    out.print(devices)
    out.print(links)
    out.print(preset_table(presets, ALIASES))
    return 0


def _show(args: argparse.Namespace, out: Console, err: Console) -> int:
    from trainplay.hardware.cluster import dump_cluster
    from trainplay.hardware.local import resolve_cluster
    from trainplay.report.hardware_tables import cluster_table

    cluster = resolve_cluster(args.cluster, show_progress=err.is_terminal)
    if args.format == "yaml":
        print(dump_cluster(cluster), end="")
    elif args.format == "json":
        print(json.dumps(cluster.to_dict(), indent=2))
    else:
        out.print(cluster_table(cluster, args.dtype))
    return 0


def _measure(args: argparse.Namespace, out: Console, err: Console) -> int:
    from trainplay.hardware.cluster import dump_cluster
    from trainplay.hardware.local import pooled_note, save_cached
    from trainplay.hardware.measure.kernels import DTYPES
    from trainplay.hardware.measure.launch import measure
    from trainplay.report.hardware_tables import measurement_table, sweep_notes

    dtypes = tuple(d.strip() for d in args.dtype.split(","))
    for dtype in dtypes:
        if dtype not in DTYPES:
            raise UsageError(f"--dtype takes {', '.join(DTYPES)} (comma-separated), got {dtype!r}")
    if args.out is not None:
        if args.out.suffix not in (".yaml", ".yml"):
            raise UsageError(
                f"--out writes a cluster YAML: give a .yaml file, got {str(args.out)!r}"
            )
        check_writable(args.out, "--out")
    if args.placement and (args.nproc != 1 or args.device == "cuda"):
        raise UsageError(
            "--placement times one CPU worker's operators in one placement of its CPUs: use it "
            "with --nproc 1 on a CPU, or leave it out"
        )
    result = measure(
        nproc=args.nproc,
        device=args.device,
        dtypes=dtypes,
        quick=args.quick,
        nnodes=args.nnodes,
        rdzv_endpoint=args.rdzv_endpoint,
        show_progress=err.is_terminal,
        placement=args.placement,
    )
    if result is None:
        err.print("this node's workers are measured; rank 0's node prints the result")
        return 0
    alone = None
    cpu_workers = all(w.device_type == "cpu" for w in result.workers)
    if cpu_workers and args.nproc > 1 and args.nnodes == "1":
        # one worker with a busy worker's threads while the others idle (trainplay.hardware.local)
        err.print(f"now one worker alone, the other {args.nproc - 1} idle")
        alone = measure(
            nproc=1, device="cpu", dtypes=dtypes, quick=args.quick,
            threads=result.workers[0].threads, show_progress=err.is_terminal,
        )  # fmt: skip
        if alone is not None:  # a plan of one rank runs on it: the loop is that rank's alone
            alone = _with_loop(alone, err)
    if cpu_workers and args.nproc == 1 and args.nnodes == "1":
        result = _with_loop(result, err)
    if args.format == "json":
        print(result.to_json())
    else:
        for one, by_itself in ((result, False), (alone, True)):
            if one is not None:
                out.print(measurement_table(one, alone=by_itself))
                for line in sweep_notes(one):
                    out.print(line, highlight=False)
        placed = result.workers[0].peaks.profile
        if placed is not None and placed.placement is not None:
            out.print(
                f"the CPUs were {placed.placement} while the operators were timed "
                "(trainplay.hardware.placement); `local` keeps a measurement per placement"
            )
    if not args.no_cache:
        for one in (result, alone):
            if one is not None and (path := save_cached(one, pool=not args.fresh)) is not None:
                err.print(f"cached as the `local` cluster: {path}")
                err.print(pooled_note(one), highlight=False)
    if args.out is not None:
        write_output(args.out, dump_cluster(result.to_cluster(args.out.stem, alone=alone)), err)
    return 0


LOOP_TIMEOUT_S = 300


def _with_loop(result: Measurement, err: Console) -> Measurement:
    """``result`` (one worker) with ``trainplay train``'s own loop timed on the stand-in job on it
    (:mod:`trainplay.runtime.loopcost`), as the cost model's ``runtime.step``; and on the
    stand-in that evicts the caches (its ``cold_model``) as ``runtime.step@stale``. The job runs
    one worker with the runtime's own threads (the machine's CPUs); the loop is the work of one
    Python thread, and what its operators take is priced apart."""
    from trainplay.roofline.cost import LOOP_KEY, STALE_LOOP_KEY

    err.print("now trainplay train's own step loop, on a stand-in job, hot and cold")
    profile = result.workers[0].peaks.profile
    micro = 0.0 if profile is None else profile.overhead("schedule.microbatch")
    timed = {}
    for key, factory, how in ((LOOP_KEY, "model", "hot"), (STALE_LOOP_KEY, "cold_model", "cold")):
        got = _loop_s(result, factory)
        if isinstance(got, str):
            err.print(f"the loop was not timed {how} ({got}); priced as the schedule alone")
            return result
        timed[key] = got
    (hot, hot_spread), (cold, cold_spread) = timed[LOOP_KEY], timed[STALE_LOOP_KEY]
    err.print(
        f"trainplay train's own loop: {1e3 * hot:.2f} ms a step (interquartile range "
        f"{100 * hot_spread:.0f}% of it), {1e3 * cold:.2f} ms with the caches evicted around it "
        f"({100 * cold_spread:.0f}%); beyond one micro-batch's schedule cost, priced as its fixed "
        "cost per step, cold where a stage streams more than the cache",
        highlight=False,
    )
    for key, (seconds, _) in timed.items():
        result = result.with_overhead(key, max(seconds - micro, 0.0))
    return result


def _loop_s(result: Measurement, factory: str) -> tuple[float, float] | str:
    """(median, spread) of the loop's seconds a step on ``trainplay.runtime.loopcost:factory``
    trained on ``result``'s cluster, or why it was not timed."""
    import os
    import signal
    import subprocess
    import sys
    import tempfile

    from trainplay.hardware.cluster import dump_cluster
    from trainplay.runtime import loopcost
    from trainplay.runtime.journal import read_journal

    with tempfile.TemporaryDirectory(prefix="trainplay-loop-") as tmp:
        cluster, journal = Path(tmp) / "measured.yaml", Path(tmp) / "journal.jsonl"
        cluster.write_text(dump_cluster(result.to_cluster("measured")))
        command = [
            sys.executable, "-m", "trainplay", "train", f"trainplay.runtime.loopcost:{factory}",
            "--data", "synthetic", "--input-shape", str(loopcost.WIDTH),
            "--classes", str(loopcost.CLASSES), "--global-batch", str(loopcost.BATCH),
            "--steps", str(loopcost.STEPS), "--cluster", str(cluster), "--journal", str(journal),
            "--nproc-per-node", "1", "--no-progress", "--no-calibration",
        ]  # fmt: skip
        child = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )  # fmt: skip
        try:
            _, said = child.communicate(timeout=LOOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)  # the agent and its worker, by process group
            child.wait()
            said = f"it ran past {LOOP_TIMEOUT_S} s"
        last = (said or "").strip().splitlines()[-1:] or ["no message"]
        try:
            if child.returncode != 0:
                raise ValueError(last[0])
            return loopcost.loop_s(read_journal(journal))
        except (OSError, ValueError, KeyError, StopIteration) as exc:  # ran, or kept, no steps
            return str(exc)
