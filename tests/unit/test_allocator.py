"""The workers' allocator setting: freed memory kept, unless the user chose otherwise."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from trainplay.cli import main
from trainplay.errors import UsageError
from trainplay.hardware.allocator import RETAINED, environment, for_workers, worker_env


def test_workers_keep_freed_memory_by_default():
    assert worker_env({}, libc="glibc") == {"GLIBC_TUNABLES": RETAINED}
    assert worker_env({"TRAINPLAY_MALLOC": "Retained"}, libc="glibc") == {
        "GLIBC_TUNABLES": RETAINED
    }


@pytest.mark.parametrize(
    "environ",
    [
        {"TRAINPLAY_MALLOC": "system"},
        {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"},
        {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"},
        {"LD_PRELOAD": "libtcmalloc_minimal.so.4"},
    ],
)
def test_the_users_choice_wins(environ):
    assert worker_env(environ, libc="glibc") == {}


def test_nothing_is_set_without_glibc():
    assert worker_env({}, libc="") == {}


def test_an_unknown_setting_is_refused():
    with pytest.raises(UsageError, match="TRAINPLAY_MALLOC must be 'retained'"):
        worker_env({"TRAINPLAY_MALLOC": "jemalloc"}, libc="glibc")


def test_train_refuses_an_unknown_setting_in_one_line(capsys, monkeypatch):
    monkeypatch.setenv("TRAINPLAY_MALLOC", "fast")
    args = ["tests.data.tiny_models:deep_mlp", "--input-shape", "12", "--classes", "4"]
    assert main(["train", *args, "--global-batch", "24", "--steps", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "TRAINPLAY_MALLOC must be" in err


@pytest.fixture
def no_choice(monkeypatch):
    """An environment in which the user chose no allocator."""
    for name in ("GLIBC_TUNABLES", "TRAINPLAY_MALLOC", "LD_PRELOAD"):
        monkeypatch.delenv(name, raising=False)


def test_for_workers_sets_the_setting_and_puts_the_environment_back(no_choice, monkeypatch):
    expected = worker_env({})
    with for_workers() as added:
        assert added == expected
        assert os.environ.get("GLIBC_TUNABLES") == expected.get("GLIBC_TUNABLES")
    assert "GLIBC_TUNABLES" not in os.environ
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")
    with for_workers() as added:
        assert added == {} and os.environ["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2"
    assert os.environ["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2"


def test_environment_puts_back_what_it_replaced(no_choice, monkeypatch):
    monkeypatch.setenv("TRAINPLAY_MALLOC", "retained")
    with environment({"TRAINPLAY_MALLOC": "system", "GLIBC_TUNABLES": ""}):
        assert os.environ["TRAINPLAY_MALLOC"] == "system" and os.environ["GLIBC_TUNABLES"] == ""
    assert os.environ["TRAINPLAY_MALLOC"] == "retained" and "GLIBC_TUNABLES" not in os.environ


def _agent_sees(monkeypatch, stop: bool = False) -> list:
    """``GLIBC_TUNABLES`` as :func:`trainplay.launch.run_workers`'s agent would start workers
    with it, one entry per launch (the agent is not started; ``stop``: the launch raises)."""
    from trainplay import launch

    seen = []

    def agent(config, entrypoint):
        def start(*args):
            seen.append(os.environ.get("GLIBC_TUNABLES"))
            if stop:
                raise RuntimeError("stop before any worker starts")

        return start

    monkeypatch.setattr(launch, "elastic_launch", agent)
    return seen


def test_hw_measure_starts_its_workers_with_the_setting(no_choice, monkeypatch):
    """The profile is measured in the regime `trainplay train`'s workers run in."""
    from trainplay.hardware.measure import launch

    seen = _agent_sees(monkeypatch)
    assert launch.measure(nproc=1, device="cpu", show_progress=False) is None  # wrote no result
    assert seen == [worker_env({}).get("GLIBC_TUNABLES")]
    assert "GLIBC_TUNABLES" not in os.environ


def test_validate_starts_its_workers_with_the_setting(no_choice, monkeypatch):
    """A step validate times runs in the regime its profile was measured in."""
    from trainplay.roofline import validate

    seen = _agent_sees(monkeypatch, stop=True)
    with pytest.raises(RuntimeError, match="stop before"):
        validate.validate("tests.data.tiny_models:deep_mlp", 4, input_shape=(12,),
                          show_progress=False)  # fmt: skip
    assert seen == [worker_env({}).get("GLIBC_TUNABLES")]
    assert "GLIBC_TUNABLES" not in os.environ


def test_hw_measure_refuses_an_unknown_setting_in_one_line(capsys, monkeypatch):
    monkeypatch.setenv("TRAINPLAY_MALLOC", "fast")
    assert main(["hw", "measure", "--device", "cpu", "--quick"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "TRAINPLAY_MALLOC must be" in err


PROBE = """
import ctypes, resource
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
size = 48 << 20
block = libc.malloc(size)
libc.memset(block, 1, size)
libc.free(block)
before = faults()
for _ in range(10):  # a step's buffer: allocated, written, freed
    block = libc.malloc(size)
    libc.memset(block, 1, size)
    libc.free(block)
print(faults() - before)
"""


@pytest.mark.skipif(
    os.uname().sysname != "Linux" or not worker_env({}), reason="needs Linux with glibc"
)
def test_the_setting_keeps_freed_memory_for_the_next_step():
    """glibc's own malloc, a 48 MiB buffer allocated, written and freed ten times (above the
    32 MiB its dynamic mmap threshold can reach): as shipped each one is a fresh mapping, a
    page fault per page; with the setting the freed block serves the next one."""
    pages = 10 * (48 << 20) // resource.getpagesize()

    def faults(extra: dict[str, str]) -> int:
        env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"} | extra
        done = subprocess.run(
            [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120,
            check=True,
        )  # fmt: skip
        return int(done.stdout.strip())

    assert faults({}) > pages // 2
    assert faults(worker_env({})) < pages // 20
