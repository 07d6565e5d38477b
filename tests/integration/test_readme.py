"""Every command README.md shows runs as written, from the root of a fresh copy of the tree.

The convention (README's "Two commands" section states it for readers): a line that starts with
``$ `` inside a fenced block is a command, and a line ending in ``\\`` continues it. Commands run
in README order, in one folder, with bash, so one may read what an earlier one wrote
(``tail -n 2 run.jsonl``). A command whose shown output starts with a ``trainplay...: error:``
line must exit 2 with that error; every other command must exit 0. Nothing else is run: the
``make`` lines (``make test`` runs this test), a cluster's ``torchrun`` line, Python snippets.

The copy holds what a clone would if the working tree were committed: the files git tracks plus
those it would add (``git ls-files --cached --others --exclude-standard``); an example that needs
an ignored or forgotten file fails here. This virtual environment's ``trainplay`` runs it, with a
cache folder of its own that holds only this machine's two-worker measurement
(``conftest.measured_two_workers``: the one a first two-worker ``--cluster local`` makes, judged
in ``test_hw_measure.py``); any other layout is measured as on a new machine.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.processes import run_bounded

ROOT = Path(__file__).parents[2]
COMMAND_TIMEOUT_S = 180
ERROR = re.compile(r"^trainplay( [a-z]+)*: error: ")


@dataclass(frozen=True)
class Command:
    line: int
    """Where it starts in README.md (1-based)."""
    text: str
    """The command, continuation lines joined as bash reads them."""
    error: str | None
    """The error its shown output starts with, up to the first detail; ``None``: it succeeds."""


def readme_commands(readme: str) -> list[Command]:
    """The ``$ `` commands of the fenced blocks of ``readme``, in order."""
    commands: list[Command] = []
    fenced, lines = False, readme.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            fenced = not fenced
        elif fenced and line.startswith("$ "):
            start, parts = i + 1, [line[2:]]
            while parts[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                parts.append(lines[i])
            shown = lines[i + 1] if i + 1 < len(lines) else ""
            error = ":".join(shown.split(":")[:3]) if ERROR.match(shown) else None
            commands.append(Command(start, "\n".join(parts), error))
        i += 1
    return commands


def _fresh_copy(target: Path) -> None:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # tracked but deleted in the working tree: a clone would have it,
            (target / name).parent.mkdir(parents=True, exist_ok=True)  # a commit would not
            shutil.copy2(source, target / name)


def test_the_convention_finds_every_example():
    commands = readme_commands((ROOT / "README.md").read_text())
    texts = [c.text for c in commands]
    assert any(t.startswith("trainplay analyze resnet50 --cluster lab") for t in texts)
    assert any(
        t.startswith("trainplay train examples.digits_mlp:model") and "\\\n" in t for t in texts
    )
    assert [c.error is not None for c in commands].count(True) >= 1
    assert not any("lab.yaml" in t or "hardware/examples" in t for t in texts)


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="no git")
def test_every_readme_command_runs_in_a_fresh_copy(tmp_path, seeded_cache):
    tree = tmp_path / "clone"
    _fresh_copy(tree)
    commands = readme_commands((tree / "README.md").read_text())
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "TRAINPLAY_CACHE_DIR": str(seeded_cache),
    }
    env.pop("PYTHONPATH", None)
    for command in commands:
        done = run_bounded(
            ["bash", "-c", f"cd {tree} && {command.text}"], timeout_s=COMMAND_TIMEOUT_S, env=env
        )
        where = f"README.md:{command.line}: {command.text}"
        assert "Traceback" not in done.stderr, f"{where}\n{done.stderr[-3000:]}"
        if command.error is None:
            assert done.returncode == 0, f"{where}\nexit {done.returncode}\n{done.stderr[-3000:]}"
        else:
            assert done.returncode == 2, f"{where}\nexit {done.returncode}\n{done.stderr[-3000:]}"
            assert done.stderr.startswith(command.error), f"{where}\n{done.stderr}"
        assert not done.left_behind, f"{where} left processes running"
