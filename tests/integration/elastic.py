"""Starting, watching and killing ``trainplay train`` nodes (agents) in elastic tests and benchmarks.

Each node is one ``python -m trainplay train`` in its own session (process group), so killing a
node with SIGKILL takes its agent and its workers at once, as when a machine dies, and cleaning up
kills by group id, never by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.integration.processes import group_alive
from trainplay.runtime.journal import read_journal
from trainplay.runtime.nodes import NAME_ENV

ROOT = Path(__file__).resolve().parents[2]
SLOW_CLUSTER = ROOT / "tests" / "data" / "clusters" / "slow-cpu.yaml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gloo_ranks(script: str, world: int = 2, timeout_s: float = 120) -> list[tuple[int, str, str]]:
    """``python -c script`` as each of ``world`` ranks of one group rendezvousing on 127.0.0.1 (a
    free port, ``RANK`` and ``WORLD_SIZE`` set): every rank's exit code, stdout and stderr. A rank
    still running after ``timeout_s`` is killed by its process id."""
    port = str(free_port())
    procs = []
    try:
        for rank in range(world):
            env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
                   "RANK": str(rank), "WORLD_SIZE": str(world)}  # fmt: skip
            procs.append(
                subprocess.Popen([sys.executable, "-c", script], env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            )  # fmt: skip
        done = [p.communicate(timeout=timeout_s) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, done, strict=True)]


def wait_listening(port: int, timeout_s: float) -> bool:
    """Whether something listens on ``127.0.0.1:port`` within ``timeout_s`` (polling)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (torchrun starts workers in sessions of their own)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


class Nodes:
    """The ``trainplay train`` nodes of one job."""

    def __init__(self, workdir: Path, args: list[str], program: list[str] | None = None):
        self.workdir = workdir
        self.args = args
        self.program = program or ["-m", "trainplay", "train"]
        """What each node runs with the interpreter (default: ``trainplay train``)."""
        self.procs: list[subprocess.Popen] = []
        self.seen: list[set[int]] = []
        """Processes seen below each node's agent (its workers)."""

    def snapshot(self) -> None:
        """Note every node's workers, to check later that none outlived its node."""
        for k, proc in enumerate(self.procs):
            self.seen[k] |= descendants(proc.pid)

    def start(self, *extra: str, name: str | None = None) -> subprocess.Popen:
        """Start the next node, named ``node<k>`` (or ``name``: a rerun of an earlier node)."""
        k = len(self.procs)
        log = (self.workdir / f"node{k}.log").open("w")
        # nodes on one host need names of their own (the default is the host name)
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "COLUMNS": "200",
            NAME_ENV: name or f"node{k}",
        }
        proc = subprocess.Popen(
            [sys.executable, *self.program, *self.args, *extra],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        self.procs.append(proc)
        self.seen.append(set())
        return proc

    def start_host(self, port: int, timeout_s: float = 60) -> None:
        """Start node 0 and wait until it hosts the rendezvous on ``port``: the c10d store lives
        in the agent that binds the endpoint first, and the node that hosts it must stay."""
        self.start()
        if wait_listening(port, timeout_s):
            return
        raise AssertionError(f"node 0 did not open the rendezvous port:\n{self.log(0)}")

    def log(self, k: int) -> str:
        return (self.workdir / f"node{k}.log").read_text()

    def kill(self, k: int, *, workers: bool = False) -> None:
        """SIGKILL node ``k``'s agent (its process group); with ``workers``, every process below
        the agent too, as if the machine died (torchrun starts workers in sessions of their own,
        so without it plain torchrun's workers outlive their agent; trainplay's die with it)."""
        below = descendants(self.procs[k].pid)
        self.seen[k] |= below
        os.killpg(self.procs[k].pid, signal.SIGKILL)
        for pid in below if workers else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.procs[k].wait()

    def wait(self, k: int, timeout_s: float) -> int:
        return self.procs[k].wait(timeout=timeout_s)

    def left_behind(self, k: int, grace_s: float = 10.0) -> set[int]:
        """Node ``k``'s processes still alive ``grace_s`` after it ended (its agent's group and
        every worker seen below it)."""
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            left = {p for p in self.seen[k] if alive(p)}
            if not left and not group_alive(self.procs[k].pid):
                return set()
            time.sleep(0.1)
        return {p for p in self.seen[k] if alive(p)} | (
            {self.procs[k].pid} if group_alive(self.procs[k].pid) else set()
        )

    def cleanup(self) -> None:
        """Kill what is left: each node's process group and every process ever seen below its
        agent (plain torchrun's workers outlive their agent in sessions of their own)."""
        self.snapshot()
        for k, proc in enumerate(self.procs):
            if group_alive(proc.pid):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            for pid in self.seen[k]:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)


@contextmanager
def nodes(workdir: Path, args: list[str], program: list[str] | None = None) -> Iterator[Nodes]:
    job = Nodes(workdir, args, program)
    try:
        yield job
    finally:
        job.cleanup()


def wait_for(
    journal: Path, condition: Callable[[dict[str, Any]], bool], timeout_s: float
) -> dict[str, Any] | None:
    """The first journal event that meets ``condition`` (polling), or ``None`` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if journal.exists():
            for event in read_journal(journal):
                if condition(event):
                    return event
        time.sleep(0.02)
    return None


def dump(path: Path) -> str:
    return json.dumps(read_journal(path)[-12:], indent=1) if path.exists() else "(no journal)"
