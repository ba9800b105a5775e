"""Learners work where they already are (issue 18): `autograder check` without bubblewrap says plainly which
isolation it used. (The torch requirement and the version notes: tests/fast/test_version_notes.py.)"""
from __future__ import annotations

import os
import shutil
import sys


from conftest import EXAMPLES, run_cli


def test_check_without_bubblewrap_says_which_isolation_it_used(released, tmp_path):
    out, _ = released
    bin_only = tmp_path / "bin"   # a PATH with Python and no bwrap, as on a laptop without bubblewrap
    bin_only.mkdir()
    os.symlink(sys.executable, bin_only / "python")
    shutil.copy(EXAMPLES / "ada.ipynb", tmp_path / "mine.ipynb")
    p = run_cli("check", str(tmp_path / "mine.ipynb"), "--key", str(out / "public_key.json"),
                env={"PATH": str(bin_only)})
    assert p.returncode == 0, p.stdout + p.stderr
    assert ("sandbox: own process only (bwrap is not installed): files and network are not isolated"
            in p.stdout), p.stdout
    assert "score 26 / 26" in p.stdout
