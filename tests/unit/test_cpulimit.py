"""How many CPUs a process may use (hardware/cpulimit.py): cgroup v1 and v2 bandwidth limits
along the group's path, and the process's affinity; one test reads a real cgroup."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainplay.hardware import cpulimit

V1_MOUNTS = (
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
)
V2_MOUNTS = "30 23 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"


def _fake(tmp_path: Path, groups: str, mounts: str, files: dict[str, str]) -> tuple[Path, Path]:
    proc, root = tmp_path / "proc", tmp_path / "root"
    proc.mkdir()
    (proc / "cgroup").write_text(groups)
    (proc / "mountinfo").write_text(mounts)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return proc, root


V1 = "sys/fs/cgroup/cpu"


def _fake_v1(tmp_path: Path, groups: str, quotas: dict[str, int]) -> tuple[Path, Path]:
    """A cgroup v1 CPU hierarchy whose groups (paths below its mount) have these quotas, each
    per a period of 100 ms."""
    files = {}
    for group, quota in quotas.items():
        directory = f"{V1}/{group}".rstrip("/")
        files[f"{directory}/cpu.cfs_quota_us"] = str(quota)
        files[f"{directory}/cpu.cfs_period_us"] = "100000"
    return _fake(tmp_path, groups, V1_MOUNTS, files)


def test_a_v1_quota_is_quota_over_period_and_the_strictest_ancestor_wins(tmp_path):
    proc, root = _fake_v1(
        tmp_path, "4:memory:/job\n1:cpu:/job/slow\n0::/\n",
        {"job/slow": 40000, "job": 150000, "": -1},
    )  # fmt: skip
    assert cpulimit.cgroup_limit(proc, root) == pytest.approx(0.4)
    (root / V1 / "job" / "cpu.cfs_quota_us").write_text("20000")  # the parent is stricter
    assert cpulimit.cgroup_limit(proc, root) == pytest.approx(0.2)


def test_no_limit_set_or_nothing_readable_is_none(tmp_path):
    proc, root = _fake_v1(tmp_path, "1:cpu:/\n", {"": -1})
    assert cpulimit.cgroup_limit(proc, root) is None
    assert cpulimit.cgroup_limit(tmp_path / "absent", root) is None
    cores = len(os.sched_getaffinity(0))
    assert cpulimit.cpu_limit(proc, root) == cores  # the affinity alone


def test_a_v2_cpu_max(tmp_path):
    proc, root = _fake(
        tmp_path, "0::/box/inner\n", V2_MOUNTS,
        {
            "sys/fs/cgroup/box/inner/cpu.max": "max 100000",
            "sys/fs/cgroup/box/cpu.max": "50000 100000",
        },
    )  # fmt: skip
    assert cpulimit.cgroup_limit(proc, root) == pytest.approx(0.5)
    (root / "sys/fs/cgroup/box/cpu.max").write_text("max 100000")
    assert cpulimit.cgroup_limit(proc, root) is None


def test_the_smaller_of_affinity_and_quota(tmp_path):
    proc, root = _fake_v1(tmp_path, "1:cpu:/g\n", {"g": 1000000})
    cores = len(os.sched_getaffinity(0))
    assert cpulimit.cpu_limit(proc, root) == min(cores, 10.0)


CPU_ROOT = Path("/sys/fs/cgroup/cpu")


def test_a_real_cgroup_quota_is_read_by_the_process_inside_it():
    group = CPU_ROOT / f"trainplay-test-{os.getpid()}"
    try:
        group.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot create a cgroup v1 CPU group here ({exc.strerror}): needs root and "
                    "cgroup v1 at /sys/fs/cgroup/cpu")  # fmt: skip
    proc = None
    try:
        (group / "cpu.cfs_period_us").write_text("100000")
        (group / "cpu.cfs_quota_us").write_text("40000")
        code = "from trainplay.hardware.cpulimit import cpu_limit; print(cpu_limit())"
        inner = f"echo $$ > {group / 'cgroup.procs'} && exec {sys.executable} -c '{code}'"
        proc = subprocess.Popen(["sh", "-c", inner], stdout=subprocess.PIPE, text=True,
                                start_new_session=True)  # fmt: skip
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        assert float(out) == pytest.approx(0.4)
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
        deadline = time.monotonic() + 10
        while (group / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.05)
        group.rmdir()
