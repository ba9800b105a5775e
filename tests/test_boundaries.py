"""Are the module boundaries kept: no answers or grader code in the probe, lazy heavy imports?"""
import subprocess
import sys

import pytest


def _modules_after(stmt):
    code = f"import sys; {stmt}; print(' '.join(sorted(sys.modules)))"
    return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())


def test_cli_help_imports_neither_torch_nor_sympy():
    mods = _modules_after("import autograder.cli as c\ntry:\n    c.main(['--help'])\nexcept SystemExit: pass")
    assert "torch" not in mods and "sympy" not in mods


@pytest.mark.parametrize("module, forbidden", [
    ("autograder.probe", {"sympy", "autograder.spec", "autograder.key", "autograder.grade", "autograder.compare",
                          "autograder.analytic", "autograder.report"}),
    ("autograder.analytic", {"torch"}),
    ("autograder.compare", {"torch", "sympy"}),
    ("autograder.report", {"torch", "sympy"}),
    ("autograder.render.terminal", {"torch", "sympy"}),
    ("autograder.render.gradebook", {"torch", "sympy"}),
    ("autograder.render.html", {"torch", "sympy"}),
    ("autograder.lab", {"sympy", "autograder.key", "autograder.grade", "autograder.compare", "autograder.analytic",
                        "autograder.render.html", "jinja2"}),
])
def test_import_rules(module, forbidden):
    assert not (_modules_after(f"import {module}") & forbidden)


def test_no_pickle_eval_or_exec_of_student_text_in_the_grader():
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parent.parent / "autograder"
    for path in root.rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"\b(pickle|marshal|shelve|dill)\b|torch\.load\(|\beval\(|\bexec\(|sympify\(", text), path


def test_ruff_finds_nothing():
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "autograder", "tests", "examples", "benchmarks"],
                          cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
