"""The rendezvous store on its own: no training node is a single point of failure.

torchrun's c10d rendezvous keeps its state in a ``TCPStore`` hosted by the agent that binds
``--rdzv-endpoint`` first; when that node dies, every other agent loses the rendezvous and the
job dies with it. ``trainplay rendezvous --host H --port P`` runs PyTorch's own ``TCPStore``
server by itself (:func:`serve`: no agent, no worker, no training) and marks it with
:data:`SERVER_KEY`. An agent started with ``--rdzv-endpoint H:P`` finds the mark
(:func:`serves_rendezvous`) and joins the store as a client (the c10d backend's ``is_host``
set to false), so every training node is alike: any of them, the first one included, may
die and the others go on. The workers' own store is unaffected: each round, the agents publish a
new ``MASTER_ADDR`` (``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1``, see the launcher) and worker rank
0 of that round hosts it.

On a cluster this is one small process on a machine that stays up for the job (the head node, a
login node, a scheduler's service host); it holds a few keys per node and uses no accelerator.
It serves every ``--run-id``; a finished job closes its own run id, so a new job takes a new one.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from datetime import timedelta

from torch.distributed import TCPStore

from trainplay.errors import UsageError

__all__ = ["SERVER_KEY", "serve", "serves_rendezvous"]

SERVER_KEY = "trainplay/rendezvous-server"
"""Set in a store that :func:`serve` runs; agents that find it join without hosting."""


def serve(host: str, port: int, *, ready: str | None = None) -> int:
    """Serve the store on ``host:port`` until SIGINT or SIGTERM; the signal's number. ``ready``
    is printed to stderr once the store listens."""
    try:
        store = TCPStore(
            host, port, is_master=True, wait_for_workers=False, multi_tenant=True,
            timeout=timedelta(seconds=30),
        )  # fmt: skip
    except (RuntimeError, ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(
            f"cannot serve the rendezvous on {host}:{port}: {first[:160]}; "
            "is the port in use? give another --port"
        ) from None
    stop = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)  # taken by sigwait below, not a traceback
    store.set(SERVER_KEY, str(os.getpid()))
    if ready:
        sys.stderr.write(ready + "\n")
        sys.stderr.flush()
    return signal.sigwait(stop)


def serves_rendezvous(host: str, port: int, timeout_s: float = 2.0) -> bool:
    """Whether ``host:port`` is a store that :func:`serve` runs (not an agent's)."""
    try:  # nothing listening: say so at once, not after the store client's retries
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError:
        return False
    client = store_client(host, port, timeout_s)
    return client is not None and client.check([SERVER_KEY])


def store_client(host: str, port: int, timeout_s: float) -> TCPStore | None:
    """A client of the c10d store at ``host:port``, or ``None`` when none answers in time. The C++
    client logs its retries to stderr: they are kept quiet."""
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        return TCPStore(host, port, is_master=False, timeout=timedelta(seconds=timeout_s))
    except Exception:
        return None
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
