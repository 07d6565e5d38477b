"""Intra-op threads for the one thread that computes, and one for every other thread.

``torch.set_num_threads(n)`` sets the calling thread's OpenMP team size and a process-wide
default that any *other* thread takes the first time it runs an ATen operation. Collectives run
on the gloo backend's own threads: a large enough copy there (``all_gather_object`` of a node's
profile, the metadata ``torch.distributed.checkpoint`` gathers when it saves) then starts a
second OpenMP team. Once libgomp manages more threads than the process may use CPUs, it stops
spinning between parallel regions (its "throttled" spin count, GCC's libgomp manual,
``GOMP_SPINCOUNT``): every operation of the training thread then wakes its team with a futex.
Measured on this repository's 2-CPU machine (resnet18, batch 32, 32x32, two threads): after one
400 kB ``all_gather_object`` on a world of one, a plain training step went from ~55 ms at 1.97
CPUs busy to ~105 ms at 1.38, with ~21,000 context switches per 25 steps instead of ~400; the
same after one ``dcp.save``. Destroying the process group afterwards does not undo it.

:func:`compute_threads` gives the calling thread ``n`` threads and makes one the default every
other thread starts with (set from a short-lived helper thread, so the caller keeps its own team
and the BLAS library keeps ``n``), so no other thread ever starts a team.
"""

from __future__ import annotations

import threading

import torch

from trainplay.hardware.machine import usable_cpus

__all__ = ["compute_threads", "share_cpus"]


def compute_threads(n: int) -> None:
    """This thread computes with ``n`` intra-op threads; every thread that has not run an ATen
    operation yet will use one."""
    torch.set_num_threads(n)
    torch.get_num_threads()  # this thread's lazy initialisation, now, while the default is n
    helper = threading.Thread(target=torch.set_num_threads, args=(1,), name="trainplay-intraop")
    helper.start()
    helper.join()


def share_cpus(local_workers: int) -> int:
    """A CPU worker's share of the CPUs this process may use, one of ``local_workers`` on the
    machine (at least one thread), given to this thread by :func:`compute_threads`."""
    threads = max(1, usable_cpus() // local_workers)
    compute_threads(threads)
    return threads
