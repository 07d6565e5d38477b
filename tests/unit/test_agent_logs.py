"""The agent's folder of worker files is the run's own and goes when the run ends: a launch
leaves nothing in the temporary folder, whether its workers finish or fail."""

from __future__ import annotations

import tempfile

import pytest

from trainplay import launch


@pytest.fixture
def temp_folder(tmp_path, monkeypatch):
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))  # what gettempdir() answers
    return folder


def test_the_folder_is_removed_however_the_block_ends(temp_folder):
    with launch.agent_logs() as logs:
        made = list(temp_folder.iterdir())
        assert [p.name.startswith("trainplay-agent-") for p in made] == [True]
        assert logs.root_log_dir == str(made[0])
    assert list(temp_folder.iterdir()) == []
    with pytest.raises(RuntimeError), launch.agent_logs():
        raise RuntimeError("the agent stopped")
    assert list(temp_folder.iterdir()) == []


def test_a_launch_leaves_nothing_behind_when_workers_finish_or_fail(temp_folder):
    launch.run_workers("platform", [], nproc=1, show_progress=False)  # prints the platform
    assert list(temp_folder.iterdir()) == []
    with pytest.raises(launch.WorkerFailed, match="a worker of trainplay_no_such_module failed"):
        launch.run_workers("trainplay_no_such_module", [], nproc=1, show_progress=False)
    assert list(temp_folder.iterdir()) == []
