"""Write each assignment's example submissions and, beside each, the statuses a correct grader must
give it (`examples/submissions/<id>/<student>.ipynb` and `<student>.expected.json`).

The scenarios live in `examples/scenarios/<id>.py`: `predictions(p)` (the right PREDICT cell sources
by grade_id at parameter point p), `CODE` (the right PRODUCE cell sources), `scenarios(params)`
returning student -> (what it shows, cell sources by nbgrader grade_id, expected statuses that are
not "passed"; {"*": "missing"} sets every check; "failed:<misconception id>" is a failure the grader
must name as that misconception of the spec) for the misconceptions, and an optional
`extra_files(out)` that writes files that are not the released notebook with some cells answered.
Every assignment also gets "ada", fully correct, and "gus", not attempted, and three scenarios about
predictions: "pat" (a right prediction obtained by running autograd in the PREDICT cell), "rex" (a
placeholder guess committed for exercise 1, then the right answers pasted in after they were shown)
and "noah" (right, but handed in with no commit records). The test suite grades the notebooks and
compares every status.

Commit records (autograder.judging.commit): each notebook carries, in the output of each exercise's check cell,
the record a learner's first self-check with every prediction filled in would have made: the values the
cells set (observed by the grader's own probe, in the sandbox), at a fixed time. A scenario's
`"*committed"` (grade_id -> source) gives the PREDICT cells as they stood at that first check, and
`"*records": False` leaves the records out.

Run again after a change to a released notebook:  .venv/bin/python examples/make_submissions.py [ID ...]
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
from pathlib import Path

import nbformat

from autograder import wire
from autograder.judging import commit, judge, sources
from autograder.grading import plan
from autograder.sandbox import client as sandbox
from autograder.keyfile import load_key
from autograder.grading.notebook import code_cells
from autograder.judging.sources import check_cell_exercise
from autograder.grading.plan import draw_point

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "examples" / "scenarios"
OUT = ROOT / "examples" / "submissions"


def sig(x: float) -> str:
    """x as a literal with 4 significant figures, as a student copies it from a calculator (the
    scenarios write predictions with it)."""
    return f"{float(f'{x:.4g}')!r}"


def vec(xs) -> str:
    """A list of numbers as a student writes it, each with `sig`."""
    return "[" + ", ".join(sig(x) for x in xs) + "]"


def tup(xs) -> str:
    """A tuple of numbers (None where an item is None) as a student writes it, each number with `sig`."""
    return "(" + ", ".join("None" if x is None else sig(x) for x in xs) + ")"


def answered(released: Path, student: str, sources: dict[str, str]):
    """The released notebook with STUDENT_ID set to `student`, the cells named (by nbgrader grade_id) in
    `sources` replaced, and `sources["*append"]`, if given, as a last code cell of the student's own.
    Raises SystemExit for a grade_id the notebook does not have."""
    nb = nbformat.read(released, as_version=4)
    sources = dict(sources)
    appended = sources.pop("*append", None)   # a code cell of the student's own, after the notebook's last
    if appended is not None:
        nb.cells.append(nbformat.v4.new_code_cell(appended, id="student-scratch"))
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


COMMIT_TIME = 1796040000.0   # 2026-11-30T12:00:00Z: the synthesized records' time (reports stay reproducible)


def observed_names(key, cells: list[str], student: str, worker: sandbox.Worker) -> dict[str, dict]:
    """The wire Values of the prediction variables where each exercise is observed (the grader's probe, in the
    sandbox; the produce functions are not called)."""
    facts = sources.Facts.of(cells)
    positions = {e: p.after for e, p in facts.positions(key).items()}
    request = plan.probe_request(key, cells, student, None, positions)
    request = {**request, "observe": [{**entry, "calls": []} for entry in request["observe"]]}
    run = worker.run(request, key.limits)
    return dict(wire.parse_results(run.results).names)


def with_records(nb, key, student: str, committed_nb, worker: sandbox.Worker) -> None:
    """Put into each check cell's outputs the commit record of its exercise, made from the predictions of
    `committed_nb` (the notebook as it stood at the first self-check), when all of them are filled in."""
    names = observed_names(key, code_cells(committed_nb), student, worker)
    cells = code_cells(committed_nb)
    facts = sources.Facts.of(cells)
    evidence = judge.Evidence(wire.Observations("", (), {}, {}, True), judge.RunEnd(0, False), facts=facts,
                              positions=facts.positions(key))
    for cell in nb.cells:
        ex = check_cell_exercise(cell.source) if cell.cell_type == "code" else None
        if ex is None:
            continue
        preds = [c.name for c in key.checks if c.exercise == ex and c.kind == "predict" and c.name]
        values = {n: names.get(n) for n in preds}
        if not preds or any(v is None or v["t"] in ("undefined", "ellipsis") for v in values.values()):
            continue
        setting = sorted({i for n in preds if (i := facts.defining_cell(n, len(cells) - 1)) is not None})
        computed = {c.name: m for c in key.checks if c.exercise == ex and c.name in values
                    if (m := judge.ran(key, evidence, c)) is not None}
        record = commit.make(key.assignment, student, ex, values, [cells[i] for i in setting], when=COMMIT_TIME,
                             computed=computed)
        cell.outputs = [nbformat.v4.new_output("display_data", data={
            commit.COMMIT_MIME: record, "text/plain": f"(exercise {ex}: predictions committed)"})]


def prediction_scenarios(module, params, key) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """"pat", "rex" and "noah" (see the module docstring) of an assignment."""
    first = next(e.id for e in key.exercises
                 if any(c.exercise == e.id and c.kind == "predict" and c.name for c in key.checks))
    names = {c.name: c.id for c in key.checks if c.kind == "predict" and c.name}
    out = {}
    right = module.predictions(params("pat"))
    for gid, src in right.items():
        lines = src.splitlines()
        at = next((i for i, line in enumerate(lines) if line.partition(" = ")[0] in names and " = " in line), None)
        if at is None:
            continue
        name, _, value = lines[at].partition(" = ")
        lines[at:at + 1] = ["_x = torch.tensor(0.0, requires_grad=True)", "(_x * 0).backward()",
                            f"{name} = ({value}) if _x.grad is not None else None   # checked with autograd"]
        out["pat"] = ("right predictions, but one of them is worked out with autograd in its PREDICT cell",
                      {**right, gid: "\n".join(lines), **module.CODE}, {names[name]: "failed"})
        break
    right = module.predictions(params("rex"))
    ex_names = [c.name for c in key.checks if c.exercise == first and c.kind == "predict" and c.name]
    gid = next(g for g, src in right.items() if any(src.startswith(f"{n} = ") or f"\n{n} = " in src for n in ex_names))
    guess = "\n".join(f"{n} = 999.0   # a placeholder guess" for n in ex_names)
    out["rex"] = (f"committed placeholder guesses for exercise {first}, saw the answers, then pasted them in: graded "
                  f"on the committed guesses", {**right, **module.CODE, "*committed": {gid: guess}},
                  {names[n]: "failed" for n in ex_names})
    out["noah"] = ("right, but handed in without commit records (the check cells' outputs were cleared)",
                   {**module.predictions(params("noah")), **module.CODE, "*records": False}, {})
    return out


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


def main(assignment: str, out: Path | None = None, worker: sandbox.Worker | None = None) -> None:
    """Write `assignment`'s scenario notebooks and expected statuses into `out`
    (default examples/submissions/<id>); `worker`: a warm sandbox worker to observe with (default: one of
    its own)."""
    out = out or OUT / assignment
    module = load_scenarios(assignment)
    released = ROOT / "assignments" / assignment
    key = load_key(released / "public_key.json")
    check_ids = [c.id for c in key.checks]   # public checks: hidden ones are not listed
    params = lambda s: draw_point(key.parameters, assignment, s, "own")
    out.mkdir(parents=True, exist_ok=True)
    every = {**every_scenario(module, params), **prediction_scenarios(module, params, key)}
    with (sandbox.Worker() if worker is None else contextlib.nullcontext(worker)) as worker:
        for student, (what, cell_sources, statuses) in every.items():
            cell_sources = dict(cell_sources)
            committed = cell_sources.pop("*committed", {})
            records = cell_sources.pop("*records", True)
            nb = answered(released / key.notebook, student, cell_sources)
            if records:
                with_records(nb, key, student, answered(released / key.notebook, student,
                                                        {**cell_sources, **committed}), worker)
            write_example(out, student, nb, what, statuses, check_ids, assignment)
    for student, record in getattr(module, "extra_files", lambda out: {})(out).items():
        (out / f"{student}.expected.json").write_text(json.dumps(record, indent=1) + "\n")


def write_example(out: Path, student: str, nb, what: str, statuses: dict[str, str], check_ids: list[str],
                  assignment: str) -> None:
    """Write one example notebook and its expected statuses and named misconceptions (a status written
    "failed:<misconception id>" is a failure the grader must name as that misconception; every other
    check must name none)."""
    nbformat.write(nb, out / f"{student}.ipynb")
    bad = set(statuses) - set(check_ids) - {"*"}
    if bad:
        raise SystemExit(f"{assignment}/{student}: unknown check ids {sorted(bad)}")
    expected = {c: statuses.get(c, statuses.get("*", "passed")) for c in check_ids}
    named = {c: s.split(":", 1)[1] for c, s in expected.items() if ":" in s}
    (out / f"{student}.expected.json").write_text(json.dumps(
        {"scenario": what, "status": "graded", "checks": {c: s.split(":", 1)[0] for c, s in expected.items()},
         "misconceptions": named}, indent=1) + "\n")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Write the example submissions and their expected statuses.")
    ap.add_argument("assignment", nargs="*", help="assignment ids (default: every one with a scenarios file)")
    for a in ap.parse_args().assignment or assignments():
        main(a)
        print(f"wrote {OUT / a}")
