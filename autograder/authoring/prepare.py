"""prepare: the solution notebook as release uses it, completed from the spec, so that each name is written once:
every cell's nbgrader metadata (solution, locked and grade cells, points from the spec), each prediction's `name =
...` placeholder, each PRODUCE function's `raise NotImplementedError` stub, and each exercise's `lab.check` cell
where the author left them out. What the author wrote is kept; nothing is written back to the author's file.

May import: stdlib, nbformat, autograder.model, autograder.authoring.spec, autograder.judging.sources.
"""
from __future__ import annotations

import copy
import re
from typing import Any

from autograder.authoring.spec import Assignment
from autograder.judging.sources import check_cell_exercise

__all__ = ["PrepareError", "prepare"]
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUDENT_ID_CELL = re.compile(r"\s*STUDENT_ID\s*=")


class PrepareError(ValueError):
    """The notebook cannot be completed: the message names the cell and what to write."""


def _solution_lines(source: str) -> list[str]:
    """The lines between BEGIN and END SOLUTION markers (all regions of the cell)."""
    out, inside = [], False
    for line in source.splitlines():
        if line.strip() == BEGIN:
            inside = True
        elif line.strip() == END:
            inside = False
        elif inside:
            out.append(line)
    return out


def _placeholders(source: str, names: list[tuple[str, str]]) -> str:
    """`source` with a `name = ...   # <what>` line above its first BEGIN SOLUTION for each (name, what) the
    solution region assigns and no line above the region does."""
    lines = source.splitlines()
    begin = next((i for i, line in enumerate(lines) if line.strip() == BEGIN), None)
    if begin is None:
        return source
    above = "\n".join(lines[:begin])
    region = "\n".join(_solution_lines(source))
    indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
    new = [f"{indent}{name} = ...   # {what}" for name, what in names
           if re.search(rf"^\s*{re.escape(name)}\s*=", region, re.M)
           and not re.search(rf"^\s*{re.escape(name)}\s*=", above, re.M)]
    return "\n".join(lines[:begin] + new + lines[begin:]) if new else source


def _stubs(source: str, functions: dict[str, str]) -> str:
    """`source` with `raise NotImplementedError("exercise <e>: write <f>")` after the END SOLUTION of each function
    `def f(...)` (f -> its exercise) whose body ends with a solution region (no statement of the function after its
    END SOLUTION) and has no such line after it, and a bare `return`
    ending such a region where its last statement at the region's indentation is no `return` or `raise` (the same as
    falling off the end of the function, so the solution behaves as written and never reaches the stub)."""
    lines = source.splitlines()
    out: list[str] = []
    current: str | None = None
    for i, line in enumerate(lines):
        out.append(line)
        m = re.match(r"\s*def\s+([A-Za-z_]\w*)\s*\(", line)
        if m and not line[: len(line) - len(line.lstrip())]:
            current = m.group(1)
        elif line.strip() and not line[0].isspace() and not line.lstrip().startswith(("#", ")")):
            current = None
        if line.strip() == END and current in functions:
            rest = next((later for later in lines[i + 1:] if later.strip()), "")
            indent = line[: len(line) - len(line.lstrip())]
            more = bool(rest) and len(rest) - len(rest.lstrip()) >= len(indent)   # the function goes on after
            # its region (given code the learner's part runs before): no stub, no return
            if not more and not re.match(r"\s*raise\s+NotImplementedError\b", rest):
                body = [b for b in out[:-1] if b.strip()]
                last = body[-1] if body else ""
                if not (last.startswith(indent) and not last[len(indent):][:1].isspace()
                        and re.match(r"(return|raise)\b", last.strip())):
                    out.insert(len(out) - 1, f"{indent}return")   # as falling off the end: the stub is never reached
                out.append(f'{indent}raise NotImplementedError("exercise {functions[current]}: write {current}")')
    return "\n".join(out) if len(out) != len(lines) else source


def _parameters_comment(source: str, names: list[str]) -> str:
    """`source` with the comment `# your own numbers: P.x0, P.k` after `P = lab.parameters` listing the spec's
    parameters, where it lists other names (in any order it is left as written; a comment that ends in "..." or
    words is the author's own)."""
    def fix(m: re.Match[str]) -> str:
        listed = [n.strip() for n in m.group(2).split(",")]
        if not all(re.fullmatch(r"P\.\w+", n) for n in listed) or set(listed) == {f"P.{n}" for n in names}:
            return m.group(0)
        return m.group(1) + ", ".join(f"P.{n}" for n in names)
    return re.sub(r"^(P = lab\.parameters\s*# your own numbers: )(.*)$", fix, source, flags=re.M)


def _exercise_cells(nb: Any, a: Assignment) -> dict[str, int]:
    """exercise -> the index of the last solution cell that sets one of its predictions or defines one of its
    functions (where a generated check cell goes, after it)."""
    last: dict[str, int] = {}
    for ex in a.exercises:
        names = [c.name for c in a.checks if c.exercise == ex.id and c.kind == "predict" and c.name]
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or BEGIN not in cell.source:
                continue
            if any(re.search(rf"^\s*{re.escape(n)}\s*=", cell.source, re.M) for n in names) or \
                    any(re.search(rf"^def\s+{re.escape(f)}\s*\(", cell.source, re.M) for f in ex.functions):
                last[ex.id] = i
    return last


def _markers(nb: Any, where: str) -> None:
    """nbgrader takes any line holding "BEGIN SOLUTION" or "END SOLUTION" for a marker (a comment that mentions one
    would end a region early, and ship the rest of it): each such line must be the marker alone."""
    for i, cell in enumerate(nb.cells):
        for n, line in enumerate(cell.source.splitlines(), 1):
            if ("BEGIN SOLUTION" in line or "END SOLUTION" in line) and line.strip() not in (BEGIN, END):
                raise PrepareError(f"{where}: cell {i + 1}, line {n}: {line.strip()[:80]!r} holds the words of a "
                                   f"solution marker, and nbgrader reads every such line as one: write the marker "
                                   f"alone on its line ({BEGIN}, {END}), and other text without those words")


def prepare(nb: Any, a: Assignment, where: str) -> tuple[Any, list[str]]:
    """The solution notebook `nb` (nbformat v4) completed from the spec `a`, and what was added, in words.

    Adds, where the author left them out: a placeholder `name = ...` above the solution region for each
    prediction the region sets; `raise NotImplementedError(...)` after the solution region of each PRODUCE
    function; a `lab.check("<exercise>")` cell after the exercise's last solution cell. Then sets every cell's
    nbgrader metadata (schema 3): a cell with `### BEGIN SOLUTION` is a solution cell, the `STUDENT_ID = ...` cell
    is left unlocked, each check cell is a locked grade cell worth its exercise's points (the spec's sum), every
    other cell is locked; a cell keeps its grade_id when it has a unique one, else gets one ("ex1-check",
    "cell-7").

    A cell the author marked as a solution without markers stays one (nbgrader blanks all of it).

    Raises:
        PrepareError (`where`: the notebook's path, for the message): a line holding the marker words that is not a
            marker; an nbgrader grade or task cell of the author's own (its points would be lost); an exercise with
            two check cells, or whose cells release cannot find.
    """
    import nbformat

    nb = copy.deepcopy(nb)
    _markers(nb, where)
    for i, cell in enumerate(nb.cells):   # the author's own grade cells, by the author's cell numbers
        old = cell.metadata.get("nbgrader", {})
        if old.get("grade") and not (cell.cell_type == "code" and check_cell_exercise(cell.source)) or old.get("task"):
            raise PrepareError(f"{where}: cell {i + 1} ({old.get('grade_id', '')!r}) is an nbgrader "
                               f"{'task' if old.get('task') else 'grade'} cell (a manually graded answer, a task or "
                               f"autograder tests), and autograd-lab grades only through each exercise's lab.check "
                               f"cell, so its points would be lost: remove its grade flag (Jupyter's Create "
                               f"Assignment toolbar: \"-\")")
    added: list[str] = []
    predictions = {ex.id: [(c.name, c.title.removeprefix("predicted: ") if c.visibility == "public" else
                            "your prediction (a hidden check)") for c in a.checks
                           if c.exercise == ex.id and c.kind == "predict" and c.name] for ex in a.exercises}
    functions = {f: ex.id for ex in a.exercises for f in ex.functions}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or BEGIN not in cell.source:
            continue
        source = cell.source
        for names in predictions.values():
            source = _placeholders(source, names)
        placed = [n for names in predictions.values() for n, _ in names
                  if re.search(rf"^\s*{re.escape(n)} = \.\.\.", source, re.M)
                  and not re.search(rf"^\s*{re.escape(n)} = \.\.\.", cell.source, re.M)]
        stubbed = _stubs(source, functions)
        stubs = [f for f in functions if f'write {f}")' in stubbed and f'write {f}")' not in source]
        if stubbed != cell.source:
            added.append(f"cell {i + 1}: " + ", ".join([*(f"{n} = ..." for n in placed),
                                                      *(f"the stub of {f}" for f in stubs)]))
            cell.source = stubbed
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and "lab.parameters" in cell.source:
            source = _parameters_comment(cell.source, list(a.parameters))
            if source != cell.source:
                added.append(f"cell {i + 1}: the parameters' names")
                cell.source = source
    checks: dict[str, list[int]] = {}
    for i, cell in enumerate(nb.cells):
        ex = check_cell_exercise(cell.source) if cell.cell_type == "code" else None
        if ex:
            checks.setdefault(ex, []).append(i)
    for eid, cells in checks.items():
        if len(cells) > 1:
            raise PrepareError(f"{where}: exercise {eid} has {len(cells)} check cells (cells "
                               f"{', '.join(str(i + 1) for i in cells)}); keep one lab.check(\"{eid}\")")
    last = _exercise_cells(nb, a)
    placed: list[str] = []
    for ex in reversed(a.exercises):   # from the end, so that earlier indices stay right
        if ex.id in checks:
            continue
        if ex.id not in last:
            raise PrepareError(f"{where}: no solution cell of exercise {ex.id} (a cell with {BEGIN} that sets one of "
                               f"its predictions or defines one of its functions), so release cannot place its "
                               f"check cell: add the exercise's cells, or a lab.check(\"{ex.id}\") cell")
        cell = nbformat.v4.new_code_cell(f'lab.check("{ex.id}")')
        taken = {c.get("id") for c in nb.cells}
        cell.id = next(i for i in (f"ex{ex.id}-check", *(f"ex{ex.id}-check-{n}" for n in range(1, 99))) if i not in taken)
        nb.cells.insert(last[ex.id] + 1, cell)   # a fixed id: the same student copy at every release
        placed.insert(0, f"a check cell for exercise {ex.id}")   # said in the notebook's order
    added += placed
    points: dict[str, float] = {}
    for c in a.checks:
        points[c.exercise] = points.get(c.exercise, 0.0) + c.points
    seen: set[str] = set()
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    repeated = {g for g in ids if g is not None and ids.count(g) > 1}
    for i, cell in enumerate(nb.cells):
        old = cell.metadata.get("nbgrader", {})
        ex = check_cell_exercise(cell.source) if cell.cell_type == "code" else None
        gid = old.get("grade_id")
        if not (isinstance(gid, str) and re.fullmatch(r"[A-Za-z0-9_-]+", gid)) or gid in repeated or gid in seen:
            gid = f"ex{ex}-check" if ex else f"cell-{i + 1}"
            while gid in seen or gid in ids:
                gid += "-1"
        seen.add(gid)
        # a solution region, or a whole cell the author marked as a solution (nbgrader blanks all of it)
        solution = BEGIN in cell.source or bool(old.get("solution")) and not ex
        meta = {"grade": bool(ex), "grade_id": gid, "locked": not solution and not (
                cell.cell_type == "code" and STUDENT_ID_CELL.match(cell.source)),
                "schema_version": 3, "solution": solution, "task": False}
        if ex:
            meta["points"] = points.get(ex, 0.0)
        if {k: old.get(k) for k in meta} != meta:
            cell.metadata["nbgrader"] = meta
    return nb, added
