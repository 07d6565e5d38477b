"""One node of an elastic training job: torchrun's elastic agent, tuned to recover in seconds.

``trainplay train`` runs :func:`launch` once per node, as ``torchrun`` would be run: the agent
(``LocalElasticAgent``, what torchrun runs) joins the c10d rendezvous, starts
``python -m trainplay.runtime.worker`` per local rank, and restarts the worker group when a
worker fails or a node waits to join. What trainplay changes, and why:

- **Fast failure detection.** torchrun's defaults wait 30 s of ``last_call`` before closing a
  rendezvous round and 5 s x 3 missed heartbeats before a silent node is dropped; a job that lost
  a node here took about 75 s to resume. The workers detect a lost peer at once (gloo reports the
  closed connection; a collective that hangs is cut off after ``--collective-timeout``), their
  agent restarts them, and the new round closes ``LAST_CALL_S`` after the minimum is reached.
  A node that stops without closing its connections is dropped after
  ``KEEP_ALIVE_S x KEEP_ALIVE_ATTEMPTS`` seconds of missed heartbeats.
- **Timestamps for the journal.** The agent notes when it saw the failure or the waiting node in
  ``TRAINPLAY_CHANGE_AT`` / ``TRAINPLAY_CHANGE`` of the next workers' environment, so the
  ``restore`` event can say how long recovery took.
- **Messages.** One line on stderr for each restart: a failed worker, or a joining node.
- **Failures classified.** A worker that stops on the user's or the data's error (a plan for
  other devices, an unwritable checkpoint directory, nothing intact to restore) prints it in one
  line and exits with :data:`EXIT_USAGE`; the agent then stops at once, without a restart: the
  same error would come back on every try. Only other failures (a lost peer, a crash) use up
  ``--max-restarts``.
- **Planned stops lose nothing.** A signalled agent (Ctrl-C, SIGTERM) gives its workers
  ``STOP_S`` to finish the step in flight and checkpoint (as a restart for a join does), then
  re-raises torch's ``SignalException`` for the caller to exit ``128 + signal``.
- **Nothing left behind.** The exit barrier waits ``EXIT_BARRIER_S`` (not 300 s) for the other
  agents; the workers are stopped on every way out (this process's own signal handlers included).
- **Joins that work.** In torch 2.14 a node joining a running job waits forever for the new
  round's ``MASTER_ADDR``: the agent of rank 0 publishes it only in the first round when it shares
  its TCP store with the workers (``dynamic_rendezvous.py``, ``next_rendezvous``). trainplay sets
  ``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1``, torch's own opt-out, so every round publishes it.
- **No node is a single point of failure** with ``trainplay rendezvous`` serving the store at
  the endpoint (:mod:`trainplay.runtime.rendezvous`): the agent finds its mark and joins as a
  client. Otherwise, as torchrun, the first agent at the endpoint hosts the store and must stay.
- **A round whose rank 0 dies as it closes.** In a new round the agent of rank 0 publishes the
  workers' ``MASTER_ADDR``; a node killed after the round closed with it but before it published
  leaves the others waiting for the key until the store's 60 s timeout, and torch's agent then
  ends the job with a ``DistStoreError`` traceback (found by ``benchmarks/faults.py``). The
  agent instead joins the next round (which leaves the dead node out once its heartbeats stop),
  up to ``ROUND_RETRIES`` times, saying so in one line.
- **Loopback unless told.** Without ``--rdzv-endpoint`` the rendezvous listens on 127.0.0.1.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import uuid
from collections.abc import Sequence

from torch.distributed import DistStoreError
from torch.distributed.elastic.agent.server.api import WorkerSpec, WorkerState
from torch.distributed.elastic.agent.server.local_elastic_agent import LocalElasticAgent
from torch.distributed.elastic.multiprocessing.api import SignalException
from torch.distributed.elastic.rendezvous import RendezvousClosedError, RendezvousParameters
from torch.distributed.elastic.rendezvous import registry as rdzv_registry

from trainplay.errors import TrainplayError, UsageError
from trainplay.launch import agent_logs, quiet_agent
from trainplay.runtime.rendezvous import serves_rendezvous, store_client

__all__ = [
    "EXIT_BARRIER_S",
    "EXIT_REPLAN",
    "EXIT_USAGE",
    "KEEP_ALIVE_ATTEMPTS",
    "KEEP_ALIVE_S",
    "LAST_CALL_S",
    "ROUND_RETRIES",
    "StoppedOnError",
    "TrainingFailed",
    "check_endpoint",
    "launch",
]

LAST_CALL_S = 1
"""Seconds a rendezvous round stays open for more nodes once the minimum has joined."""
KEEP_ALIVE_S = 1
"""Seconds between an agent's heartbeats."""
KEEP_ALIVE_ATTEMPTS = 3
"""Heartbeats a node may miss before the rendezvous drops it."""
EXIT_BARRIER_S = 60
"""Seconds an agent whose workers finished waits for the other agents."""
STOP_S = 30
"""Seconds an agent that was signalled gives its workers to finish their step and checkpoint
(:mod:`trainplay.runtime.stopping`) before it kills them; torchrun's own default."""

ROUND_RETRIES = 3
"""New rounds an agent joins when the one it joined never published its ``MASTER_ADDR``."""

EXIT_USAGE = 2
"""A worker's exit status for an error of the user's or the data's: never retried."""
EXIT_REPLAN = 4
"""A worker's exit status after it checkpointed for a plan that suits the measured speeds better
(:mod:`trainplay.runtime.calibration`): restarted, not counted against ``--max-restarts``."""

LAUNCHED_AT = "TRAINPLAY_LAUNCHED_AT"
"""Unix time this node's launch began: the job's start when nothing is there to resume."""
ROUND_AT = "TRAINPLAY_ROUND_AT"
"""Unix time this node's latest rendezvous round closed, just before its workers were started:
what follows (processes, imports, plan, build, restore) is what any restart costs again, where
the wait for the other nodes before the first round is not."""
CHANGE_AT = "TRAINPLAY_CHANGE_AT"
CHANGE = "TRAINPLAY_CHANGE"


class TrainingFailed(TrainplayError):
    """The workers failed more often than ``--max-restarts`` allows."""

    exit_code = 1


class StoppedOnError(TrainplayError):
    """The workers stopped on an error of the user's or the data's, which they printed."""

    exit_code = EXIT_USAGE


def check_endpoint(endpoint: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port); a remote host must answer on the port (2 s)."""
    host, _, port_text = endpoint.rpartition(":")
    if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise UsageError(f"--rdzv-endpoint takes HOST:PORT, got {endpoint!r}")
    port = int(port_text)
    try:
        address = socket.gethostbyname(host)
    except OSError:
        raise UsageError(
            f"cannot resolve the rendezvous host {host!r} of --rdzv-endpoint; check the name"
        ) from None
    local = address.startswith("127.") or host in (socket.gethostname(), socket.getfqdn())
    if not local and not _store_answers(address, port):
        raise UsageError(
            f"cannot reach the rendezvous endpoint {endpoint}: no c10d store answers there; "
            "start the first node on that host, or fix --rdzv-endpoint"
        )
    return host, port


def _store_answers(address: str, port: int, timeout_s: float = 5.0) -> bool:
    """Whether a c10d TCP store answers at ``address:port`` (a plain TCP connect is not enough:
    proxies accept connections for anything)."""
    return store_client(address, port, timeout_s) is not None


class _Agent(LocalElasticAgent):
    """torchrun's agent, plus a timestamp and a message for each restart, and no restart after
    a worker's :data:`EXIT_USAGE`."""

    _replan = False

    def _monitor_workers(self, worker_group):  # type: ignore[no-untyped-def]
        result = super()._monitor_workers(worker_group)
        codes = {f.exitcode for f in result.failures.values()} if result.is_failed() else set()
        if EXIT_USAGE in codes:
            self._remaining_restarts = 0  # _invoke_run then stops the workers and returns
        elif codes == {EXIT_REPLAN}:
            self._replan = True
            self._remaining_restarts += 1  # _invoke_run takes one off for the restart
        return result

    def _rendezvous(self, worker_group) -> None:  # type: ignore[no-untyped-def]
        for retry in range(ROUND_RETRIES + 1):
            try:
                super()._rendezvous(worker_group)
                os.environ[ROUND_AT] = repr(time.time())
                return None
            except DistStoreError:
                if retry == ROUND_RETRIES:
                    raise TrainingFailed(
                        f"{ROUND_RETRIES + 1} rendezvous rounds in a row closed without their "
                        "rank 0 publishing its address; check that the nodes can reach each other"
                    ) from None
                sys.stderr.write(
                    "trainplay: the rendezvous round's rank 0 never published its address (its "
                    "node died as the round closed); joining the next round\n"
                )
                sys.stderr.flush()
        return None

    def _restart_workers(self, worker_group) -> None:  # type: ignore[no-untyped-def]
        cause = "failure" if worker_group.state != WorkerState.HEALTHY else "membership"
        cause = "replan" if self._replan else cause
        self._replan = False
        os.environ[CHANGE_AT] = repr(time.time())
        os.environ[CHANGE] = cause
        if cause == "replan":
            what = "the workers checkpointed for a plan that suits the measured speeds"
            left = "re-plans do not count as restarts"
        elif cause == "failure":
            what = "a worker stopped (a node left or failed)"
            left = f"{self._remaining_restarts} of {worker_group.spec.max_restarts} restarts left"
        else:
            what = "a node is waiting in the rendezvous (one joining, or one restarting)"
            left = "membership changes do not count as restarts"
        sys.stderr.write(f"trainplay: {what}; restarting the workers ({left})\n")
        sys.stderr.flush()
        super()._restart_workers(worker_group)


def launch(
    worker_args: Sequence[str],
    *,
    nproc: int,
    nnodes: tuple[int, int],
    rdzv_endpoint: str | None,
    run_id: str | None,
    max_restarts: int,
    env: dict[str, str],
) -> None:
    """Run this node's workers until the job ends; raise :class:`TrainingFailed` if it fails."""
    if nnodes[1] > 1 and not rdzv_endpoint:
        raise UsageError(
            "several nodes need --rdzv-endpoint HOST:PORT, the same on every node "
            "(the first node started there hosts the rendezvous)"
        )
    os.environ.update(env)
    os.environ["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"  # see "Joins that work" above
    os.environ[LAUNCHED_AT] = repr(time.time())
    for name in (ROUND_AT, CHANGE_AT, CHANGE):
        os.environ.pop(name, None)
    hosted = {}
    if rdzv_endpoint:
        host, _, port = rdzv_endpoint.rpartition(":")
        if serves_rendezvous(host, int(port)):  # `trainplay rendezvous`: join it, host nothing
            hosted = {"is_host": False}
    params = RendezvousParameters(
        backend="c10d",
        endpoint=rdzv_endpoint or "127.0.0.1:0",
        run_id=run_id or f"trainplay-{uuid.uuid4().hex[:8]}",
        min_nodes=nnodes[0],
        max_nodes=nnodes[1],
        last_call_timeout=LAST_CALL_S,
        keep_alive_interval=KEEP_ALIVE_S,
        keep_alive_max_attempt=KEEP_ALIVE_ATTEMPTS,
        close_timeout=10,
        **hosted,
    )
    with quiet_agent(), agent_logs() as logs:
        handler = rdzv_registry.get_rendezvous_handler(params)
        spec = WorkerSpec(
            role="trainplay",
            local_world_size=nproc,
            entrypoint=sys.executable,
            args=("-m", "trainplay.runtime.worker", *worker_args),
            rdzv_handler=handler,
            max_restarts=max_restarts,
            monitor_interval=0.1,
        )
        agent = _Agent(
            spec=spec,
            logs_specs=logs,
            start_method="spawn",
            exit_barrier_timeout=EXIT_BARRIER_S,
            shutdown_timeout=STOP_S,
        )
        close = True
        try:
            result = agent.run()
        except SignalException:
            close = False  # as torchrun: a signalled agent leaves the rendezvous open for others
            raise
        except RendezvousClosedError:
            raise TrainingFailed(
                "another node closed the job (see its messages); this node stops too"
            ) from None
        finally:
            if close:
                handler.shutdown()
    if result.is_failed():
        codes = sorted({f.exitcode for f in result.failures.values()})
        if EXIT_USAGE in codes:
            raise StoppedOnError("the workers stopped on the error above")
        raise TrainingFailed(
            f"the workers failed (exit codes {codes}) and no restarts are left; see the messages "
            "above, the journal, and --max-restarts"
        )
