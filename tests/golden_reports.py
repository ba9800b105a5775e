"""Golden reports: the canonical report of every example submission of every assignment, graded with a
fixed key secret (so that the fresh points are the same in every run), saved in tests/golden/<id>/.

A change that is meant to keep reports the same (a refactoring, a speed-up) must leave them byte-identical
apart from timing (`seconds`) and the installed sympy's version string; a change that is meant to alter
reports regenerates them and the diff shows exactly what changed:

    .venv/bin/python tests/golden_reports.py [ID ...]      # rewrite tests/golden/<id>/*.json
"""
from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
SECRET = "-golden-reports"   # seeds the graded fresh points of every golden report


def normalised(report: dict) -> dict:
    """A report's JSON form without what may differ between two correct runs: its wall time and the
    installed sympy's version string."""
    out = {**report, "seconds": 0.0, "versions": {**report.get("versions", {}), "sympy": "*"}}
    return json.loads(json.dumps(out))   # as written: lists, not tuples


def grade_examples(assignment: str, key, worker=None) -> dict[str, dict]:
    """student -> normalised report of each example submission of `assignment`, graded with `key`."""
    from autograder.grading.grade import grade_notebook

    folder = ROOT / "examples" / "submissions" / assignment
    return {p.stem: normalised(grade_notebook(p, key, p.stem, worker=worker).to_dict())
            for p in sorted(folder.glob("*.ipynb"))}


def golden_key(assignment: str, base: Path):
    """Release `assignment` into `base` and return its full key with the golden secret."""
    from autograder.authoring.release import release
    from autograder.keyfile import load_key

    r = release(ROOT / "solutions" / assignment, base / "assignments", base / "build")
    return replace(load_key(r.key), fresh_seed=SECRET)


def main(ids: list[str]) -> None:
    from autograder.sandbox.client import Worker

    ids = ids or sorted(p.parent.name for p in (ROOT / "solutions").glob("*/spec.toml"))
    with tempfile.TemporaryDirectory() as tmp, Worker([str(ROOT / "solutions"), tmp]) as worker:
        for assignment in ids:
            key = golden_key(assignment, Path(tmp) / assignment)
            out = GOLDEN / assignment
            out.mkdir(parents=True, exist_ok=True)
            for student, report in grade_examples(assignment, key, worker).items():
                (out / f"{student}.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
            print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
