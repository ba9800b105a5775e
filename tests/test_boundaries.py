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
                        "autograder.judge", "autograder.sandbox", "autograder.render.html", "jinja2"}),
    ("autograder.judge", {"torch", "autograder.sandbox", "autograder.probe", "nbformat"}),
    ("autograder.model", {"torch", "sympy", "autograder.wire"}),
    ("autograder.keyfile", {"torch", "sympy"}),
    ("autograder.plan", {"torch", "sympy", "autograder.judge", "autograder.compare"}),
    ("autograder.sandbox", {"torch", "sympy", "autograder.probe", "autograder.worker"}),
    ("autograder.selfcheck", {"torch", "sympy", "autograder.grade", "autograder.probe"}),
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


def _declared_imports(doc: str) -> set[str] | None:
    """The modules a docstring's "May import: a, b (why), c." line allows ("stdlib" for the standard library)."""
    import re

    m = re.search(r"May import: (.*?)(?:\n\n|$)", doc, re.S)
    if m is None:
        return None
    text = re.sub(r"\([^)]*\)", "", m.group(1)).replace("\n", " ").rstrip(". ")
    text = re.sub(r";\s*inside a subcommand:", ",", text)
    if text.strip() == "nothing":
        return set()
    allowed = {item.strip().split()[0] for item in text.split(",") if item.strip()}
    if "stdlib, and lazily any module of the public API below" in m.group(1):
        allowed |= {"autograder.*"}
    return allowed


def _actual_imports(tree) -> set[str]:
    import ast

    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "autograder":
                found |= {f"autograder.{a.name}" if not a.name.startswith("__") else "autograder" for a in node.names}
            else:
                found.add(node.module)
    return found


def test_every_module_says_what_it_owns_and_imports_only_what_its_docstring_allows():
    import ast
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent / "autograder"
    problems = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        doc = ast.get_docstring(tree) or ""
        allowed = _declared_imports(doc)
        if allowed is None:
            problems.append(f"{path.name}: no 'May import:' line in its docstring")
            continue
        for name in sorted(_actual_imports(tree)):
            top = name.split(".")[0]
            ok = (top in sys.stdlib_module_names and "stdlib" in allowed) or name in allowed or top in allowed \
                or (name.startswith("autograder.") and "autograder.*" in allowed) \
                or any(name.startswith(a + ".") for a in allowed if not a.startswith("autograder"))
            if name.startswith("autograder.") and name not in allowed and "autograder.*" not in allowed:
                ok = False
            if not ok:
                problems.append(f"{path.relative_to(root.parent)} imports {name}, which its docstring does not allow")
    assert not problems, "\n".join(problems)
