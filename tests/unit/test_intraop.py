"""compute_threads: the training thread keeps its team, no other thread starts one."""

import subprocess
import sys
import textwrap

from tests.integration.elastic import free_port

# Runs in its own process: thread counts are process-wide state.
SCRIPT = textwrap.dedent(
    """
    import os, sys, threading
    import torch
    import torch.distributed as dist
    from trainplay.hardware.intraop import compute_threads

    fixed = sys.argv[1] == "fixed"
    if fixed:
        compute_threads(2)
    else:
        torch.set_num_threads(2)
    seen = []
    other = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    other.start()
    other.join()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[2], RANK="0", WORLD_SIZE="1")
    dist.init_process_group("gloo")
    before = len(os.listdir("/proc/self/task"))
    out = [None]
    dist.all_gather_object(out, "x" * 400_000)  # a copy big enough to run in parallel
    after = len(os.listdir("/proc/self/task"))
    dist.destroy_process_group()
    print(torch.get_num_threads(), seen[0], after - before)
    """
)


def _run(mode: str) -> list[int]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode, str(free_port())],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return [int(x) for x in done.stdout.split()]


def test_other_threads_compute_with_one_thread_and_start_no_team():
    mine, others, started = _run("fixed")
    assert mine == 2
    assert others == 1
    assert started == 0


def test_without_it_a_collective_starts_a_second_team():
    """The failure compute_threads prevents: gloo's thread takes the default of two and starts
    an OpenMP team of its own for the gathered copy."""
    mine, others, started = _run("plain")
    assert (mine, others) == (2, 2)
    assert started >= 1
