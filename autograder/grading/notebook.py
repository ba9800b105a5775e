"""notebook: reading a notebook for grading (nbformat): its code cells and their labels, its declared
student id and assignment, and whether its answer cells are as released (nbgrader's checksums). The student
copy of a solution notebook is authoring's (authoring.student_copy).

May import: stdlib, nbformat, nbgrader (its checksum, for `untouched` only), autograder.grading.intake, autograder.judging.commit, autograder.keyfile.
"""
from __future__ import annotations

import ast
import re
import json
from pathlib import Path
from typing import Any

from autograder.grading import intake
from autograder.judging.commit import COMMIT_MIME
from autograder.keyfile import is_assignment_id

METADATA_KEY = "autograd_lab"
# The setup cell's `Lab("<assignment id>", STUDENT_ID)` (an exercise's check cell: judging.sources).
LAB_CALL = re.compile(r"\bLab\(\s*[\"']([^\"']*)[\"']")


class NotebookError(ValueError):
    """The file cannot be read as a Jupyter notebook; the message says why, for the student (never quoting what
    the file holds)."""


# A notebook's JSON may hold at most this many objects and lists (counted as "{" and "[" bytes, an upper bound) and
# this many values in them (counted as "," bytes: every value but a container's first follows one), so that the
# memory of parsing it is at most about 3 times its size plus what so many small values take (~200 MB; see
# docs/security.md, measured by benchmarks/intake.py). A notebook a student saved holds a few thousand of each; a
# large image is one long string.
MAX_CONTAINERS = 500_000
MAX_VALUES = 2_000_000
# The only outputs grading reads: the commit records of check cells.
KEPT_OUTPUT = COMMIT_MIME


def read_notebook(path: str | Path, outputs: bool = True) -> Any:
    """Read a notebook file named by its user (a learner's own, a solution) through the intake's door (no link
    followed, at most intake.MAX_BYTES): see `parse_notebook`.

    Raises:
        NotebookError: it cannot be read as a notebook (also: it is a link, a FIFO, too large).
    """
    try:
        data = intake.read(intake.given(path))
    except intake.Refused as e:
        raise NotebookError(str(e)) from None
    return parse_notebook(data, Path(path).name, outputs)


def prepare_reading() -> None:
    """Import what reading a notebook needs (nbformat and its reader: about 0.1 s), for a caller with time to spare
    (`grade` and `check`, while the sandbox's worker imports torch)."""
    import nbformat  # noqa: F401
    import nbformat.reader  # noqa: F401


def parse_notebook(data: bytes, name: str, outputs: bool = True) -> Any:
    """`data` (a handed-in file's bytes) as an nbformat v4 notebook named `name`.

    A UTF-8 byte order mark is allowed. nbformat 3 notebooks are converted, as nbformat.reads does; its schema
    validation, which only logs what it finds (nbformat.reads never raises for it), is left out: the cells the
    grader reads are checked here (2-5 ms a notebook saved). `outputs=False` keeps of the outputs only those
    grading reads (commit records), before the notebook is made. Memory: parsing holds at most about 3 times
    `len(data)` plus MAX_CONTAINERS and MAX_VALUES small objects (docs/security.md).

    Raises:
        NotebookError: empty, not UTF-8, not JSON (e.g. truncated, or a .py script), JSON of more than
            MAX_CONTAINERS objects and lists or MAX_VALUES values, or not a notebook (also one whose cells the grader cannot read).
    """
    import nbformat

    if not data.strip():
        raise NotebookError(f"{name} is empty")
    containers, values = data.count(b"{") + data.count(b"["), data.count(b",")
    if containers > MAX_CONTAINERS or values > MAX_VALUES:
        what = (f"{MAX_CONTAINERS:,} JSON objects and lists" if containers > MAX_CONTAINERS
                else f"{MAX_VALUES:,} JSON values")
        raise NotebookError(f"{name} holds more than {what}, which no notebook saved from Jupyter does: clear its "
                            f"outputs (Edit > Clear Outputs of All Cells), save, and hand it in again")
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):   # Windows Notepad's "Unicode": a notebook is UTF-8 (nbformat)
            raise NotebookError(f"{name} is UTF-16 text (an editor saved it as \"Unicode\"); a notebook is UTF-8: "
                                f"open it in Jupyter, or save it again as UTF-8, and hand it in again") from None
        raise NotebookError(f"{name} is not UTF-8 text (byte {e.start})") from None
    if not text.lstrip().startswith(("{", "[")):
        raise NotebookError(f"{name} is not a Jupyter notebook: it is text, not JSON (a script or a text file?); "
                            f"hand in the .ipynb file saved from Jupyter")
    try:
        data_ = json.loads(text)
    except json.JSONDecodeError as e:
        raise NotebookError(f"{name} is not valid JSON ({e.msg}: line {e.lineno}, column {e.colno}); "
                            f"the file may be truncated: re-save it from Jupyter") from None
    except ValueError:   # e.g. an integer of thousands of digits (Python's int limit), which no notebook holds
        raise NotebookError(f"{name} holds a JSON number no notebook saved from Jupyter holds; re-save it from "
                            f"Jupyter") from None
    except RecursionError:
        raise NotebookError(f"{name} is JSON nested too deeply to be a Jupyter notebook; hand in the .ipynb "
                            f"file saved from Jupyter") from None
    del text
    if not isinstance(data_, dict) or ("cells" not in data_ and "worksheets" not in data_):
        raise NotebookError(f"{name} is JSON but not a Jupyter notebook (no cells)")
    if not outputs:
        _keep_read_outputs(data_)
    try:   # nbformat.reads, from the dict already parsed, less its schema validation, which only logs
        from nbformat.reader import get_version

        major, minor = get_version(data_)
        nb = nbformat.convert(nbformat.versions[major].to_notebook_json(data_, minor=minor), 4)
    except Exception as e:  # nbformat raises several unrelated types for a malformed notebook
        raise NotebookError(f"{name} is not a readable notebook: nbformat cannot read its cells "
                            f"({type(e).__name__}); re-save it from Jupyter") from None
    problem = _unreadable_cell(nb)
    if problem:
        raise NotebookError(f"{name} is not a readable notebook: {problem}; re-save it from Jupyter")
    return nb


def _keep_read_outputs(data: dict) -> None:
    """Drop, in place, every output of a v4 notebook's cells but the commit records grading reads."""
    cells = data.get("cells")
    if not isinstance(cells, list):
        return
    for cell in cells:
        outs = cell.get("outputs") if isinstance(cell, dict) else None
        if isinstance(outs, list):
            cell["outputs"] = [o for o in outs if isinstance(o, dict) and isinstance(o.get("data"), dict)
                               and KEPT_OUTPUT in o["data"]]


def _is_text(source: Any) -> bool:
    """Is a cell's source text, as nbformat writes it (a string, or a list of strings)?"""
    return isinstance(source, str) or isinstance(source, list) and all(isinstance(s, str) for s in source)


def _unreadable_cell(nb: Any) -> str | None:
    """What keeps the grader from reading the cells (nbformat only logs schema errors), or None."""
    if not isinstance(nb.get("cells"), list):
        return "its cells are not a list"
    for i, cell in enumerate(nb.cells):
        if not isinstance(cell, dict) or not isinstance(cell.get("metadata", {}), dict):
            return f"cell {i + 1} is not a notebook cell"
        if cell.get("cell_type") == "code" and "source" not in cell:
            return f"code cell {i + 1} has no source"
        if cell.get("cell_type") == "code" and not _is_text(cell.get("source", "")):
            return f"the source of cell {i + 1} is not text"
    return None


def restore_cell_types(nb: Any) -> list[str]:
    """Give back their released type to cells a learner turned from code into Markdown or Raw (in Jupyter, one key
    press: M or R), as nbgrader does (jupyter/nbgrader#107): a cell whose nbgrader metadata says it was released
    as a code cell (`cell_type` "code", which nbgrader records with its checksum) is a code cell again, in place.
    Returns a note for each, for the report."""
    notes = []
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader")
        if cell.get("cell_type") in ("markdown", "raw") and isinstance(meta, dict) and meta.get("cell_type") == "code" \
                and _is_text(cell.get("source")):   # a cell without text stays what it is (no code either way)
            was = cell.cell_type
            cell.cell_type = "code"
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)
            gid = meta.get("grade_id")
            name = f"cell {i + 1}" + (f" ('{_printable_id(gid)}')" if isinstance(gid, str) else "")
            notes.append(f"{name} is a {was} cell in this notebook, but it was released as a code cell, so it was "
                         f"graded as code (a {was} cell never runs in Jupyter: change it back to Code)")
    return notes


def _printable_id(gid: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in gid[:40]) + ("…" if len(gid) > 40 else "")


# How much code the grader reads as syntax trees on the host (judging.sources, judging.worked): a syntax tree
# takes up to ~1 KB of memory per character of code. The released notebooks hold 5,000-23,000 characters of code
# in 21-33 code cells.
MAX_CODE_CHARACTERS = 300_000
MAX_CODE_CELLS = 500


def code_beyond_reading(cells: list[str]) -> str:
    """Why the grader does not read these code cells (more than MAX_CODE_CELLS, or more than MAX_CODE_CHARACTERS
    in all), or "" when it does."""
    if len(cells) > MAX_CODE_CELLS:
        return (f"has {len(cells):,} code cells, more than the {MAX_CODE_CELLS:,} the grader reads: hand in the "
                f"released notebook with your work in its cells")
    size = sum(len(c) for c in cells)
    if size > MAX_CODE_CHARACTERS:
        return (f"holds {size:,} characters of code, more than the {MAX_CODE_CHARACTERS:,} the grader reads (the "
                f"released notebook holds about 10,000): hand in your work without generated or pasted bulk")
    return ""


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
                gid = _printable_id(gid)
            labels.append(f"cell {i + 1} ('{gid}')" if isinstance(gid, str) else f"cell {i + 1}")
    return labels


def declared_student_id(nb: Any) -> str | None:
    """The string literal assigned to STUDENT_ID in a code cell, read with `ast` (never executed)."""
    for source in code_cells(nb):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):   # ValueError: a lone surrogate, say
            continue
        for node in tree.body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id == "STUDENT_ID" and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str)):
                return node.value.value.strip()
    return None


def declared_assignment(nb: Any) -> str | None:
    """The assignment id the notebook says it is: the first `Lab("<id>", ...)` call in its code cells (the locked
    setup cell; read with `ast`, so a comment or a string says nothing), else the id `release` stored in its
    metadata (which nbgrader's copies drop and a student can edit); None if neither, or if what it says is not the
    shape of an assignment id (keyfile.is_assignment_id: it is never a path)."""
    for source in code_cells(nb):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Lab" and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                aid = node.args[0].value
                return aid if is_assignment_id(aid) else None
    meta = nb.get("metadata", {}).get(METADATA_KEY, {})
    value = meta.get("assignment") if isinstance(meta, dict) else None
    return value if is_assignment_id(value) else None


def not_work(data: bytes, name: str) -> str:
    """Why a handed-in notebook beside a student's worked one is not work on the assignment: "no cell of the
    assignment" (a scratch Untitled.ipynb: no cell carries an nbgrader grade_id) or "unchanged since its release" (an
    untouched -Copy1: see `untouched`); "" when it may be work, or cannot be read (graded, and its report says why).
    nbgrader #258 ("skip extra notebooks")."""
    try:
        nb = parse_notebook(data, name, outputs=False)
    except (NotebookError, RecursionError):
        return ""
    ours = any(isinstance(c.get("metadata", {}).get("nbgrader"), dict) and c.metadata["nbgrader"].get("grade_id")
               for c in nb.cells)
    if not ours:
        return "no cell of the assignment"
    return "unchanged since its release" if untouched(nb) else ""


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
