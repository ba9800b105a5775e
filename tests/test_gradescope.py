"""Gradescope's results.json, the Gradescope autograder zip, and nbgrader's grades.csv, from real
Reports of real example submissions."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import jsonschema
import nbformat
import pytest

from autograder.grading.grade import grade_notebook
from autograder.render.gradescope import to_results

from conftest import EXAMPLES, ROOT, run_cli

# Gradescope's results.json, written from the published specification
# (https://gradescope-autograders.readthedocs.io/en/latest/specs/, "Output format", "Controlling Test
# Case Visibility", "Test case status", "Output String Formatting"). Unknown keys are refused, so a
# typo in a field name fails here instead of being ignored by Gradescope.
_VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
_FORMAT = {"enum": ["text", "html", "simple_format", "md", "ansi"]}
_NUMBER = {"type": "number"}
_TEST = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": _NUMBER, "max_score": _NUMBER, "status": {"enum": ["passed", "failed"]},
        "name": {"type": "string"}, "name_format": _FORMAT, "number": {"type": "string"},
        "output": {"type": "string"}, "output_format": _FORMAT,
        "tags": {"type": "array", "items": {"type": "string"}},
        "visibility": _VISIBILITY, "extra_data": {"type": "object"},
    },
}
RESULTS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": _NUMBER, "execution_time": _NUMBER, "output": {"type": "string"}, "output_format": _FORMAT,
        "test_output_format": _FORMAT, "test_name_format": _FORMAT, "visibility": _VISIBILITY,
        "stdout_visibility": _VISIBILITY, "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": _TEST},
        "leaderboard": {"type": "array", "items": {
            "type": "object", "required": ["name", "value"], "additionalProperties": False,
            "properties": {"name": {"type": "string"}, "value": {"type": ["number", "string"]},
                           "order": {"enum": ["asc", "desc"]}}}},
    },
    # "score": optional, but required if not on each test case
    "anyOf": [{"required": ["score"]},
              {"required": ["tests"], "properties": {"tests": {"items": {"required": ["score"]}}}}],
}


def validate(results: dict) -> None:
    jsonschema.Draft202012Validator.check_schema(RESULTS_SCHEMA)
    jsonschema.validate(json.loads(json.dumps(results, allow_nan=False)), RESULTS_SCHEMA,
                        cls=jsonschema.Draft202012Validator)


def hide(key, *check_ids: str):
    """A copy of `key` whose checks `check_ids` are hidden (as `visibility = "hidden"` in a spec)."""
    return replace(key, checks=tuple(replace(c, visibility="hidden") if c.id in check_ids else c for c in key.checks))


@pytest.fixture(scope="module")
def reports(key, worker):
    return {s: grade_notebook(EXAMPLES / f"{s}.ipynb", key, s, worker=worker) for s in ("dev", "hana", "ivan")}


def test_a_graded_report_follows_the_published_format(reports):
    report = reports["dev"]
    res = to_results(report)
    validate(res)
    assert res["score"] == report.score == 21 and res["output_format"] == "md"
    assert res["stdout_visibility"] == "hidden" and isinstance(res["execution_time"], int)
    assert "**Score: 21 / 26 points**" in res["output"] and "`dev`" in res["output"]
    expected = json.loads((EXAMPLES / "dev.expected.json").read_text())["checks"]
    assert [t["number"] for t in res["tests"]] == list(expected)
    for t, o in zip(res["tests"], report.outcomes, strict=True):
        assert t["name"] == f"{o.check_id} · {o.title}"
        assert (t["score"], t["max_score"]) == (o.score, o.max_score)
        assert t["status"] == ("passed" if expected[o.check_id] == "passed" else "failed")
        assert t["visibility"] == "visible" and t["output_format"] == "md"
    t = next(t for t in res["tests"] if t["number"] == "2.produce.returns")
    for text in ("**Expected:** `(tensor(3.13689),)`", "**Observed:** `tensor(3.13689)`",
                 "**Expected value from:** sympy: (diff(x\\*\\*2\\*sin(x), x),) at x=-1.58",
                 "**Why it matters:** torch.autograd.grad returns a tuple"):
        assert text in t["output"], t["output"]


def test_our_richer_statuses_are_failed_on_gradescope_and_named_in_the_output(reports):
    res = to_results(reports["hana"])
    validate(res)
    t = next(t for t in res["tests"] if t["number"] == "4.produce.after_k")
    assert t["status"] == "failed" and t["score"] == 0 and "timeout" in t["tags"]
    assert t["output"].startswith("**Status: timeout — a call ran past its time limit")
    assert "did not return within 5 s" in t["output"]


def test_a_hidden_check_shows_only_its_status_and_points(key, reports, worker):
    hidden_ids = ("2.produce.returns", "1.predict.grad")          # one failed, one passed
    report = grade_notebook(EXAMPLES / "dev.ipynb", hide(key, *hidden_ids), "dev", worker=worker)
    public = {o.check_id: o for o in reports["dev"].outcomes}
    res = to_results(report)
    validate(res)
    assert res["score"] == 21
    for cid in hidden_ids:
        t = next(t for t in res["tests"] if t["number"] == cid)
        assert t["visibility"] == "after_published"
        p = public[cid]
        for secret in (p.expected, p.observed, p.oracle, p.why, p.message):
            assert secret not in t["output"], (cid, secret)
        assert "sympy" not in t["output"] and "Expected" not in t["output"]
    assert next(t for t in res["tests"] if t["number"] == "2.produce.returns")["output"].startswith("**Status: failed")
    # the summary gives the visible checks' points only, not the total, until grades are published
    assert "21 / 26" not in res["output"] and "**Visible checks: 20 / 24 points**" in res["output"]
    assert "2 hidden checks worth 2 points" in res["output"]
    # even an Outcome that still carries a hidden check's values never shows them
    leaky = replace(public["2.produce.returns"], visibility="hidden")
    out = to_results(replace(report, outcomes=(leaky,)))["tests"][0]["output"]
    assert all(s not in out for s in (leaky.expected, leaky.observed, leaky.oracle, leaky.why, leaky.message))


def test_a_not_gradable_submission_says_NOT_GRADED_and_has_no_tests(reports):
    report = reports["ivan"]
    assert report.status == "not_gradable" and report.score is None
    res = to_results(report)
    validate(res)
    assert res["score"] == 0.0 and res["tests"] == []          # Gradescope needs a number
    assert res["output"].startswith("# NOT GRADED")
    assert "**no score**" in res["output"] and "this 0 is not a grade for your work" in res["output"]
    assert "ivan.ipynb is not valid JSON" in res["output"]
    assert res["extra_data"]["autograd_lab"]["status"] == "not_gradable"


HOSTILE = "```\n</pre><script>alert(1)</script> **bold** [link](http://x) \x1b[2J ````` done"


def test_student_text_cannot_break_the_markdown(key, tmp_path, worker):
    import mistune

    nb = nbformat.read(EXAMPLES / "dev.ipynb", as_version=4)
    for c in nb.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if gid == "student-id":
            c.source = 'STUDENT_ID = "dev`<b>x</b> **y**"'
        elif gid == "ex2-produce":
            c.source = f"def ex2(x):\n    raise ValueError({HOSTILE!r})"
    path = tmp_path / "dev.ipynb"
    nbformat.write(nb, path)
    report = grade_notebook(path, key, "dev", worker=worker)
    t = next(o for o in report.outcomes if o.check_id == "2.produce.returns")
    assert t.status == "error" and "<script>" in t.message
    res = to_results(report)
    validate(res)
    render = mistune.create_markdown(escape=False)   # raw HTML allowed: the worst case for us
    for md in [res["output"], *(t["output"] for t in res["tests"])]:
        html = render(md)
        assert "<script" not in html and "<b>" not in html and "<strong>bold" not in html and "<a " not in html
        assert "\x1b" not in md
    out = next(t["output"] for t in res["tests"] if t["number"] == "2.produce.returns")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in render(out) and "\\x1b[2J" in out
    assert "dev`&lt;b&gt;x&lt;/b&gt; **y**" in render(res["output"])


def test_the_nbgrader_csv_has_nbgraders_own_columns_and_no_silent_zero(reports, tmp_path, monkeypatch):
    from nbgrader.api import Gradebook
    from nbgrader.plugins.export import CsvExportPlugin

    from autograder.render.gradebook import to_nbgrader_csv

    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])   # its alembic
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:
        gb.add_assignment("01-backward-vs-grad")
        gb.add_student("dev")
        CsvExportPlugin(to=str(tmp_path / "grades.csv")).export(gb)
    theirs = (tmp_path / "grades.csv").read_text().splitlines()
    ours = to_nbgrader_csv(list(reports.values())).splitlines()
    assert ours[0] == theirs[0]                     # the very same header, in the same order
    assert len(ours[1].split(",")) == len(theirs[1].split(","))
    rows = {line.split(",")[3]: line.split(",") for line in ours[1:]}
    assert rows["dev"][7:] == ["21.0", "0.0", "21.0", "26.0"]
    assert rows["ivan"][7:] == ["", "", "", "26.0"]     # not gradable: empty, never 0
    assert rows["hana"][0] == "01-backward-vs-grad"


# --- the Gradescope autograder zip ------------------------------------------------------------------


def unpack(bundle: Path, root: Path) -> Path:
    """Do what Gradescope does with the zip: unpack it in ROOT/source (keeping the files' modes) and
    copy run_autograder to ROOT/run_autograder."""
    src = root / "source"
    with zipfile.ZipFile(bundle) as z:
        for info in z.infolist():
            z.extract(info, src)
            os.chmod(src / info.filename, (info.external_attr >> 16) & 0o777)
    shutil.copy2(src / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    (root / "results").mkdir()
    return root


def run_autograder(root: Path, **env: str) -> dict:
    venv_bin = str(Path(sys.executable).parent)
    e = {**os.environ, "AUTOGRADER_ROOT": str(root), "PATH": venv_bin + os.pathsep + os.environ["PATH"], **env}
    p = subprocess.run([str(root / "run_autograder")], cwd=root, env=e, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    res = json.loads((root / "results" / "results.json").read_text())
    validate(res)
    return res


@pytest.fixture(scope="module")
def bundle(released, tmp_path_factory):
    from autograder.integrations.gradescope import make_bundle

    out = tmp_path_factory.mktemp("bundle") / "autograder.zip"
    assert make_bundle(released[1], out, ROOT) == out
    return out


def test_the_bundle_has_what_gradescope_expects(bundle, released, tmp_path):
    from autograder.integrations.gradescope import make_bundle

    with zipfile.ZipFile(bundle) as z:
        names = z.namelist()
        mode = {i.filename: (i.external_attr >> 16) & 0o777 for i in z.infolist()}
        scripts = {name: z.read(name) for name in ("setup.sh", "run_autograder")}
        assert z.read("key.json") == released[1].read_bytes()       # the full key, as released
    setup = scripts["setup.sh"].decode()
    assert names[:2] == ["setup.sh", "run_autograder"] and mode["setup.sh"] & 0o111 and mode["run_autograder"] & 0o111
    assert {"key.json", "pyproject.toml", "README.md", "autograder/__init__.py", "autograder/integrations/gradescope.py",
            "autograder/render/gradescope.py"} <= set(names)
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    torch = setup.index("torch==2.13.0\" --index-url https://download.pytorch.org/whl/cpu")
    assert torch < setup.index('install -q "$SRC[staff]"')          # torch first, then our package
    for text in scripts.values():
        subprocess.run(["bash", "-n", "/dev/stdin"], input=text, check=True)   # valid bash
    # the same inputs give the same bytes
    assert make_bundle(released[1], tmp_path / "again.zip", ROOT).read_bytes() == bundle.read_bytes()
    with pytest.raises(ValueError, match="public key"):
        make_bundle(released[0] / "public_key.json", tmp_path / "x.zip", ROOT)


def test_run_autograder_grades_a_real_submission(bundle, key, tmp_path, worker):
    root = unpack(bundle, tmp_path / "autograder")
    shutil.copy(EXAMPLES / "dev.ipynb", root / "submission" / "backward-vs-grad.ipynb")   # the released name
    res = run_autograder(root)
    expected = to_results(grade_notebook(EXAMPLES / "dev.ipynb", key, "dev", worker=worker))
    assert res["score"] == expected["score"] == 21
    assert res["extra_data"]["autograd_lab"]["student"] == "dev"             # the notebook's STUDENT_ID
    assert res["extra_data"]["autograd_lab"]["submission"] == "backward-vs-grad.ipynb"
    assert [(t["number"], t["status"], t["output"]) for t in res["tests"]] == \
        [(t["number"], t["status"], t["output"]) for t in expected["tests"]]


def test_run_autograder_without_a_notebook_says_NOT_GRADED(bundle, tmp_path):
    root = unpack(bundle, tmp_path / "autograder")
    (root / "submission" / "answers.py").write_text("print('hi')\n")
    res = run_autograder(root)
    assert res["output"].startswith("# NOT GRADED") and "no .ipynb file in the upload" in res["output"]
    assert res["tests"] == [] and res["score"] == 0.0


def test_run_autograder_says_NOT_GRADED_when_the_grader_cannot_start(bundle, tmp_path):
    root = unpack(bundle, tmp_path / "autograder")
    shutil.copy(EXAMPLES / "dev.ipynb", root / "submission" / "dev.ipynb")
    (root / "source" / "key.json").unlink()
    res = run_autograder(root)
    assert res["output"].startswith("# NOT GRADED") and "not a grade for your work" in res["output"]
    assert res["extra_data"]["autograd_lab"]["status"] == "not_gradable"
    assert stat.S_ISREG((root / "results" / "results.json").stat().st_mode)


def test_the_cli_writes_the_bundle_results_json_and_grades_csv(released, tmp_path):
    import csv
    import json
    import zipfile

    from conftest import ASSIGNMENT

    _, key_path = released
    p = run_cli("gradescope-bundle", ASSIGNMENT, "--key", str(key_path), "--out", str(tmp_path / "b.zip"))
    assert p.returncode == 0 and "keep it private" in p.stdout, p.stderr
    assert {"setup.sh", "run_autograder", "key.json"} <= set(zipfile.ZipFile(tmp_path / "b.zip").namelist())
    public = key_path.parent.parent.parent / "assignments" / ASSIGNMENT / "public_key.json"
    refused = run_cli("gradescope-bundle", ASSIGNMENT, "--key", str(public), "--out", str(tmp_path / "c.zip"))
    assert refused.returncode == 2 and "needs the full key" in refused.stderr
    g = run_cli("grade", str(EXAMPLES / "dev.ipynb"), str(EXAMPLES / "ivan.ipynb"), "--key", str(key_path),
                "--out", str(tmp_path / "out"), "--gradescope", str(tmp_path / "gs"))
    assert g.returncode == 0, g.stderr
    dev = json.loads((tmp_path / "gs" / "dev.json").read_text())
    assert dev["score"] == 21 and len(dev["tests"]) == 26
    assert json.loads((tmp_path / "gs" / "ivan.json").read_text())["output"].startswith("# NOT GRADED")
    rows = {r["student_id"]: r for r in csv.DictReader((tmp_path / "out" / "grades.csv").open())}
    assert rows["dev"]["score"] == "21.0" and rows["ivan"]["score"] == ""


@pytest.mark.parametrize("module", ["autograder.render.gradescope", "autograder.integrations.gradescope"])
def test_the_views_import_nothing_heavy(module):
    code = f"import sys, {module}; print(' '.join(sys.modules))"
    mods = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    assert not mods & {"torch", "sympy", "nbformat", "autograder.authoring.release", "autograder.grading.grade"}


def test_an_upload_that_is_a_link_is_not_read_and_a_link_beside_the_work_is_ignored(bundle, tmp_path):
    """A zip a student uploads can carry symbolic links (tests/test_attacks.py for batches): the upload's intake
    reads no link, and says so."""
    root = unpack(bundle, tmp_path / "alone")
    os.symlink("/etc/passwd", root / "submission" / "backward-vs-grad.ipynb")
    res = run_autograder(root)
    assert res["tests"] == [] and "symbolic link, not a file" in res["output"] and "root:x" not in json.dumps(res)
    root = unpack(bundle, tmp_path / "beside")
    shutil.copy(EXAMPLES / "dev.ipynb", root / "submission" / "backward-vs-grad.ipynb")
    os.symlink("../source/key.json", root / "submission" / "key.ipynb")   # the bundle's own full key
    res = run_autograder(root)
    assert res["score"] == 21 and "key.ipynb (link: not read)" in res["output"]
    assert json.loads((root / "source" / "key.json").read_text())["secret"] not in json.dumps(res)


def test_the_uploaders_id_in_gradescopes_record_outranks_the_notebooks_student_id(bundle, tmp_path):
    """A classmate's notebook (STUDENT_ID "dev") uploaded by mallory: Gradescope's submission_metadata.json says
    who uploaded it, and that decides (shared: the attack on STUDENT_ID trust)."""
    root = unpack(bundle, tmp_path / "copied")
    shutil.copy(EXAMPLES / "dev.ipynb", root / "submission" / "backward-vs-grad.ipynb")
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"name": "M", "sid": "mallory"}]}))
    res = run_autograder(root)
    assert res["tests"] == [] and "uploaded by 'mallory' (the course's record), but its STUDENT_ID says 'dev'" in \
        res["output"]
    root = unpack(bundle, tmp_path / "own")
    shutil.copy(EXAMPLES / "dev.ipynb", root / "submission" / "backward-vs-grad.ipynb")
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"name": "D", "sid": "dev"}]}))
    assert run_autograder(root)["score"] == 21
