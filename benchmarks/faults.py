"""Fault campaign: random nodes killed at random moments; every run must end as if nothing happened.

Each run is one elastic job of 3 or 4 one-process ``trainplay train`` nodes on this machine,
rendezvous on a ``trainplay rendezvous`` server (so any node, the first one included, may die),
the job of tests/integration/test_train_elastic.py (deep_mlp on paced data, 24 samples a step,
a checkpoint every 5 steps, SGD with momentum), its checkpoints written synchronously in half the
runs and with ``--checkpoint-async`` in the other half (chosen at random). A node is killed with SIGKILL, its agent and its
workers at once, as when a machine dies, at a moment of one of four kinds:

- **mid-step**: after a random step (3-40) is journaled, a random part of a step later;
- **mid-checkpoint**: while a checkpoint folder is still ``.partial`` (being written);
- **mid-restore**: a first node is killed mid-step; once the new worker group has journaled its
  ``start`` (the workers then build the model and restore the checkpoint), a second node is
  killed before that group's first step (4 nodes, so two remain);
- **mid-rendezvous**: while a rendezvous round is open (read from the server's store with
  torch's own ``C10dRendezvousBackend``: a round not complete, the victim one of its
  participants or waiting nodes), either the job's first round (nodes started a random 0-2 s
  apart) or the round after a first mid-step kill (4 nodes, so two remain).

Each run is then checked as the integration tests check one: the survivors exit 0; the journal's
final trajectory has every step once and every global sample exactly once, in order; every worker
group after the first says why it starts where it does; the final parameters equal one process
trained on the same samples (rtol 1e-4); no process of any node, nor the server, is left. The
moment each kill really fell in is read back from the journal (a kill meant for a restore that
came after the group's first step is reported as such, not counted as a restore).

Reported: per kind, the recovery time (the last kill -> the end of the first step of the worker
group that follows it) and the steps redone (``done.steps_redone``), as distributions.

Writes benchmarks/results/faults.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.elastic import Nodes, free_port, nodes, wait_listening  # noqa: E402
from tests.integration.test_train_elastic import (  # noqa: E402
    check_parameters,
    check_trajectory,
    job_args,
)
from torch.distributed import TCPStore  # noqa: E402
from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import (  # noqa: E402
    C10dRendezvousBackend,
)

from trainplay.runtime.journal import read_journal  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
KINDS = ("mid-step", "mid-checkpoint", "mid-restore", "mid-rendezvous")
STEPS = 80
RUN_ID = "faults"
POLL_S = 0.005
WAIT_S = 180.0


class Missed(Exception):
    """The moment a kill was meant for did not come (the job moved past it first)."""


def events(journal: Path) -> list[dict]:
    return read_journal(journal) if journal.exists() else []


def until(condition, timeout_s: float = WAIT_S):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = condition()
        if got:
            return got
        time.sleep(POLL_S)
    raise Missed(f"timed out after {timeout_s:.0f} s waiting for {condition.__name__}")


def open_round(store: TCPStore) -> set[int] | None:
    """Agent pids of an open rendezvous round (participants and waiting nodes), or ``None``."""
    got = C10dRendezvousBackend(store, RUN_ID).get_state()
    if got is None:
        return None
    state = pickle.loads(got[0])
    if state.complete or state.closed:
        return {n.pid for n in state.wait_list} or None
    return {n.pid for n in state.participants} | {n.pid for n in state.wait_list} or None


class Run:
    """One job, its server, and the kills made in it."""

    def __init__(self, workdir: Path, job: Nodes, store: TCPStore, rng: random.Random):
        self.workdir, self.job, self.store, self.rng = workdir, job, store, rng
        self.journal = workdir / "journal.jsonl"
        self.kills: list[dict] = []

    def alive(self) -> list[int]:
        killed = {k["node"] for k in self.kills}
        return [k for k in range(len(self.job.procs)) if k not in killed]

    def kill(self, node: int, meant: str) -> None:
        self.job.kill(node, workers=True)
        self.kills.append({"node": node, "meant": meant, "time_s": time.time()})

    def kill_random(self, meant: str) -> None:
        self.kill(self.rng.choice(self.alive()), meant)

    def mid_step(self) -> None:
        after = self.rng.randint(3, 40)

        def step_journaled():
            return next((e for e in events(self.journal) if e["event"] == "step"
                         and e["step"] >= after), None)  # fmt: skip

        seen = until(step_journaled)
        time.sleep(self.rng.uniform(0, 1) * seen["step_s"])
        self.kill_random("mid-step")

    def mid_checkpoint(self) -> None:
        ckpt, after = self.workdir / "ckpt", self.rng.choice((5, 10, 15, 20, 25))

        def writing():
            return [p for p in ckpt.glob("step-*.partial") if _step(p) > after]

        until(writing)
        self.kill_random("mid-checkpoint")

    def mid_restore(self) -> None:
        self.mid_step()
        killed_s = self.kills[-1]["time_s"]

        def new_group():
            return next((e for e in events(self.journal) if e["event"] == "start"
                         and e["time_s"] > killed_s), None)  # fmt: skip

        until(new_group)
        time.sleep(self.rng.uniform(0, 0.05))
        self.kill_random("mid-restore")

    def mid_rendezvous(self, first_round: bool) -> None:
        if not first_round:
            self.mid_step()
        pids = {self.job.procs[k].pid: k for k in self.alive()}
        waiting = until(lambda: (open_round(self.store) or set()) & pids.keys(), 120)
        self.kill(pids[self.rng.choice(sorted(waiting))], "mid-rendezvous")


def _step(path: Path) -> int:
    return int(path.name.split("-")[1].split(".")[0])


def landed(kill: dict, journal: list[dict]) -> str:
    """Where a kill really fell, from the journal."""
    before = [e for e in journal if e["time_s"] <= kill["time_s"]]
    after = [e for e in journal if e["time_s"] > kill["time_s"]]
    last = before[-1]["event"] if before else None
    if kill["meant"] == "mid-restore":  # between a group's start and its first step
        return "mid-restore" if last in ("start", "replan") else "mid-step (restore done)"
    if kill["meant"] == "mid-rendezvous":
        return "mid-rendezvous"  # read from the store's open round at the kill
    if kill["meant"] == "mid-checkpoint":
        return "mid-checkpoint"  # a .partial folder was there at the kill
    return "mid-step" if any(e["event"] == "step" for e in after) or last == "step" else last


def recovery(kill: dict, journal: list[dict]) -> float | None:
    """Seconds from ``kill`` to the end of the first step of the next worker group."""
    start = next((e for e in journal if e["event"] == "start"
                  and e["time_s"] > kill["time_s"]), None)  # fmt: skip
    if start is None:
        return None
    step = next((e for e in journal if e["event"] == "step"
                 and e["time_s"] > start["time_s"]), None)  # fmt: skip
    return None if step is None else round(step["time_s"] - kill["time_s"], 3)


def one_run(k: int, kind: str, rng: random.Random, keep: Path) -> dict:
    first_round = kind == "mid-rendezvous" and rng.random() < 0.5
    two_kills = kind == "mid-restore" or (kind == "mid-rendezvous" and not first_round)
    n = 4 if two_kills else rng.choice((3, 4))  # two kills leave the minimum of 2 nodes
    asynchronous = rng.random() < 0.5
    tmp = Path(tempfile.mkdtemp(prefix=f"run{k:02d}-", dir=keep))
    port = free_port()
    (tmp / "server").mkdir()
    serve = ["-m", "trainplay", "rendezvous", "--host", "127.0.0.1", "--port", str(port)]
    args = [*job_args(tmp, f"2:{n}", port, STEPS), "--max-restarts", "8", "--run-id", RUN_ID]
    args += ["--checkpoint-async"] if asynchronous else []
    row: dict = {"run": k, "kind": kind, "nodes": n, "first_round": first_round,
                 "checkpoints": "async" if asynchronous else "sync"}  # fmt: skip
    began = time.time()
    with nodes(tmp / "server", [], serve) as server, nodes(tmp, args) as job:
        server.start()
        if not wait_listening(port, 60):
            raise RuntimeError(server.log(0))
        store = TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=30))
        run = Run(tmp, job, store, rng)
        for _ in range(n):
            job.start()
            if first_round:
                time.sleep(rng.uniform(0, 2 / n))
        try:
            if kind == "mid-rendezvous":
                run.mid_rendezvous(first_round)
            else:
                getattr(run, kind.replace("-", "_"))()
        except Missed as exc:
            row["error"] = f"no kill: {exc}"
        job.snapshot()
        codes = {}
        for node in run.alive():
            try:
                codes[node] = job.wait(node, 300)
            except subprocess.TimeoutExpired:  # a hang is a finding
                codes[node] = "hung"
        left = {node: sorted(job.left_behind(node)) for node in range(n)}
        server.procs[0].terminate()
        try:
            server_code = server.wait(0, 30)
        except subprocess.TimeoutExpired:
            server_code = "hung"
        left["server"] = sorted(server.left_behind(0))
    row["wall_s"] = round(time.time() - began, 2)
    journal = events(tmp / "journal.jsonl")
    row["kills"] = [{**kill, "landed": landed(kill, journal)} for kill in run.kills]
    row["killed_first_node"] = any(kill["node"] == 0 for kill in run.kills)
    row["exit_codes"] = codes
    row["server_exit"] = server_code
    row["left_behind"] = {str(a): b for a, b in left.items() if b}
    if run.kills:
        row["recovery_s"] = recovery(run.kills[-1], journal)
    done = journal[-1] if journal and journal[-1]["event"] == "done" else {}
    row["steps_redone"] = done.get("steps_redone")
    row["restored_step"] = [e["step"] for e in journal if e["event"] == "restore"]

    def exits() -> None:
        assert all(c == 0 for c in codes.values()), f"exit codes {codes}"

    def nothing_left() -> None:
        assert not row["left_behind"], f"left running: {row['left_behind']}"
        assert server_code == 0, f"the server exited {server_code}"

    checks = []
    for name, check in (
        ("exit 0", exits),
        ("nothing left", nothing_left),
        ("every sample once", lambda: check_trajectory(tmp / "journal.jsonl", STEPS)),
        ("parameters", lambda: check_parameters(tmp, STEPS)),
    ):
        try:
            check()
            checks.append(name)
        except Exception as exc:  # recorded, the campaign goes on
            checks.append(f"FAILED {name}: {str(exc)[:300]}")
    row["checks"] = checks
    row["ok"] = not any(c.startswith("FAILED") for c in checks) and "error" not in row
    row["workdir"] = None if row["ok"] else str(tmp)
    if row["ok"] and not os.environ.get("FAULTS_KEEP"):  # keep every run's logs if set
        shutil.rmtree(tmp, ignore_errors=True)
    return row


def summary(values: list[float]) -> str:
    if not values:
        return "-"
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return f"{min(values):.2f} / {q[0]:.2f} / {q[1]:.2f} / {q[2]:.2f} / {max(values):.2f}"


def write(rows: list[dict], args: argparse.Namespace) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "faults.json").write_text(json.dumps({"runs": rows}, indent=1))
    ok = sum(r["ok"] for r in rows)
    lines = [
        "# Fault campaign: random nodes killed at random moments",
        "",
        f"`python benchmarks/faults.py --runs {args.runs} --seed {args.seed}` on this machine "
        f"(2 shared cores): {len(rows)} runs, {ok} passed every check (survivors exit 0, every "
        "sample once in order, journal complete, final parameters equal one process's, no "
        "process left). Nodes: one-process `trainplay train` agents on a `trainplay "
        f"rendezvous` server; {STEPS} steps of 24 samples, a checkpoint every 5.",
        "",
        "Checkpoints: "
        + "; ".join(
            f"{mode} in {sum(r.get('checkpoints') == mode for r in rows)} runs "
            f"({sum(r['ok'] for r in rows if r.get('checkpoints') == mode)} passed)"
            for mode in ("sync", "async")
        )
        + ".",
        "",
        "## Per kind of moment (where the kill really fell, read back from the journal)",
        "",
        "Recovery: seconds from the last kill to the end of the first step of the worker group "
        "after it. Distributions as min / 25% / median / 75% / max.",
        "",
        "| kill landed | runs | passed | recovery s | steps redone |",
        "|---|---|---|---|---|",
    ]
    by: dict[str, list[dict]] = {}
    for r in rows:
        if r.get("kills"):
            by.setdefault(r["kills"][-1]["landed"], []).append(r)
    for kind, group in sorted(by.items()):
        rec = [r["recovery_s"] for r in group if r.get("recovery_s") is not None]
        redone = [float(r["steps_redone"]) for r in group if r.get("steps_redone") is not None]
        lines.append(
            f"| {kind} | {len(group)} | {sum(r['ok'] for r in group)} | {summary(rec)} | "
            f"{summary(redone)} |"
        )
    lines += [
        "",
        "## Every run",
        "",
        "| run | meant | nodes | checkpoints | killed (node: landed) | first node killed "
        "| recovery s | steps redone | restored from | wall s | checks |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        kills = ", ".join(f"{k['node']}: {k['landed']}" for k in r.get("kills", [])) or "-"
        failed = [c for c in r["checks"] if c.startswith("FAILED")] + (
            [r["error"]] if "error" in r else []
        )
        lines.append(
            f"| {r['run']} | {r['kind']}{' (first round)' if r['first_round'] else ''} | "
            f"{r['nodes']} | {r.get('checkpoints', '-')} | {kills} | "
            f"{'yes' if r['killed_first_node'] else 'no'} | "
            f"{r.get('recovery_s', '-')} | {r.get('steps_redone', '-')} | "
            f"{r.get('restored_step', '-')} | {r['wall_s']} | "
            f"{'; '.join(failed) if failed else 'all passed'} |"
        )
    (RESULTS / "faults.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=24, help="runs, the kinds in turn (>= 4)")
    parser.add_argument("--seed", type=int, default=0, help="seeds every random choice")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated kinds to run")
    parser.add_argument("--keep", default=None, help="folder for failed runs' logs")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    if bad := [k for k in kinds if k not in KINDS]:
        parser.error(f"unknown kind {bad[0]!r}; choose from {', '.join(KINDS)}")
    rng = random.Random(args.seed)
    order = [kinds[k % len(kinds)] for k in range(args.runs)]
    rng.shuffle(order)
    keep = Path(args.keep or tempfile.mkdtemp(prefix="trainplay-faults-"))
    keep.mkdir(parents=True, exist_ok=True)
    rows = []
    for k, kind in enumerate(order):
        try:
            rows.append(one_run(k, kind, rng, keep))
        except Exception:  # the campaign reports it and goes on
            rows.append({"run": k, "kind": kind, "nodes": 0, "first_round": False,
                         "killed_first_node": False, "wall_s": 0, "ok": False,
                         "checks": [f"FAILED run: {traceback.format_exc()[-400:]}"]})  # fmt: skip
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "checks"}), flush=True)
        write(rows, args)
    print(f"{sum(r['ok'] for r in rows)} of {len(rows)} runs passed every check; failed runs' "
          f"folders under {keep}")  # fmt: skip


if __name__ == "__main__":
    main()
