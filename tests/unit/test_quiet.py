"""The quiet check: CPU time of other processes during a sample counts, our own tree's does not."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from trainplay.hardware.measure.quiet import Quiet

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="needs Linux's /proc")

SPIN = "import time\nend = time.time() + 30\nwhile time.time() < end: pass"


def _spinner(**kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SPIN], **kwargs)


def _others(quiet: Quiet, seconds: float = 0.6) -> float:
    time.sleep(0.2)  # the spinner is up
    quiet.start()
    time.sleep(seconds)
    return quiet.others_cores()


def test_a_busy_process_outside_our_tree_is_others_use():
    spinner = _spinner(start_new_session=True)
    idle = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        # "ourselves" is an idle process with no children: the spinner is someone else
        assert _others(Quiet(root=idle.pid)) > 0.5
    finally:
        for one in (spinner, idle):
            os.killpg(one.pid, signal.SIGKILL)
            one.wait()


def test_a_busy_child_of_ours_is_not_others_use():
    spinner = _spinner(start_new_session=True)
    try:
        # the same busy process, now in the tree of the root the check is given
        assert _others(Quiet(root=os.getpid())) < 0.5
    finally:
        os.killpg(spinner.pid, signal.SIGKILL)
        spinner.wait()
