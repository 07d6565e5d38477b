"""Checkpoints over gloo: ranks save their parts, and other ranks load other parts (resharding).

Three ranks under torchrun's elastic agent save steps 1, 2 and 3 of a small model: rank 1 the
first layer, rank 2 the second, both of them one replicated key, and rank 0 nothing — either
saving an empty part (and still leading the save) or not taking part, the save then running over
the group of ranks 1 and 2, led by rank 1. Steps 2 and 3 remain. Then one process without a
process group loads every key, and three ranks of another run each load a different subset; all
get step 3's values exactly. A rank asking for a key the checkpoint lacks fails with the one-line
error while the others finish; nothing hangs.

This file is also the worker: ``python -m tests.integration.test_runtime_checkpoint_dist MODE DIR``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from tests.integration.processes import run_bounded
from trainplay.runtime import checkpoint
from trainplay.runtime.checkpoint import CheckpointInfo

SHAPES = {
    "model.0.weight": (4, 3),
    "model.0.bias": (4,),
    "model.2.weight": (2, 4),
    "model.2.bias": (2,),
    "model.norm.scale": (3,),
}
REPLICATED = "model.norm.scale"
SAVED_BY = {
    0: [],
    1: ["model.0.weight", "model.0.bias", REPLICATED],
    2: ["model.2.weight", "model.2.bias", REPLICATED],
}
LOADED_BY = {
    0: ["model.0.weight", REPLICATED],
    1: ["model.0.bias", "model.2.weight", "model.2.bias"],
    2: [REPLICATED, "model.2.bias"],
}
MISSING = "model.9.weight"


def values(step: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(step)
    return {key: torch.randn(shape, generator=generator) for key, shape in SHAPES.items()}


def info(step: int, world_size: int) -> CheckpointInfo:
    return CheckpointInfo(
        model="tests.data.tiny_models:mlp",
        block_names=("0", "1", "2", "norm"),
        step=step,
        samples_seen=step * 6,
        global_batch=6,
        seed=0,
        optimizer="sgd",
        plan_id="p",
        devices=("d0", "d1", "d2"),
        world_size=world_size,
        written_at_s=0.0,
    )


def worker(mode: str, directory: str) -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    root = Path(directory)
    try:
        if mode.startswith("save"):
            group = dist.new_group([1, 2]) if mode == "save-without-0" else None
            for step in (1, 2, 3):
                mine = {key: values(step)[key] for key in SAVED_BY[rank]}
                if group is None or rank in (1, 2):
                    checkpoint.save(root / "ck", mine, info(step, world), process_group=group)
        else:
            path, found = checkpoint.latest(root / "ck")
            keys = LOADED_BY[rank] + ([MISSING] if mode == "load-missing" and rank == 1 else [])
            state = {key: torch.zeros(SHAPES.get(key, (1,))) for key in keys}
            checkpoint.load(path, state)
            torch.save(state | {"step": torch.tensor(found.step)}, root / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def launch(mode: str, nproc: int, directory: Path):
    code = (
        "import sys; from trainplay.launch import run_workers; "
        "run_workers('tests.integration.test_runtime_checkpoint_dist', sys.argv[1:], "
        f"nproc={nproc}, show_progress=False)"
    )
    done = run_bounded([sys.executable, "-c", code, mode, str(directory)], timeout_s=180)
    assert not done.left_behind
    return done


@pytest.mark.parametrize("save", ["save", "save-without-0"])
def test_save_on_some_ranks_load_all_in_one_process_and_resharded_on_three(tmp_path, save):
    done = launch(save, 3, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == ["step-00000002", "step-00000003"]
    expected = values(3)

    path, found = checkpoint.latest(tmp_path / "ck")
    assert found == info(3, 3)
    everything = {key: torch.zeros(shape) for key, shape in SHAPES.items()}
    checkpoint.load(path, everything)  # one process, no process group
    for key, value in expected.items():
        assert torch.equal(everything[key], value), key

    done = launch("load", 3, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    for rank, keys in LOADED_BY.items():
        part = torch.load(tmp_path / f"rank{rank}.pt", weights_only=True)
        assert int(part.pop("step")) == 3
        assert sorted(part) == sorted(keys)
        for key in keys:
            assert torch.equal(part[key], expected[key]), (rank, key)


def test_a_rank_asking_for_a_missing_key_fails_alone_with_the_reason(tmp_path):
    done = launch("save", 3, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    done = launch("load-missing", 3, tmp_path)
    assert done.returncode != 0
    assert f"has no '{MISSING}' (1 of the 4 keys asked for are missing)" in done.stderr
    for rank in (0, 2):  # the other ranks loaded their keys
        part = torch.load(tmp_path / f"rank{rank}.pt", weights_only=True)
        assert all(torch.equal(part[key], values(3)[key]) for key in LOADED_BY[rank])
    assert not (tmp_path / "rank1.pt").exists()


if __name__ == "__main__":
    worker(*sys.argv[1:])
