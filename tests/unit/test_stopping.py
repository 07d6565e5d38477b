"""A planned stop's agreement: a group of one rank decides alone, without a collective a step."""

from __future__ import annotations

import signal

import torch.distributed as dist

from trainplay.runtime.stopping import StopRequest


def test_one_rank_agrees_with_itself_without_a_collective(monkeypatch):
    calls = []
    store = dist.HashStore()
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        monkeypatch.setattr(dist, "all_reduce", lambda *a, **k: calls.append(a))
        stop = StopRequest()
        assert stop.agreed(None) == 0
        stop.signum = signal.SIGTERM
        assert stop.agreed(None) == signal.SIGTERM
    finally:
        monkeypatch.undo()
        dist.destroy_process_group()
    assert calls == []
