"""A worker program dies with its agent: torchrun starts each worker in a session of its own, so
killing the launcher's process group (as a time-limited test does, or ``kill -9`` of
``trainplay train``) does not reach the workers; :func:`trainplay.launch.die_with_agent` does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from ``/proc``)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_for(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def _progress(temp: Path) -> float:
    """What the measure worker last wrote to its launcher's progress file (0 before)."""
    for path in temp.glob("trainplay-measure-*/progress"):
        try:
            return float(path.read_text() or 0)
        except (OSError, ValueError):
            return 0.0
    return 0.0


def test_a_measure_worker_dies_when_its_launcher_is_killed(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TRAINPLAY_CACHE_DIR": str(tmp_path), "TMPDIR": str(temp)}
    command = [sys.executable, "-m", "trainplay", "hw", "measure", "--quick", "--no-cache"]
    launcher = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    workers: list[int] = []
    try:
        # the worker has reported progress: it is in its measurement, past die_with_agent()
        assert _wait_for(lambda: _progress(temp) > 0, 300), "the worker reported no progress"
        workers = _children(launcher.pid)
        assert workers and all(_alive(w) for w in workers)
        os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait()
        assert _wait_for(lambda: not any(_alive(w) for w in workers), 10), "a worker outlived it"
    finally:
        for pid in [launcher.pid, *workers]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        launcher.wait()
