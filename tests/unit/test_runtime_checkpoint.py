"""Checkpoints in one process: round trip, atomicity, retention, safe loading, job checks, and an
optimizer that continues exactly where it stopped."""

from __future__ import annotations

import json
import pickle
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.distributed.checkpoint.metadata import BytesStorageMetadata, Metadata

from trainplay.errors import UsageError
from trainplay.runtime import checkpoint, manifest
from trainplay.runtime.checkpoint import CheckpointInfo

BLOCKS = ("0", "1", "2")


def info(step: int, **changes) -> CheckpointInfo:
    fields = dict(
        model="tests.data.tiny_models:mlp",
        block_names=BLOCKS,
        step=step,
        samples_seen=step * 8,
        global_batch=8,
        seed=3,
        optimizer="adam",
        plan_id="abc123",
        devices=("d0", "d1"),
        world_size=2,
        written_at_s=1_700_000_000.5,
    )
    return CheckpointInfo(**(fields | changes))


def tensors(step: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(step)
    return {
        "model.0.weight": torch.randn(4, 3, generator=generator),
        "model.0.bias": torch.randn(4, generator=generator),
        "model.2.weight": torch.randn(2, 4, generator=generator, dtype=torch.float64),
        "optim.0.weight.step": torch.tensor(float(step)),
        "optim.counts": torch.arange(5) * step,
    }


def blank(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: torch.full_like(v, -7) for k, v in state.items()}


def steps_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_round_trip_loads_exactly_the_keys_asked_for(tmp_path):
    saved = tensors(5)
    path = checkpoint.save(tmp_path, saved, info(5))
    assert path == tmp_path / "step-00000005"
    found_path, found = checkpoint.latest(tmp_path)
    assert found_path == path and found == info(5)
    target = blank(saved)
    checkpoint.load(path, target)
    for key, value in saved.items():
        assert target[key].dtype == value.dtype
        assert torch.equal(target[key], value), key
    some = {"model.0.bias": torch.zeros(4)}
    checkpoint.load(path, some)
    assert torch.equal(some["model.0.bias"], saved["model.0.bias"])
    assert json.loads((path / "trainplay.json").read_text())["block_names"] == list(BLOCKS)


def test_parameters_load_in_place(tmp_path):
    model, other = nn.Linear(3, 2), nn.Linear(3, 2)
    assert not torch.equal(model.weight, other.weight)
    path = checkpoint.save(
        tmp_path, checkpoint.model_state(dict(model.named_parameters())), info(1)
    )
    checkpoint.load(path, checkpoint.model_state(dict(other.named_parameters())))
    assert torch.equal(model.weight, other.weight) and torch.equal(model.bias, other.bias)
    assert other.weight.requires_grad


def test_missing_or_reshaped_key_is_a_usage_error(tmp_path):
    path = checkpoint.save(tmp_path, tensors(1), info(1))
    with pytest.raises(UsageError, match=r"has no 'model\.9\.weight' \(1 of the 2 keys"):
        checkpoint.load(path, {"model.0.bias": torch.zeros(4), "model.9.weight": torch.zeros(1)})
    with pytest.raises(UsageError, match=r"'model\.0\.bias' of shape \[4\], the model's is \[5\]"):
        checkpoint.load(path, {"model.0.bias": torch.zeros(5)})


def test_non_tensor_state_is_refused(tmp_path):
    with pytest.raises(TypeError, match="tensors only; 'lr' is a float"):
        checkpoint.save(tmp_path, {"lr": 0.1}, info(1))


def test_empty_or_absent_directory_has_no_checkpoint(tmp_path):
    assert checkpoint.latest(tmp_path / "nowhere") is None
    assert checkpoint.latest(tmp_path) is None
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="is a file; give a directory"):
        checkpoint.latest(tmp_path / "file")


def test_unfinished_saves_are_ignored_then_cleared(tmp_path):
    checkpoint.save(tmp_path, tensors(1), info(1))
    checkpoint.save(tmp_path, tensors(2), info(2))
    # a newer save that wrote all its DCP files but died before the rename, and an old leftover
    newer = checkpoint.save(tmp_path / "elsewhere", tensors(3), info(3))
    newer.rename(tmp_path / "step-00000003.partial")
    (tmp_path / "step-00000000.partial").mkdir()
    path, found = checkpoint.latest(tmp_path)
    assert path.name == "step-00000002" and found.step == 2
    target = blank(tensors(2))
    checkpoint.load(path, target)
    assert torch.equal(target["model.0.weight"], tensors(2)["model.0.weight"])
    checkpoint.save(tmp_path, tensors(4), info(4))
    assert steps_in(tmp_path) == ["elsewhere", "step-00000002", "step-00000004"]


def test_a_crash_before_the_rename_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    checkpoint.save(tmp_path, tensors(1), info(1))

    rename = checkpoint.os.rename

    def crash(source, target):  # rank 0 dies as it publishes the save; DCP's own renames work
        if str(source).endswith(".partial"):
            raise OSError("killed")
        rename(source, target)

    monkeypatch.setattr(checkpoint.os, "rename", crash)
    with pytest.raises(
        checkpoint.CheckpointWriteError, match=r"cannot write a checkpoint .*: killed"
    ):
        checkpoint.save(tmp_path, tensors(2), info(2))
    monkeypatch.undo()
    assert steps_in(tmp_path) == ["step-00000001", "step-00000002.partial"]
    assert (tmp_path / "step-00000002.partial" / ".metadata").exists()
    assert checkpoint.latest(tmp_path)[1].step == 1


def test_keeps_the_newest_two(tmp_path):
    for step in range(1, 5):
        checkpoint.save(tmp_path, tensors(step), info(step))
    assert steps_in(tmp_path) == ["step-00000003", "step-00000004"]


def test_saving_the_same_step_again_replaces_it(tmp_path):
    checkpoint.save(tmp_path, tensors(1), info(1))
    checkpoint.save(tmp_path, tensors(2), info(2))
    again = {k: v + 1 for k, v in tensors(2).items()}
    path = checkpoint.save(tmp_path, again, info(2))
    assert steps_in(tmp_path) == ["step-00000001", "step-00000002"]
    target = blank(again)
    checkpoint.load(path, target)
    assert all(torch.equal(target[k], v) for k, v in again.items())


@pytest.mark.parametrize(
    "text, why",
    [
        ("{not json", "trainplay.json: Expecting property name"),
        ('["a list"]', "trainplay.json: expected a JSON object, got list"),
        ('{"model": "m"}', "trainplay.json: it has no 'block_names'"),
    ],
)
def test_a_malformed_info_file_is_a_damaged_checkpoint(tmp_path, text, why):
    path = checkpoint.save(tmp_path, tensors(1), info(1))
    (path / "trainplay.json").write_text(text)
    with pytest.raises(
        UsageError, match=r"step-00000001: trainplay.json is \d+ bytes, its manifest.json"
    ):
        checkpoint.latest(tmp_path)
    manifest.seal(path)  # a file the manifest vouches for, still not one of ours
    with pytest.raises(UsageError, match=f"no intact checkpoint in .*step-00000001: {why}"):
        checkpoint.latest(tmp_path)


def _truncate_shard(path: Path) -> str:
    shard = next(path.glob("*.distcp"))
    size = shard.stat().st_size
    with shard.open("r+b") as file:
        file.truncate(size // 2)
    return f"{shard.name} is {size // 2} bytes, its manifest.json says {size}"


def _garbage_metadata(path: Path) -> str:  # the same size: only the checksum tells
    size = (path / ".metadata").stat().st_size
    (path / ".metadata").write_bytes(bytes(range(256)) * (size // 256) + b"g" * (size % 256))
    return ".metadata differs from its checksum in manifest.json"


def _no_manifest(path: Path) -> str:
    (path / "manifest.json").unlink()
    return "it has no manifest.json (its save never finished)"


def _resealed_garbage_metadata(path: Path) -> str:
    (path / ".metadata").write_bytes(b"\x80\x04garbage")
    manifest.seal(path)
    return "its metadata is damaged (UnpicklingError)"


def _extra_file(path: Path) -> str:
    (path / "__9_0.distcp").write_bytes(b"x")
    return "__9_0.distcp is not in its manifest.json"


@pytest.mark.parametrize(
    "damage",
    [_truncate_shard, _garbage_metadata, _no_manifest, _resealed_garbage_metadata, _extra_file],
)
def test_a_damaged_newest_checkpoint_is_skipped_for_the_newest_intact(tmp_path, damage):
    checkpoint.save(tmp_path, tensors(1), info(1))
    newest = checkpoint.save(tmp_path, tensors(2), info(2))
    why = damage(newest)
    found = checkpoint.scan(tmp_path)
    assert found.found is not None and found.found[1].step == 1
    assert [(d.path, d.why) for d in found.damaged] == [(newest, why)]
    assert found.damaged[0].line() == f"checkpoint {newest} is damaged: {why}"
    target = blank(tensors(1))
    checkpoint.load(found.found[0], target)
    assert all(torch.equal(target[k], v) for k, v in tensors(1).items())


def test_nothing_intact_is_an_error_that_names_each_reason(tmp_path):
    checkpoint.save(tmp_path, tensors(1), info(1))
    newest = checkpoint.save(tmp_path, tensors(2), info(2))
    _no_manifest(tmp_path / "step-00000001")
    _truncate_shard(newest)
    with pytest.raises(UsageError) as raised:
        checkpoint.scan(tmp_path)
    message = str(raised.value)
    assert "step-00000002: __0_0.distcp is" in message and "step-00000001: it has no" in message
    assert "\n" not in message


def test_info_round_trips_and_is_validated():
    data = info(4).to_dict()
    assert json.loads(json.dumps(data)) == data
    assert CheckpointInfo.from_dict(data) == info(4)
    with pytest.raises(UsageError, match="step must be int, got '4'"):
        CheckpointInfo.from_dict(data | {"step": "4"})
    with pytest.raises(UsageError, match="world_size must be int, got True"):
        CheckpointInfo.from_dict(data | {"world_size": True})
    with pytest.raises(UsageError, match="devices must be tuple"):
        CheckpointInfo.from_dict(data | {"devices": "d0"})
    with pytest.raises(UsageError, match="samples_seen 5 is not step 4 x global_batch 8"):
        CheckpointInfo.from_dict(data | {"samples_seen": 5})
    with pytest.raises(UsageError, match="optimizer must be one of sgd, adam, adamw, got 'lamb'"):
        CheckpointInfo.from_dict(data | {"optimizer": "lamb"})


class _Shell:
    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        import os

        return os.system, (self.command,)


def _metadata_with_bytes() -> Metadata:
    return Metadata(state_dict_metadata={"x": BytesStorageMetadata()})


@pytest.mark.parametrize(
    "payload, named",
    [
        (lambda marker: f"cos\nsystem\n(S'touch {marker}'\ntR.".encode(), r"os\.system"),
        (lambda marker: pickle.dumps(_Shell(f"touch {marker}")), r"posix\.system"),
        (
            lambda marker: pickle.dumps(_metadata_with_bytes()),
            r"torch\.distributed\.checkpoint\.metadata\.BytesStorageMetadata",
        ),
    ],
)
def test_metadata_naming_anything_else_is_refused_unrun(tmp_path, payload, named):
    path = checkpoint.save(tmp_path / "ck", tensors(1), info(1))
    marker = tmp_path / "ran"
    (path / ".metadata").write_bytes(payload(marker))
    with pytest.raises(
        UsageError, match=f"is not a trainplay checkpoint: its metadata names {named}"
    ):
        checkpoint.load(path, blank(tensors(1)))
    assert not marker.exists()


def test_metadata_pointing_outside_the_checkpoint_is_refused(tmp_path):
    path = checkpoint.save(tmp_path / "ck", tensors(1), info(1))
    metadata = pickle.loads((path / ".metadata").read_bytes())  # written by this test just now
    index = next(iter(metadata.storage_data))
    metadata.storage_data[index] = replace(
        metadata.storage_data[index], relative_path="../x.distcp"
    )
    (path / ".metadata").write_bytes(pickle.dumps(metadata))
    with pytest.raises(UsageError, match="its metadata points at _StorageInfo"):
        checkpoint.load(path, blank(tensors(1)))


def test_damaged_or_absent_metadata_is_refused(tmp_path):
    path = checkpoint.save(tmp_path / "ck", tensors(1), info(1))
    (path / ".metadata").write_bytes(b"\x80\x04garbage")
    with pytest.raises(UsageError, match=r"its metadata is damaged \(\w+\)"):
        checkpoint.load(path, blank(tensors(1)))
    (path / ".metadata").unlink()
    with pytest.raises(UsageError, match=r"it has no \.metadata"):
        checkpoint.load(path, blank(tensors(1)))


def test_check_matches_names_what_differs(tmp_path):
    job = dict(
        model=info(2).model,
        block_names=list(BLOCKS),
        global_batch=8,
        seed=3,
        optimizer="adam",
        directory=tmp_path,
    )
    checkpoint.check_matches(info(2), **job)
    with pytest.raises(
        UsageError,
        match=rf"{tmp_path} holds a checkpoint of 'tests.data.tiny_models:mlp' \(3 blocks, step 2\),"
        r" not of 'resnet18' \(3 blocks\); use another --checkpoint-dir or the same model",
    ):
        checkpoint.check_matches(info(2), **job | {"model": "resnet18"})
    with pytest.raises(UsageError, match=r"not of 'tests.data.tiny_models:mlp' \(2 blocks\)"):
        checkpoint.check_matches(info(2), **job | {"block_names": ["0", "1"]})
    with pytest.raises(UsageError, match="--global-batch 8, not 16; pass --global-batch 8 to"):
        checkpoint.check_matches(info(2), **job | {"global_batch": 16})
    with pytest.raises(UsageError, match="--seed 3, not 4; pass --seed 3 to resume it"):
        checkpoint.check_matches(info(2), **job | {"seed": 4})
    with pytest.raises(UsageError, match="--optimizer adam, not sgd; pass --optimizer adam"):
        checkpoint.check_matches(info(2), **job | {"optimizer": "sgd"})


OPTIMIZERS = {
    "adam": (lambda ps: torch.optim.Adam(ps, lr=0.05), 0.0),
    "adamw": (lambda ps: torch.optim.AdamW(ps, lr=0.05, weight_decay=0.1), 0.0),
    "sgd": (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.2), 0.9),
    "sgd-plain": (lambda ps: torch.optim.SGD(ps, lr=0.1), 0.0),
}


def _train(model: nn.Module, optimizer: torch.optim.Optimizer, steps: range) -> None:
    for step in steps:
        generator = torch.Generator().manual_seed(step)
        inputs, labels = torch.randn(8, 5, generator=generator), torch.arange(8) % 3
        nn.functional.cross_entropy(model(inputs), labels).backward()
        optimizer.step()
        optimizer.zero_grad()


def _model(seed: int) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 3))


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_a_restored_optimizer_continues_exactly(tmp_path, name):
    make, momentum = OPTIMIZERS[name]
    kind = name.removesuffix("-plain")
    model = _model(0)
    optimizer = make(model.parameters())
    _train(model, optimizer, range(3))
    named = dict(model.named_parameters())
    state = checkpoint.model_state(named) | checkpoint.optimizer_state(optimizer, named, kind)
    assert len(state) == 4 * (1 + {"adam": 3, "adamw": 3, "sgd": 1}[kind] - (name == "sgd-plain"))
    path = checkpoint.save(tmp_path, state, info(3, optimizer=kind))

    def restored(apply: bool) -> nn.Sequential:
        fresh = _model(1)
        fresh_optimizer = make(fresh.parameters())
        fresh_named = dict(fresh.named_parameters())
        template = checkpoint.optimizer_template(kind, fresh_named, momentum)
        checkpoint.load(path, checkpoint.model_state(fresh_named) | template)
        if apply:
            checkpoint.apply_optimizer_state(fresh_optimizer, fresh_named, template, kind)
        _train(fresh, fresh_optimizer, range(3, 5))
        return fresh

    _train(model, optimizer, range(3, 5))
    continued = restored(apply=True)
    for (key, value), other in zip(model.state_dict().items(), continued.parameters(), strict=True):
        assert torch.equal(value, other), key
    if name != "sgd-plain":  # the state matters: without it the parameters come out otherwise
        without = restored(apply=False)
        assert not all(
            torch.equal(a, b) for a, b in zip(model.parameters(), without.parameters(), strict=True)
        )


def test_state_of_an_optimizer_that_never_stepped_leaves_a_fresh_one_fresh(tmp_path):
    model = _model(0)
    named = dict(model.named_parameters())
    optimizer = torch.optim.Adam(model.parameters())
    state = checkpoint.optimizer_state(optimizer, named, "adam")
    assert float(state["optim.0.weight.step"]) == 0 and not state["optim.0.weight.exp_avg"].any()
    checkpoint.apply_optimizer_state(optimizer, named, state, "adam")
    assert len(optimizer.state) == 0
    with pytest.raises(ValueError, match="the optimizer is a SGD, not adam"):
        checkpoint.optimizer_state(torch.optim.SGD(model.parameters(), lr=1), named, "adam")
