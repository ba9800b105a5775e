"""Write each assignment's example submissions and, beside each, the statuses a correct grader must
give it (`examples/submissions/<id>/<student>.ipynb` and `<student>.expected.json`).

The scenarios live in `examples/scenarios/<id>.py`: `predictions(p)` (the right PREDICT cell sources
by grade_id at parameter point p), `CODE` (the right PRODUCE cell sources), `scenarios(params)`
returning student -> (what it shows, cell sources by nbgrader grade_id, expected statuses that are
not "passed"; {"*": "missing"} sets every check) for the misconceptions, and an optional
`extra_files(out)` that writes files that are not the released notebook with some cells answered.
Every assignment also gets "ada", fully correct, and "gus", not attempted. The test suite grades the
notebooks and compares every status.

Run again after a change to a released notebook:  .venv/bin/python examples/make_submissions.py [ID ...]
"""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import nbformat

from autograder.keyfile import load_key
from autograder.plan import draw_point

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "examples" / "scenarios"
OUT = ROOT / "examples" / "submissions"


def sig(x: float) -> str:
    """x as a literal with 4 significant figures, as a student copies it from a calculator (the
    scenarios write predictions with it)."""
    return f"{float(f'{x:.4g}')!r}"


def answered(released: Path, student: str, sources: dict[str, str]):
    """The released notebook with STUDENT_ID set to `student` and the cells named (by nbgrader
    grade_id) in `sources` replaced. Raises SystemExit for a grade_id the notebook does not have."""
    nb = nbformat.read(released, as_version=4)
    unknown = set(sources) - {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells}
    if unknown:
        raise SystemExit(f"{released.name}/{student}: no cell with grade_id {sorted(unknown)}")
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid == "student-id":
            cell.source = f'STUDENT_ID = "{student}"'
        elif gid in sources:
            cell.source = sources[gid]
    return nb


def load_scenarios(assignment: str):
    """The scenarios module of `assignment` (examples/scenarios/<id>.py); it may import this module."""
    if str(ROOT / "examples") not in sys.path:
        sys.path.insert(0, str(ROOT / "examples"))
    spec = importlib.util.spec_from_file_location(f"scenarios_{assignment.replace('-', '_')}",
                                                  SCENARIOS / f"{assignment}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def every_scenario(module, params) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """student -> (what it shows, cell sources by grade_id, non-passed statuses): the correct "ada",
    the scenarios `module` writes, and the not-attempted "gus". `params(student)` gives the
    student's parameter point."""
    return {"ada": ("fully correct", {**module.predictions(params("ada")), **module.CODE}, {}),
            **module.scenarios(params),
            "gus": ("not attempted (only STUDENT_ID set)", {}, {"*": "missing"})}


def assignments() -> list[str]:
    """Every assignment id that has a scenarios file, sorted."""
    return sorted(p.stem for p in SCENARIOS.glob("*.py"))


def main(assignment: str, out: Path | None = None) -> None:
    """Write `assignment`'s scenario notebooks and expected statuses into `out`
    (default examples/submissions/<id>)."""
    out = out or OUT / assignment
    module = load_scenarios(assignment)
    released = ROOT / "assignments" / assignment
    key = load_key(released / "public_key.json")
    check_ids = [c.id for c in key.checks]   # public checks: hidden ones are not listed
    params = lambda s: draw_point(key.parameters, assignment, s, "own")
    out.mkdir(parents=True, exist_ok=True)
    for student, (what, sources, statuses) in every_scenario(module, params).items():
        nbformat.write(answered(released / key.notebook, student, sources), out / f"{student}.ipynb")
        bad = set(statuses) - set(check_ids) - {"*"}
        if bad:
            raise SystemExit(f"{assignment}/{student}: unknown check ids {sorted(bad)}")
        expected = {c: statuses.get(c, statuses.get("*", "passed")) for c in check_ids}
        (out / f"{student}.expected.json").write_text(json.dumps(
            {"scenario": what, "status": "graded", "checks": expected}, indent=1) + "\n")
    for student, record in getattr(module, "extra_files", lambda out: {})(out).items():
        (out / f"{student}.expected.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Write the example submissions and their expected statuses.")
    ap.add_argument("assignment", nargs="*", help="assignment ids (default: every one with a scenarios file)")
    for a in ap.parse_args().assignment or assignments():
        main(a)
        print(f"wrote {OUT / a}")
