"""Are the module boundaries kept: layers that import only downwards, no answers or grader code in the probe,
lazy heavy imports?"""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "autograder"


def _modules_after(stmt):
    code = f"import sys; {stmt}; print(' '.join(sorted(sys.modules)))"
    return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())


def test_cli_help_imports_neither_torch_nor_sympy():
    mods = _modules_after("import autograder.cli as c\ntry:\n    c.main(['--help'])\nexcept SystemExit: pass")
    assert "torch" not in mods and "sympy" not in mods


@pytest.mark.parametrize("module, forbidden", [
    ("autograder.sandbox.inside.probe", {"sympy", "autograder.authoring.spec", "autograder.authoring.release",
                                         "autograder.grading.grade", "autograder.judging.compare",
                                         "autograder.judging.analytic", "autograder.report", "autograder.sandbox.client"}),
    ("autograder.sandbox.inside.worker", {"sympy", "autograder.sandbox.client", "autograder.grading.grade",
                                          "autograder.judging.judge", "autograder.keyfile"}),
    ("autograder.judging.analytic", {"torch"}),
    ("autograder.judging.compare", {"torch", "sympy"}),
    ("autograder.report", {"torch", "sympy"}),
    ("autograder.render.terminal", {"torch", "sympy"}),
    ("autograder.render.gradebook", {"torch", "sympy"}),
    ("autograder.render.html", {"torch", "sympy"}),
    ("autograder.lab", {"sympy", "autograder.authoring.release", "autograder.grading.grade", "autograder.judging.compare",
                        "autograder.judging.analytic", "autograder.judging.judge", "autograder.sandbox.client",
                        "autograder.render.html", "jinja2"}),
    ("autograder.judging.judge", {"torch", "autograder.sandbox.client", "autograder.sandbox.inside.probe", "nbformat"}),
    ("autograder.model", {"torch", "sympy", "autograder.wire"}),
    ("autograder.keyfile", {"torch", "sympy"}),
    ("autograder.grading.plan", {"torch", "sympy", "autograder.judging.judge", "autograder.judging.compare"}),
    ("autograder.sandbox.client", {"torch", "sympy", "autograder.sandbox.inside.probe", "autograder.sandbox.inside.worker"}),
    ("autograder.student.selfcheck", {"torch", "sympy", "autograder.grading.grade", "autograder.sandbox.inside.probe"}),
])
def test_import_rules(module, forbidden):
    assert not (_modules_after(f"import {module}") & forbidden)


def test_no_pickle_eval_or_exec_of_student_text_in_the_grader():
    """No module of the package imports pickle, marshal, shelve or dill, or calls eval, exec, torch.load or sympify
    (read as syntax trees: the worked-out rule names these words as strings, to find them in a student's code)."""
    import ast

    paths = list(PACKAGE.rglob("*.py"))
    assert len(paths) > 40
    found = []
    for path in paths:
        for n in ast.walk(ast.parse(path.read_text())):
            if isinstance(n, ast.Import):
                names = [a.name.split(".")[0] for a in n.names]
            elif isinstance(n, ast.ImportFrom):
                names = [(n.module or "").split(".")[0], *(a.name for a in n.names)]
            elif isinstance(n, ast.Call):
                f = n.func
                names = [f.id] if isinstance(f, ast.Name) else [f.attr] if isinstance(f, ast.Attribute) else []
                if isinstance(f, ast.Attribute) and f.attr == "load" and isinstance(f.value, ast.Name) and \
                        f.value.id == "torch":
                    names = ["torch.load"]
            else:
                continue
            bad = {"pickle", "marshal", "shelve", "dill", "eval", "exec", "torch.load", "sympify"} & set(names)
            found += [f"{path.relative_to(PACKAGE)}:{n.lineno} {sorted(bad)}"] if bad else []
    assert not found, found


def test_ruff_finds_nothing():

    done = subprocess.run([sys.executable, "-m", "ruff", "check", "autograder", "tests", "examples", "benchmarks",
                           "scripts"], cwd=ROOT, capture_output=True, text=True)
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


def _is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _actual_imports(tree) -> set[str]:
    """Every module a file imports, at the top or inside a function (`from autograder.judging import judge` is
    autograder.judging.judge; `from autograder import Lab` is autograder)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if node.module.startswith("autograder") and _is_module(sub) else node.module)
    return found


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_module_says_what_it_owns_and_imports_only_what_its_docstring_allows():
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        doc = ast.get_docstring(tree) or ""
        allowed = _declared_imports(doc)
        if allowed is None:
            problems.append(f"{path.relative_to(ROOT)}: no 'May import:' line in its docstring")
            continue
        for name in sorted(_actual_imports(tree)):
            top = name.split(".")[0]
            ok = (top in sys.stdlib_module_names and "stdlib" in allowed) or name in allowed or top in allowed \
                or (name.startswith("autograder.") and "autograder.*" in allowed) \
                or any(name.startswith(a + ".") for a in allowed if not a.startswith("autograder"))
            if name.startswith("autograder.") and name not in allowed and "autograder.*" not in allowed:
                ok = False
            if not ok:
                problems.append(f"{path.relative_to(ROOT)} imports {name}, which its docstring does not allow")
    assert not problems, "\n".join(problems)


# The layers, lowest first (README "Layout"). A module may import its own unit and the units of lower layers;
# units of one layer never import each other.
LAYERS = [
    {"vocabulary": ("autograder.model", "autograder.wire", "autograder.report", "autograder.keyfile",
                    "autograder.profile", "autograder.version")},
    {"sandbox": ("autograder.sandbox",), "judging": ("autograder.judging",), "render": ("autograder.render",)},
    {"grading": ("autograder.grading",)},
    {"authoring": ("autograder.authoring",), "student": ("autograder.student",)},
    {"integrations": ("autograder.integrations",)},
    {"service": ("autograder.service",)},
    {"entry points": ("autograder.cli", "autograder.lab", "autograder.__main__", "autograder")},
]
# What runs in the untrusted process may import only these, whatever its layer allows.
INSIDE = "autograder.sandbox.inside"
INSIDE_MAY_IMPORT = ("autograder.wire", "autograder.model", "autograder.sandbox.policy", "autograder.sandbox.cgroup",
                     INSIDE)


def _unit(module: str) -> tuple[int, str]:
    best = None
    for rank, units in enumerate(LAYERS):
        for unit, prefixes in units.items():
            for prefix in prefixes:
                if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[2]):
                    best = (rank, unit, len(prefix))
    assert best is not None, f"{module} is in no layer: add it to LAYERS (and to the README's layout)"
    return best[0], best[1]


def test_every_import_runs_downwards_through_the_layers():
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        rank, unit = _unit(module)
        for name in sorted(n for n in _actual_imports(ast.parse(path.read_text())) if n.startswith("autograder")):
            to_rank, to_unit = _unit(name)
            if module.startswith(INSIDE) and not any(name == m or name.startswith(m + ".") for m in INSIDE_MAY_IMPORT):
                problems.append(f"{module} (inside the sandbox) imports {name}")
            elif to_unit != unit and to_rank >= rank:
                problems.append(f"{module} ({unit}) imports {name} ({to_unit}), which is not below it")
    assert not problems, "\n".join(problems)


def test_the_layer_test_sees_an_upward_import():
    tree = ast.parse("def f():\n    from autograder.grading import batch\n")
    assert "autograder.grading.batch" in _actual_imports(tree)
    assert _unit("autograder.render.gradebook") < _unit("autograder.grading.batch")
    assert _unit("autograder.sandbox.inside.probe")[1] == "sandbox"
