"""Shared fixtures: the real assignment released once per session into a temporary folder."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "01-backward-vs-grad"
SOLUTION = ROOT / "solutions" / ASSIGNMENT
EXAMPLES = ROOT / "examples" / "submissions" / ASSIGNMENT


def run_cli(*args: str, cwd: Path = ROOT, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `python -m autograder ARGS` as a user would; returns the completed process (text)."""
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="session")
def released(tmp_path_factory):
    """Release 01 into a temporary assignments/ and build/; returns (assignments_dir, key_path)."""
    from autograder.key import release

    base = tmp_path_factory.mktemp("release")
    r = release(SOLUTION, base / "assignments", base / "build")
    return base / "assignments" / ASSIGNMENT, Path(r.key)


@pytest.fixture(scope="session")
def key(released):
    from autograder.key import load_key

    return load_key(released[1])


@pytest.fixture
def solution_copy(tmp_path):
    """A writable copy of the solution folder, inside a fake project (solutions/<id>)."""
    dst = tmp_path / "solutions" / ASSIGNMENT
    shutil.copytree(SOLUTION, dst)
    return dst
