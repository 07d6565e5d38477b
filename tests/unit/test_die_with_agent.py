"""A worker program dies with its agent: torchrun starts each worker in a session of its own, so
killing the launcher's process group (a time-limited test, ``kill -9`` of ``trainplay train``)
does not reach the workers; :func:`trainplay.launch.die_with_agent` does."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")

PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    child = subprocess.Popen(
        [sys.executable, "-c", sys.argv[1]], stdout=subprocess.PIPE, text=True,
        start_new_session=True,  # as torchrun starts its workers
    )
    print(child.pid, child.stdout.readline().strip(), flush=True)
    time.sleep(120)
    """
)
CHILD = "from trainplay.launch import die_with_agent\n{call}\nprint('ready', flush=True)\nimport time\ntime.sleep(120)"


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _orphan_survives(call: str) -> bool:
    """Start a parent whose child (a session of its own) runs ``call``, kill the parent with
    SIGKILL, and tell whether the child still runs two seconds later (it is killed then)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, CHILD.format(call=call)], stdout=subprocess.PIPE,
        text=True, env=env,
    )  # fmt: skip
    child = None
    try:
        pid, ready = parent.stdout.readline().split()
        child = int(pid)
        assert ready == "ready"
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 2.0
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        return _alive(child)
    finally:
        parent.kill()
        parent.wait()
        if child is not None and _alive(child):
            os.kill(child, signal.SIGKILL)


def test_a_worker_that_asked_dies_with_its_agent():
    assert not _orphan_survives("die_with_agent()")


def test_without_asking_it_would_outlive_it():
    assert _orphan_survives("pass")


@pytest.mark.parametrize(
    "module",
    [
        "trainplay.runtime.worker",
        "trainplay.hardware.measure.worker",
        "trainplay.roofline.validate_worker",
    ],
)
def test_every_worker_program_asks_first(module, monkeypatch):
    worker = importlib.import_module(module)

    class Asked(Exception):
        pass

    def asked(*_: object) -> None:
        raise Asked

    monkeypatch.setattr(worker, "die_with_agent", asked)
    with pytest.raises(Asked):
        worker.main([])
