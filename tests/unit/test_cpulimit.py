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


def test_a_v1_quota_is_quota_over_period_and_the_strictest_ancestor_wins(tmp_path):
    base = "sys/fs/cgroup/cpu"
    proc, root = _fake(
        tmp_path, "4:memory:/job\n1:cpu:/job/slow\n0::/\n", V1_MOUNTS,
        {
            f"{base}/job/slow/cpu.cfs_quota_us": "40000",
            f"{base}/job/slow/cpu.cfs_period_us": "100000",
            f"{base}/job/cpu.cfs_quota_us": "150000", f"{base}/job/cpu.cfs_period_us": "100000",
            f"{base}/cpu.cfs_quota_us": "-1", f"{base}/cpu.cfs_period_us": "100000",
        },
    )  # fmt: skip
    assert cpulimit.cgroup_limit(proc, root) == pytest.approx(0.4)
    (root / base / "job" / "cpu.cfs_quota_us").write_text("20000")  # the parent is stricter
    assert cpulimit.cgroup_limit(proc, root) == pytest.approx(0.2)


def test_no_limit_set_or_nothing_readable_is_none(tmp_path):
    base = "sys/fs/cgroup/cpu"
    proc, root = _fake(
        tmp_path, "1:cpu:/\n", V1_MOUNTS,
        {f"{base}/cpu.cfs_quota_us": "-1", f"{base}/cpu.cfs_period_us": "100000"},
    )  # fmt: skip
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
    base = "sys/fs/cgroup/cpu"
    proc, root = _fake(
        tmp_path, "1:cpu:/g\n", V1_MOUNTS,
        {f"{base}/g/cpu.cfs_quota_us": "1000000", f"{base}/g/cpu.cfs_period_us": "100000"},
    )  # fmt: skip
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
