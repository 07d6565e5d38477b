"""Asynchronous checkpoints (``--checkpoint-async``): one in flight, a snapshot of the state at the
save, complete only once finished, and a write error still one line."""

from __future__ import annotations

import subprocess

import pytest

from tests.unit.test_runtime_checkpoint import blank, info, steps_in, tensors
from trainplay.runtime import checkpoint, manifest
from trainplay.runtime.saving import Saver


def test_an_async_checkpoint_holds_the_state_at_the_save(tmp_path):
    saver = Saver(tmp_path, None, asynchronous=True)
    state = tensors(1)
    want = {k: v.clone() for k, v in state.items()}
    assert saver.save(state, info(1)) == []
    assert saver.writing == 1
    for value in state.values():  # training goes on and changes the tensors in place
        value.add_(100)
    [saved] = saver.wait()
    assert saved.step == 1 and saved.path == checkpoint.step_path(tmp_path, 1)
    assert 0 <= saved.stall_s <= saved.seconds and saver.writing is None
    assert manifest.verify(saved.path) is None
    got = blank(want)
    checkpoint.load(saved.path, got)
    for key in want:
        assert got[key].equal(want[key]), key


def test_one_write_in_flight_and_each_journaled_once(tmp_path):
    saver = Saver(tmp_path, None, asynchronous=True)
    assert saver.save(tensors(1), info(1)) == []
    finished = saver.save(tensors(2), info(2))  # waits for step 1 first
    assert [s.step for s in finished] == [1]
    assert checkpoint.latest(tmp_path)[1].step == 1  # step 2 is not complete before it is finished
    while saver.writing is not None:
        finished += saver.poll()
    assert [s.step for s in finished] == [1, 2] and saver.poll() == [] and saver.wait() == []
    assert steps_in(tmp_path) == ["step-00000001", "step-00000002"]
    assert checkpoint.latest(tmp_path)[1].step == 2


def test_a_synchronous_saver_completes_in_the_call(tmp_path):
    saver = Saver(tmp_path, None, asynchronous=False)
    [saved] = saver.save(tensors(3), info(3))
    assert saved.stall_s == saved.seconds > 0 and saver.writing is None
    assert checkpoint.latest(tmp_path)[1].step == 3


def _immutable(path, on: bool) -> bool:
    result = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True)
    return result.returncode == 0


def test_a_write_that_fails_in_the_background_is_one_line_when_finished(tmp_path):
    saver = Saver(tmp_path / "ckpt", None, asynchronous=True)
    saver.save(tensors(1), info(1))
    if not _immutable(tmp_path / "ckpt", True):  # root writes through permission bits
        saver.wait()
        pytest.skip("chattr +i is not available here")
    try:
        with pytest.raises(checkpoint.CheckpointWriteError, match="cannot write a checkpoint in"):
            saver.wait()  # the rename into the folder fails
    finally:
        _immutable(tmp_path / "ckpt", False)
    assert checkpoint.latest(tmp_path / "ckpt") is None
