"""Running a multi-process command in a test: bounded in time, and nothing left behind.

The command gets its own session (process group); on the way out the whole group is killed if
anything of it still runs, and the caller learns whether the command had already left nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str
    left_behind: bool
    """Whether any process of the group outlived the command by more than the grace period."""


def run_bounded(
    command: list[str],
    *,
    timeout_s: float,
    env: dict[str, str] | None = None,
    grace_s: float = 10.0,
) -> Finished:
    """Run ``command`` with a time limit; kill its process group afterwards, whatever happened."""
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
        deadline = time.monotonic() + grace_s
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = group_alive(proc.pid)
    finally:
        if group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return Finished(proc.returncode, stdout, stderr, left)
