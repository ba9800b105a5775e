"""How many runs go at once: sandbox.cgroup.usable_cores reads the CPU affinity and the CPU quota of the process's
cgroup and its ancestors (v2 cpu.max, v1 cpu.cfs_quota_us), from files laid out as the kernel lays them out (the
domain check's Budget.jobs and `grade --jobs` use it; tests/test_release.py checks those)."""
from __future__ import annotations

import os
from pathlib import Path

from autograder.sandbox import cgroup

AFFINITY = len(os.sched_getaffinity(0))


def _v2(tmp_path: Path, quotas: dict[str, str]) -> tuple[str, str]:
    """A cgroup2 mount at tmp/cg with the process in /course/run, and cpu.max in the folders given."""
    (tmp_path / "cg" / "course" / "run").mkdir(parents=True)
    for folder, text in quotas.items():
        (tmp_path / "cg" / folder / "cpu.max").write_text(text + "\n")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"30 20 0:26 / {tmp_path}/cg rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n")
    own = tmp_path / "own"
    own.write_text("0::/course/run\n")
    return str(mountinfo), str(own)


def test_a_cgroup2_quota_of_half_a_core_is_one_core_and_an_ancestors_quota_counts(tmp_path):
    assert cgroup.usable_cores(*_v2(tmp_path / "a", {"course/run": "50000 100000"})) == 1
    assert cgroup.usable_cores(*_v2(tmp_path / "b", {"course/run": "max 100000", "course": "100000 100000"})) == 1
    # 2.5 cores of quota: 3 runs keep them busy, where the affinity allows 3
    assert cgroup.usable_cores(*_v2(tmp_path / "c", {"course/run": "250000 100000"})) == min(3, AFFINITY)


def test_no_quota_leaves_the_affinity_and_unreadable_files_are_no_quota(tmp_path):
    assert cgroup.usable_cores(*_v2(tmp_path / "a", {"course/run": "max 100000"})) == AFFINITY
    assert cgroup.usable_cores(*_v2(tmp_path / "b", {"course/run": "a lot"})) == AFFINITY
    assert cgroup.usable_cores(str(tmp_path / "no-such-mountinfo"), str(tmp_path / "no-such-own")) == AFFINITY


def test_a_cgroup_v1_cfs_quota_counts(tmp_path):
    (tmp_path / "cpu" / "grader").mkdir(parents=True)
    (tmp_path / "cpu" / "grader" / "cpu.cfs_quota_us").write_text("150000\n")
    (tmp_path / "cpu" / "grader" / "cpu.cfs_period_us").write_text("100000\n")
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"35 25 0:31 / {tmp_path}/cpu rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n")
    own = tmp_path / "own"
    own.write_text("4:cpu,cpuacct:/grader\n1:name=systemd:/\n0::/\n")
    assert cgroup.usable_cores(str(mountinfo), str(own)) == min(2, AFFINITY)
