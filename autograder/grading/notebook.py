"""notebook: reading a notebook for grading (nbformat): its code cells and their labels, its declared
student id and assignment, and whether its answer cells are as released (nbgrader's checksums). The student
copy of a solution notebook is authoring's (authoring.student_copy).

May import: stdlib, nbformat, nbgrader (its checksum, for `untouched` only).
"""
from __future__ import annotations

import ast
import re
import json
from pathlib import Path
from typing import Any

METADATA_KEY = "autograd_lab"
# The setup cell's `Lab("<assignment id>", STUDENT_ID)` (an exercise's check cell: judging.sources).
LAB_CALL = re.compile(r"\bLab\(\s*[\"']([^\"']*)[\"']")


class NotebookError(ValueError):
    """The file cannot be read as a Jupyter notebook; the message says why, for the student."""


def read_notebook(path: str | Path) -> Any:
    """Read `path` as an nbformat v4 notebook.

    Raises NotebookError for a file that is missing, empty, not UTF-8, not JSON (e.g. truncated, or a
    .py script), or not a notebook (also one whose cells the grader cannot read). A UTF-8 byte order
    mark is allowed. nbformat 3 notebooks are converted, as nbformat.reads does; its schema validation, which
    only logs what it finds (nbformat.reads never raises for it), is left out: the cells the grader reads are
    checked here (2-5 ms a notebook saved).
    """
    import nbformat

    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise NotebookError(f"cannot read {p.name}: {e.strerror}") from None
    if not raw.strip():
        raise NotebookError(f"{p.name} is empty")
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise NotebookError(f"{p.name} is not UTF-8 text (byte {e.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        if not text.lstrip().startswith(("{", "[")):
            first = text.strip().splitlines()[0][:60]
            raise NotebookError(f"{p.name} is not a Jupyter notebook: it is text, not JSON (it starts with "
                                f"{first!r}); hand in the .ipynb file saved from Jupyter") from None
        raise NotebookError(f"{p.name} is not valid JSON ({e.msg}: line {e.lineno}, column {e.colno}); "
                            f"the file may be truncated: re-save it from Jupyter") from None
    except RecursionError:
        raise NotebookError(f"{p.name} is JSON nested too deeply to be a Jupyter notebook; hand in the .ipynb "
                            f"file saved from Jupyter") from None
    if not isinstance(data, dict) or ("cells" not in data and "worksheets" not in data):
        raise NotebookError(f"{p.name} is JSON but not a Jupyter notebook (no cells)")
    try:   # nbformat.reads, from the dict already parsed, less its schema validation, which only logs
        from nbformat.reader import get_version

        major, minor = get_version(data)
        nb = nbformat.convert(nbformat.versions[major].to_notebook_json(data, minor=minor), 4)
    except Exception as e:  # nbformat raises several unrelated types for a malformed notebook
        raise NotebookError(f"{p.name} is not a readable notebook: {type(e).__name__}: {str(e)[:200]}") from None
    problem = _unreadable_cell(nb)
    if problem:
        raise NotebookError(f"{p.name} is not a readable notebook: {problem}; re-save it from Jupyter")
    return nb


def _unreadable_cell(nb: Any) -> str | None:
    """What keeps the grader from reading the cells (nbformat only logs schema errors), or None."""
    if not isinstance(nb.get("cells"), list):
        return "its cells are not a list"
    for i, cell in enumerate(nb.cells):
        if not isinstance(cell, dict) or not isinstance(cell.get("metadata", {}), dict):
            return f"cell {i + 1} is not a notebook cell"
        if cell.get("cell_type") == "code" and "source" not in cell:
            return f"code cell {i + 1} has no source"
        source = cell.get("source", "")
        if cell.get("cell_type") == "code" and not (
                isinstance(source, str) or isinstance(source, list) and all(isinstance(s, str) for s in source)):
            return f"the source of cell {i + 1} is not text"
    return None


def code_cells(nb: Any) -> list[str]:
    """The source of each code cell, in order (markdown and raw cells are skipped)."""
    return [c.source if isinstance(c.source, str) else "".join(c.source)
            for c in nb.cells if c.get("cell_type") == "code"]


def code_cell_labels(nb: Any) -> list[str]:
    """A name for each code cell a student can find: its nbgrader id when it has one, and its
    position among all cells (counting from 1, as they appear in Jupyter)."""
    labels = []
    for i, cell in enumerate(nb.cells):
        if cell.get("cell_type") == "code":
            meta = cell.get("metadata", {}).get("nbgrader")
            gid = meta.get("grade_id") if isinstance(meta, dict) else None
            if isinstance(gid, str):   # the student's text: short, and no control characters
                gid = "".join(c if c.isprintable() else "?" for c in gid[:40]) + ("…" if len(gid) > 40 else "")
            labels.append(f"cell {i + 1} ('{gid}')" if isinstance(gid, str) else f"cell {i + 1}")
    return labels


def declared_student_id(nb: Any) -> str | None:
    """The string literal assigned to STUDENT_ID in a code cell, read with `ast` (never executed)."""
    for source in code_cells(nb):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id == "STUDENT_ID" and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str)):
                return node.value.value.strip()
    return None


def declared_assignment(nb: Any) -> str | None:
    """The assignment id the notebook says it is: the first `Lab("<id>", ...)` in its code cells (the
    locked setup cell), else the id `release` stored in its metadata (which nbgrader's copies drop
    and a student can edit); None if neither."""
    for source in code_cells(nb):
        m = next((m for m in LAB_CALL.finditer(source) if m.group(1)), None)
        if m:
            return m.group(1)
    meta = nb.get("metadata", {}).get(METADATA_KEY, {})
    value = meta.get("assignment") if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def untouched(nb: Any) -> bool:
    """Is every answer cell (nbgrader solution cell) of the notebook as the release made it? nbgrader
    stores each solution cell's checksum when it makes the student copy (nbgrader.utils.compute_checksum);
    a cell a student edited no longer matches it. False for a notebook without such cells."""
    from nbgrader.utils import compute_checksum

    cells = [c for c in nb.cells if isinstance(c.get("metadata", {}).get("nbgrader"), dict)
             and c.metadata["nbgrader"].get("solution")]
    try:
        return bool(cells) and all(compute_checksum(c) == c.metadata["nbgrader"].get("checksum") for c in cells)
    except Exception:   # odd metadata: not provably untouched
        return False
