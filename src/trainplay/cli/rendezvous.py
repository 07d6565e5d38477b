"""``trainplay rendezvous``: the rendezvous store of elastic jobs, on its own (no training)."""

from __future__ import annotations

import argparse

from rich.console import Console

from trainplay.cli import endpoint

__all__ = ["register"]


def _port(text: str) -> int:
    endpoint(f"h:{text}")  # the same checks and messages as --rdzv-endpoint's port
    return int(text)


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "rendezvous",
        help="serve the rendezvous store of `trainplay train` nodes, so that any node may die",
        description=(
            "Run PyTorch's TCPStore as the c10d rendezvous of elastic jobs, by itself: start it on "
            "a machine that stays up (a head or login node) and give every `trainplay train` node "
            "--rdzv-endpoint HOST:PORT; the nodes join it without hosting a store, so any of them "
            "may die. Ctrl-C or SIGTERM stops it."
        ),
    )
    p.add_argument("--host", default="127.0.0.1", help="address to serve on (127.0.0.1)")
    p.add_argument("--port", type=_port, default=29400, help="port (29400)")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from trainplay.runtime.rendezvous import serve

    where = f"{args.host}:{args.port}"
    serve(
        args.host,
        args.port,
        ready=f"trainplay: rendezvous on {where}; start each node with --rdzv-endpoint {where}",
    )
    err.print("trainplay: rendezvous stopped", highlight=False)
    return 0
