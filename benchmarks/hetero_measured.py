"""Measured, not predicted: ``trainplay train`` against plain DDP and an even GPipe split on two
devices that really differ, and on a device that slows down mid-run (issue 14, acceptance 1, 2).

Two one-process nodes on this machine, each pinned to a core of its own (``taskset -c 0`` /
``-c 1``); the ``slow`` node runs inside a cgroup v1 CPU quota of 40% of a core
(``cpu.cfs_quota_us`` 40000 of 100000, :func:`cgroup`), so it and every process it starts (its
agent and its worker) get at most 40 ms of CPU per 100 ms period. Each node starts as
``sh -c 'echo $$ > CGROUP/cgroup.procs && exec taskset -c K python ...'``, so the quota holds
before it does any work. The cluster file both nodes price their device with is this machine's
cached two-worker measurement (``local:2``): the cluster file says the nodes are equal. Each
trainplay rank reads the CPUs it may use (:mod:`trainplay.hardware.cpulimit`: the slow node's
quota is 0.4 CPUs for its one thread) and never prices its device faster than that allows
(a scale of at least 2.5, :func:`trainplay.runtime.calibration.scale_floor`); its step timers
calibrate the rest.

Acceptance 1, arms alternated in one run, ``--repeats`` times each, medians quoted:

- ``trainplay``: ``trainplay train`` (calibration on; it needs ``--checkpoint-dir``). Measured:
  the mean step time of the worker group that ran last (after its re-plans), without its first
  :data:`SETTLE` steps (a mean, not a median: the quota makes steps bimodal, see the report);
  predicted after calibration: the runtime's own price of that plan at its first look in that
  group, on the scales measured before the look, against the mean of the steps after the look
  (:func:`forecast`; the group's start price where it made none).
- ``ddp``: plain PyTorch DDP under plain torchrun (:func:`ddp_worker`), even shares, the same
  model, batch, optimizer and synthetic data shapes, on the same two nodes, with glibc's
  allocator as shipped: the script as a user runs it.
- ``ddp-kept-memory``: the same script with the host allocator setting trainplay gives its
  workers (:mod:`trainplay.hardware.allocator`), so that trainplay against it differs in the plan
  only.
- ``gpipe``: ``trainplay train --plan`` with an even GPipe split over the two nodes (2 stages,
  cut where the planner balances them for equal devices, 2 or 4 micro-batches as it prices best).

Acceptance 2: both nodes start unthrottled (quota -1); once the journal shows step ``K``,
40000 is written into the slow node's ``cpu.cfs_quota_us``. Arms: ``trainplay`` (calibration)
and ``trainplay --no-calibration`` (keeps its plan). Measured: the steps until the first
calibration that raises the slow device's scale and the re-plan, and the mean step time after
the change (trainplay: on its last plan; the other: from :data:`SETTLE` steps after the change).

Run alone on an idle machine (under ``flock /tmp/trainplay-cpu.lock`` here)::

    python benchmarks/hetero_measured.py --repeats 2

Writes ``benchmarks/results/hetero_measured.{json,md}`` (``--out NAME``: ``NAME.{json,md}``)
after every run (a cut-short run keeps what it measured). Needs root for the cgroup (cgroup v1 at ``/sys/fs/cgroup/cpu``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.elastic import alive, descendants, free_port, wait_listening  # noqa: E402
from tests.integration.processes import group_alive  # noqa: E402

from trainplay.hardware.allocator import worker_env  # noqa: E402
from trainplay.runtime.journal import read_journal  # noqa: E402
from trainplay.runtime.nodes import NAME_ENV  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CGROUP_ROOT = Path("/sys/fs/cgroup/cpu")
PERIOD_US, QUOTA_US = 100_000, 40_000
SETTLE = 3
"""Steps of a worker group (or after a change) left out of its mean."""
CORES = {"fast": "0", "slow": "1"}
ARMS = ("trainplay", "ddp", "ddp-kept-memory", "gpipe")
"""Acceptance 1's arms, in the order of even rounds (odd rounds run them backwards)."""
KEPT = Path(tempfile.gettempdir()) / "hetero_measured_runs"
"""Where every run's journal and node logs are kept after the run (not committed)."""

WORKLOADS: dict[str, dict[str, Any]] = {
    "cnn": {
        "model": "tests.data.tiny_models:tiny_cnn",
        "flags": ["--input-shape", "3,32,32", "--classes", "10"],
        "batch": 256,
    },
    "decoder": {
        "model": "benchmarks.hetero_measured:decoder",
        "flags": ["--seq-len", "32"],
        "batch": 64,
    },
}
VOCAB, SEQ = 256, 32


def decoder():
    """A small GPT-style decoder: vocabulary 256, 2 layers of width 128, context 32."""
    from trainplay.workload.decoder import Decoder, preset

    return Decoder(
        preset(
            "gpt2-small",
            vocab_size=VOCAB,
            d_model=128,
            n_heads=4,
            d_ff=512,
            n_layers=2,
            context_len=SEQ,
        )
    )


# ---------------------------------------------------------------- the DDP baseline's worker


def ddp_worker(argv: list[str]) -> None:
    """One rank of plain DDP: even shares of ``batch``, SGD with momentum, synthetic data;
    rank 0 writes every step's time (JSON lines) to ``log`` (``argv[0]``: JSON of model, batch,
    steps, log, input_shape, seq_len)."""
    import torch
    import torch.distributed as dist
    from torch import nn

    # one positional JSON argument: torchrun's parser would take an option such as --log for an
    # abbreviation of its own --log-dir
    args = argparse.Namespace(**json.loads(argv[0]))
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    module, _, factory = args.model.partition(":")
    model = nn.parallel.DistributedDataParallel(getattr(importlib.import_module(module), factory)())
    share = args.batch // dist.get_world_size()
    if args.seq_len:
        inputs = torch.randint(0, VOCAB, (share, args.seq_len))
        targets = torch.randint(0, VOCAB, (share, args.seq_len))
    else:
        shape = tuple(int(x) for x in args.input_shape.split(","))
        inputs, targets = torch.randn(share, *shape), torch.randint(0, 10, (share,))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    with open(args.log, "a") as log:
        for step in range(args.steps):
            t0 = time.perf_counter()
            out = model(inputs)
            loss = nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), targets.reshape(-1))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            step_s = time.perf_counter() - t0
            if dist.get_rank() == 0:
                log.write(json.dumps({"step": step, "step_s": step_s, "t": time.time()}) + "\n")
                log.flush()
    dist.destroy_process_group()


# ---------------------------------------------------------------- nodes, cgroup


@contextlib.contextmanager
def cgroup() -> Iterator[Path]:
    """A cgroup v1 CPU group for the slow node, removed afterwards (once its processes left)."""
    path = CGROUP_ROOT / f"trainplay-{os.getpid()}"
    path.mkdir()
    try:
        (path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        yield path
    finally:
        deadline = time.monotonic() + 20
        while (path / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.2)
        left = (path / "cgroup.procs").read_text().split()
        for pid in left:  # what outlived its node: never leave the group behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        time.sleep(0.5)
        path.rmdir()


def set_quota(group: Path, quota_us: int) -> None:
    (group / "cpu.cfs_quota_us").write_text(str(quota_us))


class Job:
    """The two nodes of one arm: ``fast`` (pinned to core 0) and ``slow`` (core 1, in the
    cgroup), each in its own session; cleaned up by process group and by every pid seen."""

    def __init__(self, workdir: Path, group: Path):
        self.workdir, self.group = workdir, group
        self.procs: list[subprocess.Popen] = []
        self.seen: set[int] = set()

    def start(
        self, name: str, command: list[str], env: dict[str, str] | None = None
    ) -> subprocess.Popen:
        inner = " ".join(_quote(c) for c in ["taskset", "-c", CORES[name], *command])
        if name == "slow":
            inner = f"echo $$ > {_quote(str(self.group / 'cgroup.procs'))} && exec {inner}"
        else:
            inner = f"exec {inner}"
        env = {
            **os.environ,
            **(env or {}),
            "PYTHONPATH": str(ROOT),
            NAME_ENV: name,
            "COLUMNS": "200",
        }
        log = (self.workdir / f"{name}.log").open("a")
        proc = subprocess.Popen(
            ["sh", "-c", inner], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env,
            start_new_session=True,
        )  # fmt: skip
        self.procs.append(proc)
        return proc

    def wait_port(self, port: int, timeout_s: float = 60) -> None:
        if wait_listening(port, timeout_s):
            return
        raise RuntimeError(f"the fast node did not open port {port}: {self.log('fast')}")

    def log(self, name: str) -> str:
        path = self.workdir / f"{name}.log"
        return path.read_text()[-3000:] if path.exists() else ""

    def wait(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        for proc in self.procs:
            while proc.poll() is None:
                for p in self.procs:
                    self.seen |= descendants(p.pid)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"timed out:\n{self.log('fast')}\n{self.log('slow')}")
                time.sleep(0.2)
        bad = [p.returncode for p in self.procs if p.returncode]
        if bad:
            raise RuntimeError(f"exit {bad}:\n{self.log('fast')}\n{self.log('slow')}")

    def cleanup(self) -> None:
        for proc in self.procs:
            self.seen |= descendants(proc.pid)
        for proc in self.procs:
            if group_alive(proc.pid):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for pid in self.seen:
            if alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@contextlib.contextmanager
def job(workdir: Path, group: Path) -> Iterator[Job]:
    j = Job(workdir, group)
    try:
        yield j
    finally:
        j.cleanup()


# ---------------------------------------------------------------- arms


def cluster_file(workdir: Path) -> Path:
    """This machine's cached two-worker measurement, one node: every node prices its device so."""
    from trainplay.hardware.cluster import dump_cluster
    from trainplay.hardware.local import resolve_cluster

    path = workdir / "cluster.yaml"
    path.write_text(dump_cluster(resolve_cluster("local:2", show_progress=False)))
    return path


def train_command(
    w: dict[str, Any], run: Path, cluster: Path, steps: int, port: int, *extra: str
) -> list[str]:
    return [
        sys.executable, "-m", "trainplay", "train", w["model"], *w["flags"],
        "--global-batch", str(w["batch"]), "--steps", str(steps),
        "--checkpoint-dir", str(run / "ckpt"), "--checkpoint-every", "100000",
        "--journal", str(run / "journal.jsonl"), "--cluster", str(cluster), "--no-progress",
        "--nnodes", "2:2", "--rdzv-endpoint", f"127.0.0.1:{port}", "--run-id", run.name,
        "--max-restarts", "5", *extra,
    ]  # fmt: skip


def run_trainplay(
    w: dict[str, Any], run: Path, cluster: Path, steps: int, group: Path, *extra: str,
    throttle_at: int | None = None,
) -> dict[str, Any]:  # fmt: skip
    """One ``trainplay train`` job on the two nodes; with ``throttle_at``, the quota is written
    once step ``throttle_at`` is journaled (the slow node starts unthrottled)."""
    run.mkdir(parents=True)
    port = free_port()
    command = train_command(w, run, cluster, steps, port, *extra)
    journal = run / "journal.jsonl"
    throttled_s = None
    t0 = time.time()
    with job(run, group) as j:
        j.start("fast", command)
        j.wait_port(port)
        j.start("slow", command)
        if throttle_at is not None:
            deadline = time.monotonic() + 600
            while throttled_s is None and time.monotonic() < deadline:
                if any(p.poll() is not None for p in j.procs):
                    break  # a node ended before step K: j.wait says why
                if journal.exists() and any(
                    e["event"] == "step" and e["step"] >= throttle_at for e in read_journal(journal)
                ):
                    set_quota(group, QUOTA_US)
                    throttled_s = time.time()
                time.sleep(0.05)
        j.wait(900)
    wall_s = time.time() - t0
    keep_journal(run)
    return {"events": read_journal(journal), "wall_s": wall_s, "throttled_s": throttled_s}


def run_ddp(
    w: dict[str, Any], run: Path, steps: int, group: Path, kept: bool = False
) -> dict[str, Any]:
    """The plain DDP script on the two nodes; ``kept``: with trainplay's allocator setting."""
    run.mkdir(parents=True)
    port = free_port()
    log = run / "steps.jsonl"
    language = "--seq-len" in w["flags"]
    spec = {
        "model": w["model"], "batch": w["batch"], "steps": steps, "log": str(log),
        "input_shape": None if language else "3,32,32", "seq_len": SEQ if language else None,
    }  # fmt: skip
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
        "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", run.name,
        str(Path(__file__).resolve()), "ddp-worker", json.dumps(spec),
    ]  # fmt: skip
    t0 = time.time()
    allocator = worker_env(os.environ) if kept else {"GLIBC_TUNABLES": ""}
    with job(run, group) as j:
        j.start("fast", command, allocator)
        j.wait_port(port)
        j.start("slow", command, allocator)
        j.wait(900)
    keep_journal(run)
    steps_s = [json.loads(line)["step_s"] for line in log.read_text().splitlines()]
    return {"steps_s": steps_s, "wall_s": time.time() - t0}


def gpipe_plan(w: dict[str, Any], cluster: Path, path: Path) -> dict[str, Any]:
    """An even GPipe split over the two nodes: two stages cut where the planner balances them on
    equal devices, the better priced of 2 and 4 micro-batches."""
    from trainplay.hardware.local import resolve_cluster
    from trainplay.plan.api import block_costs, make_plan
    from trainplay.plan.baselines import fixed_layout
    from trainplay.plan.costs import CostModel, devices_of
    from trainplay.plan.partition import greedy_bounds
    from trainplay.runtime.nodes import present_cluster, this_node

    spec = resolve_cluster(str(cluster), show_progress=False)
    entries = [(n, 0, this_node(spec, name=n, nproc=1)) for n in ("fast", "slow")]
    present, _ = present_cluster(entries)
    if "--seq-len" in w["flags"]:
        costs = block_costs(w["model"], seq_len=SEQ, vocab_size=VOCAB)
    else:
        costs = block_costs(w["model"], input_shape=(3, 32, 32))
    cm = CostModel(costs, present, "sgd")
    d0, d1 = devices_of(present, "fp32")
    best = None
    for mb in (2, 4):
        bounds = greedy_bounds(cm, ((d0, d1),), mb, (w["batch"] // mb,), "gpipe")
        got = fixed_layout(cm, ((d0, d1),), bounds, (w["batch"],), "gpipe", [mb])
        if not isinstance(got, str) and (best is None or got[0] < best[0]):
            best = got
    assert best is not None, "no even GPipe split fits"
    plan = make_plan(cm, best[1], costs.names)[0].to_dict()
    path.write_text(json.dumps(plan))
    return plan


# ---------------------------------------------------------------- reading the journals


def groups_of(events: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(start event, its step events) per worker group, in order."""
    out: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    for e in events:
        if e["event"] == "start":
            out.append((e, []))
        elif e["event"] == "step" and out:
            out[-1][1].append(e)
    return out


def _last_run(events: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The start and step events of the last worker group that ran steps."""
    return [g for g in groups_of(events) if g[1]][-1]


def last_group(events: list[dict[str, Any]]) -> tuple[dict[str, Any], list[float]]:
    start, steps = _last_run(events)
    return start, [e["step_s"] for e in steps[SETTLE:]]


def forecast(events: list[dict[str, Any]]) -> tuple[float, list[float], int | None]:
    """The runtime's own prediction of the plan it ran last, after calibration, and the step
    times it predicts: the first look of the last worker group that priced that plan on the
    scales it measured (``decision.current_iteration_s``, from the steps before the look)
    against the group's steps after the look; else (no such look) the group's start price,
    made on the scales known then, against its steps after :data:`SETTLE`."""
    start, steps = _last_run(events)
    look = next(
        (
            e
            for e in events
            if e["event"] == "calibration"
            and e["time_s"] >= start["time_s"]
            and (e.get("decision") or {}).get("current_iteration_s")
        ),
        None,
    )
    if look is None:
        return start["predicted_step_s"], [e["step_s"] for e in steps[SETTLE:]], None
    after = [e["step_s"] for e in steps if e["step"] >= look["step"]]
    return look["decision"]["current_iteration_s"], after, look["step"]


def summary_trainplay(got: dict[str, Any], batch: int) -> dict[str, Any]:
    events = got["events"]
    start, times = last_group(events)
    first = groups_of(events)[0][0]
    mean = statistics.fmean(times)
    predicted, predicted_steps, look = forecast(events)
    predicted_mean = statistics.fmean(predicted_steps) if predicted_steps else mean
    return {
        "mean_step_s": mean,
        "median_step_s": statistics.median(times),
        "samples_per_s": batch / mean,
        "predicted_step_s": predicted,
        "predicted_at_step": look,
        "measured_after_prediction_s": predicted_mean,
        "prediction_error": (predicted - predicted_mean) / predicted_mean,
        "predicted_at_start_s": start["predicted_step_s"],
        "final_plan": _plan_line(start),
        "first_plan": _plan_line(first),
        "replans": [
            {k: e.get(k) for k in ("step", "reason", "from_plan_id", "to_plan_id")}
            for e in events
            if e["event"] == "replan"
        ],
        "calibrations": [
            {k: e.get(k) for k in ("step", "measured", "scales", "scale_floors")}
            for e in events
            if e["event"] == "calibration"
        ],
        "scale_floors_at_start": first.get("scale_floors"),
        "steps_measured": len(times),
        "wall_s": got["wall_s"],
    }


def _plan_line(start: dict[str, Any]) -> str:
    shares = [r.get("share") for r in start.get("ranks", [])]
    return (
        f"{start['plan_id']}: {start['stages']} stage(s) x {start['replicas']} replica(s), "
        f"{start['microbatches']} micro-batch(es), devices {start['devices']}"
        + (f", shares {shares}" if any(s is not None for s in shares) else "")
    )


def slowdown_summary(got: dict[str, Any], calibrating: bool) -> dict[str, Any]:
    """Acceptance 2 figures of one arm."""
    events, at = got["events"], got["throttled_s"]
    steps = [e for e in events if e["event"] == "step"]
    after = [e for e in steps if e["time_s"] > at]
    k = after[0]["step"] if after else None
    noticed, before = None, 1.0
    for e in events:  # the first calibration after the change that raises the slow one's scale
        if e["event"] != "calibration":
            continue
        scale = next((v for d, v in e["scales"].items() if d.startswith("slow/")), before)
        if e["time_s"] > at and scale > before * 1.15:
            noticed = e
            break
        before = scale
    replan = next((e for e in events if e["event"] == "replan" and e["time_s"] > at), None)
    if calibrating and replan is not None:
        start, times = last_group(events)
        measured = times if start["time_s"] > at else [e["step_s"] for e in after[SETTLE:]]
    else:
        measured = [e["step_s"] for e in after[SETTLE:]]
    mean = statistics.fmean(measured) if measured else None
    done = {e["step"] for e in after}
    span_s = after[-1]["time_s"] - at if after else None
    return {
        "throttled_from_step": k,
        "wall_s_per_step_after": span_s / len(done) if done else None,
        "noticed_at_step": noticed["step"] if noticed else None,
        "noticed_scales": noticed["scales"] if noticed else None,
        "noticed_floors": noticed.get("scale_floors") if noticed else None,
        "replanned_at_step": replan["step"] if replan else None,
        "mean_step_s_after": mean,
        "steps_measured_after": len(measured),
        "final_plan": _plan_line(last_group(events)[0]),
        "wall_s": got["wall_s"],
    }


# ---------------------------------------------------------------- main


def failed(results: dict[str, Any], run: Path, what: str, exc: Exception) -> None:
    """Note a run that failed (its error's tail) and keep its folder's journal and logs."""
    keep = KEPT / run.name
    with contextlib.suppress(OSError):
        shutil.copytree(run, keep, ignore=shutil.ignore_patterns("ckpt"), dirs_exist_ok=True)
    results.setdefault("errors", []).append({"run": what, "error": str(exc)[-2000:]})
    print("FAILED", what, str(exc)[-2000:], flush=True)
    write(results)


def keep_journal(run: Path) -> None:
    """Keep a run's journal beside the node logs (``trainplay diagnose`` reads it later)."""
    with contextlib.suppress(OSError):
        KEPT.mkdir(parents=True, exist_ok=True)
        for name in ("journal.jsonl", "steps.jsonl", "fast.log", "slow.log"):
            if (run / name).exists():
                (KEPT / run.name).mkdir(exist_ok=True)
                shutil.copy(run / name, KEPT / run.name / name)


def write(results: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    name = results["config"]["out"]
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(report(results))


def _med(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def report(results: dict[str, Any]) -> str:
    cfg = results["config"]
    lines = [
        "# Measured on unequal devices: trainplay train against plain DDP and an even GPipe split",
        "",
        f"`{cfg['command']}` on this machine ({cfg['cpus']} cores): two one-process nodes, "
        "`fast` pinned to core 0, `slow` to core 1 inside a cgroup v1 quota of "
        f"{QUOTA_US // 1000} ms per {PERIOD_US // 1000} ms (40% of a core). Both price their "
        "device as this machine's cached two-worker measurement (`local:2`): the cluster file "
        "says they are equal. Each trainplay rank reads the CPUs it may use (the slow node's "
        "quota: 0.4 for one thread) and never prices its device above that (a scale of at least "
        "2.5); its step timers calibrate the rest. "
        "trainplay's workers keep freed memory (the glibc tunables `trainplay train` gives "
        "them, `trainplay.hardware.allocator`); the arm `ddp` is the plain DDP script as a user "
        "runs it (glibc as shipped), `ddp-kept-memory` the same script given trainplay's "
        "setting, so that trainplay against it differs in the plan only. "
        f"Medians over {cfg['repeats']} repeat(s) of each arm, arms alternated. A run's step "
        f"time is the mean over the steps of its (last) worker group, the first {SETTLE} left "
        "out, and its samples/s the global batch over it: under the quota, steps are bimodal "
        "(a step that fits in the slow node's 40 ms of a period, or one that waits for the next "
        "period), so a run's median step lands on whichever mode holds half of its steps.",
        "",
        "## Acceptance 1: a node throttled from the start",
        "",
        "| workload | global batch | arm | mean step ms | samples/s | vs DDP | predicted ms "
        "| prediction error | plan it ended on |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for name, w in results.get("hetero", {}).items():
        arms = {a: w.get(a, []) for a in ARMS}
        ddp = _med([r["mean_step_s"] for r in arms["ddp"]])
        kept = _med([r["mean_step_s"] for r in arms["ddp-kept-memory"]])
        for arm, runs in arms.items():
            if not runs:
                continue
            step = _med([r["mean_step_s"] for r in runs])
            rate = WORKLOADS[name]["batch"] / step
            ratio = f"{ddp / step:.2f}x" if ddp else "-"
            pred = _med([r["predicted_step_s"] for r in runs if r.get("predicted_step_s")])
            pred_s = f"{1e3 * pred:.1f}" if pred else "-"
            # the steps a prediction was made for: those after the look that made it
            against = _med([r.get("measured_after_prediction_s", r["mean_step_s"]) for r in runs])
            miss = (pred - against) / against if pred and against else None
            err = f"{100 * miss:+.1f}%" if miss is not None else "-"
            plan = runs[-1].get("final_plan", "DDP, even shares")
            lines.append(
                f"| {name} | {WORKLOADS[name]['batch']} | {arm} | {1e3 * step:.1f} | {rate:.1f} "
                f"| {ratio} | {pred_s} | {err} | {plan} |"
            )
            if arm == "trainplay" and ddp and miss is not None:
                verdicts.append(
                    f"- {name}: trainplay/DDP {ddp / step:.2f}x (goal >= 1.3x: "
                    f"{'met' if ddp / step >= 1.3 else 'NOT met'})"
                    + (f", {kept / step:.2f}x DDP with the same allocator" if kept else "")
                    + f"; predicted against measured after calibration {100 * miss:+.1f}% (goal "
                    f"within 15%: {'met' if abs(miss) <= 0.15 else 'NOT met'})"
                )
    lines += ["", *verdicts, ""]
    for name, w in results.get("hetero", {}).items():
        per_run = "; ".join(
            arm + " " + " / ".join(f"{1e3 * r['mean_step_s']:.1f}" for r in runs)
            for arm, runs in w.items()
            if runs
        )
        lines.append(f"- {name}, mean step ms of each run, in order: {per_run}")
    for name, w in results.get("hetero", {}).items():
        for r in w.get("trainplay", []):
            lines.append(
                f"- {name}, trainplay run: started on {r['first_plan']} (scale floors "
                f"{r.get('scale_floors_at_start')}); predicted "
                f"{1e3 * r['predicted_at_start_s']:.1f} ms at its start, "
                f"{1e3 * r['predicted_step_s']:.1f} ms after the look at step "
                f"{r.get('predicted_at_step')} (measured after it "
                f"{1e3 * r['measured_after_prediction_s']:.1f} ms); re-plans "
                f"{[(x['step'], x['reason']) for x in r['replans']]}; calibrations (step: scales) "
                f"{[(c['step'], c['scales']) for c in r['calibrations']]}; wall {r['wall_s']:.1f} s"
            )
    slow = results.get("slowdown", {})
    if slow:
        lines += [
            "",
            f"## Acceptance 2: the slow node throttled after step {cfg['throttle_at']}",
            "",
            "| workload | arm | first step under the throttle | calibration noticed at step "
            "| re-planned at step | mean step ms after | trainplay vs old plan | wall ms/step "
            "after (restart included) | plan it ended on |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for name, w in slow.items():
            keep = _med([r["mean_step_s_after"] for r in w.get("no-calibration", [])])
            keep_wall = _med([r["wall_s_per_step_after"] for r in w.get("no-calibration", [])])
            for arm, runs in w.items():
                step = _med([r["mean_step_s_after"] for r in runs if r["mean_step_s_after"]])
                if not runs or not step:
                    continue
                wall = _med([r["wall_s_per_step_after"] for r in runs])
                ratio = f"{keep / step:.2f}x" if keep and arm == "trainplay" else "-"
                if keep_wall and arm == "trainplay":
                    ratio += f" ({keep_wall / wall:.2f}x wall, restart included)"
                r = runs[-1]
                lines.append(
                    f"| {name} | {arm} | {r['throttled_from_step']} | {r['noticed_at_step']} | "
                    f"{r['replanned_at_step']} | {1e3 * step:.1f} | {ratio} | {1e3 * wall:.1f} "
                    f"| {r['final_plan']} |"
                )
    return "\n".join(lines) + "\n"


def _terminated(signum: int, frame: Any) -> None:
    raise SystemExit(f"stopped by signal {signum}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--steps", type=int, default=200, help="trainplay's steps (acceptance 1)")
    parser.add_argument("--baseline-steps", type=int, default=60, help="DDP's and GPipe's steps")
    parser.add_argument("--workloads", default="cnn,decoder")
    parser.add_argument("--slowdown", default="cnn", help="workloads of acceptance 2 ('' none)")
    parser.add_argument("--slowdown-steps", type=int, default=200)
    parser.add_argument("--throttle-at", type=int, default=40)
    parser.add_argument("--slowdown-repeats", type=int, default=1)
    parser.add_argument("--skip-hetero", action="store_true")
    parser.add_argument(
        "--out", default="hetero_measured", help="results as benchmarks/results/OUT.{md,json}"
    )
    args = parser.parse_args()
    command = "python benchmarks/hetero_measured.py " + " ".join(sys.argv[1:])
    signal.signal(signal.SIGTERM, _terminated)  # `timeout`: clean up the nodes and the cgroup
    results: dict[str, Any] = {
        "config": {**vars(args), "command": command.strip(), "cpus": os.cpu_count()},
        "hetero": {},
        "slowdown": {},
    }
    with tempfile.TemporaryDirectory() as tmp, cgroup() as group:
        workdir = Path(tmp)
        cluster = cluster_file(workdir)
        names = [] if args.skip_hetero else [n for n in args.workloads.split(",") if n]
        plans = {}
        for name in names:
            plans[name] = workdir / f"gpipe-{name}.json"
            gpipe_plan(WORKLOADS[name], cluster, plans[name])

        def hetero(name: str, k: int) -> None:
            w = WORKLOADS[name]
            out = results["hetero"].setdefault(name, {a: [] for a in ARMS})
            set_quota(group, QUOTA_US)
            for arm in ARMS if k % 2 == 0 else ARMS[::-1]:
                run = workdir / f"{name}-{arm}-{k}"
                try:
                    if arm == "trainplay":
                        got = run_trainplay(w, run, cluster, args.steps, group)
                        row = summary_trainplay(got, w["batch"])
                    elif arm == "gpipe":
                        got = run_trainplay(
                            w, run, cluster, args.baseline_steps, group, "--plan", str(plans[name])
                        )
                        row = summary_trainplay(got, w["batch"])
                    else:
                        kept = arm == "ddp-kept-memory"
                        got = run_ddp(w, run, args.baseline_steps, group, kept)
                        steady = got["steps_s"][SETTLE:]
                        row = {
                            "mean_step_s": statistics.fmean(steady),
                            "median_step_s": statistics.median(steady),
                            "wall_s": got["wall_s"],
                        }
                except Exception as exc:  # a failed run is reported, not fatal
                    failed(results, run, f"{name} {arm} {k}", exc)
                    continue
                out[arm].append(row)
                print(name, arm, k, json.dumps(row)[:400], flush=True)
                write(results)

        def slowdown(name: str, k: int) -> None:
            w = WORKLOADS[name]
            out = results["slowdown"].setdefault(name, {"trainplay": [], "no-calibration": []})
            arms = ("trainplay", "no-calibration")
            for arm in arms if k % 2 == 0 else arms[::-1]:
                set_quota(group, -1)
                run = workdir / f"slow-{name}-{arm}-{k}"
                extra = ("--no-calibration",) if arm == "no-calibration" else ()
                try:
                    got = run_trainplay(
                        w, run, cluster, args.slowdown_steps, group, *extra,
                        throttle_at=args.throttle_at,
                    )  # fmt: skip
                    row = slowdown_summary(got, arm == "trainplay")
                except Exception as exc:  # a failed run is reported, not fatal
                    failed(results, run, f"slowdown {name} {arm} {k}", exc)
                    continue
                out[arm].append(row)
                print(name, arm, k, json.dumps(row)[:400], flush=True)
                write(results)

        # rounds: every arm once, then acceptance 2, then the next repeats (a run cut short
        # still has every arm)
        for k in range(max(args.repeats, args.slowdown_repeats)):
            for name in names if k < args.repeats else ():
                hetero(name, k)
            for name in (
                [n for n in args.slowdown.split(",") if n] if k < args.slowdown_repeats else ()
            ):
                slowdown(name, k)
    write(results)
    print(report(results))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "ddp-worker":
        ddp_worker(sys.argv[2:])
    else:
        main()
