"""Issue 27, "A release the instructor can trust, and an assignment written in one place": `autograder new`, a
notebook written once (release completes it from the spec), discrimination at the tolerance, poles where two
parameters meet, and the error messages that pointed the wrong way."""
import re
import shutil
from dataclasses import replace

import nbformat
import pytest

from autograder.authoring.release import BuildError, _base_key, check_discrimination, check_domain, release
from autograder.authoring.spec import load_spec
from autograder.model import ExprAnswer, ValueExpectation

from conftest import ROOT, run_cli
from autograder.authoring.sweep import QUICK   # the domain check at a few thousand points: its full run is benchmarks/release_domain.py's


def test_new_writes_an_assignment_that_releases_at_once_and_self_checks(tmp_path):
    p = run_cli("new", "13-hooks", cwd=tmp_path)
    assert p.returncode == 0 and "next: autograder release solutions/13-hooks" in p.stdout, p.stderr
    nb = nbformat.read(tmp_path / "solutions/13-hooks/hooks.ipynb", as_version=4)
    assert not any("nbgrader" in c.metadata for c in nb.cells)   # nothing hand-made: release writes it
    assert not any("lab.check" in c.source or "NotImplementedError" in c.source or "= ..." in c.source
                   for c in nb.cells)
    p = run_cli("release", "solutions/13-hooks", cwd=tmp_path)
    assert p.returncode == 0 and "released 13-hooks: 2 checks, solution 2/2 points, blank copy 0/2" in p.stdout, p.stderr
    steps = [line.split(" (")[0] for line in p.stderr.splitlines() if line.startswith("release: ")]
    assert steps == ["release: reading the spec and the notebook",   # what needs no code run, before the worker
                     "release: checking the expectations over the parameters' ranges, and the misconceptions",
                     "release: starting the sandbox worker",
                     *(f"release: running the solution for sample student reference-{s}" for s in "abc"),
                     "release: checking the solution at every point a student can draw",   # the full domain check
                     "release: running the blank student copy"], p.stderr
    assert "domain check      the solution passes its produce check with a sympy expectation at 402 points (every drawable point; " in p.stdout, p.stdout
    student = nbformat.read(tmp_path / "assignments/13-hooks/hooks.ipynb", as_version=4)
    sources = [c.source for c in student.cells]
    assert "# PREDICT 1\np1_grad = ...   # x.grad after y = x**3 and y.backward()\n" in sources
    assert any('    raise NotImplementedError("exercise 1: write ex1_grad")' in s for s in sources)
    check = next(c for c in student.cells if c.source == 'lab.check("1")')
    assert check.metadata["nbgrader"]["grade"] is True and check.metadata["nbgrader"]["points"] == 2.0
    assert (tmp_path / "build/13-hooks/source/hooks.ipynb").is_file()   # nbgrader's source, metadata included
    p = run_cli("check", "assignments/13-hooks/hooks.ipynb", "--student", "s1", cwd=tmp_path)
    assert p.returncode == 1 and "score 0 / 2 · 2 missing" in p.stdout, p.stdout + p.stderr
    first = (tmp_path / "assignments/13-hooks/hooks.ipynb").read_bytes()
    spec = tmp_path / "solutions/13-hooks/spec.toml"   # a parameter more: the setup cell's comment follows the spec
    spec.write_text(spec.read_text().replace("[[exercise]]", 's0 = { kind = "integer", low = 2, high = 5 }\n\n[[exercise]]'))
    p = run_cli("release", "solutions/13-hooks", cwd=tmp_path)   # over the untouched scaffold's key: no --force
    assert p.returncode == 0, p.stderr
    second = (tmp_path / "assignments/13-hooks/hooks.ipynb").read_bytes()
    p = run_cli("release", "solutions/13-hooks", cwd=tmp_path)   # the same sources: the same student copy
    assert p.returncode == 0, p.stderr
    assert second != first and second == (tmp_path / "assignments/13-hooks/hooks.ipynb").read_bytes()
    setup = next(c for c in nbformat.reads(second.decode(), as_version=4).cells if "lab.parameters" in c.source)
    assert "P = lab.parameters   # your own numbers: P.x0, P.s0\n" in setup.source
    assert [c.get("id") for c in nbformat.reads(second.decode(), as_version=4).cells][-1] == "ex1-check"
    again = run_cli("new", "13-hooks", cwd=tmp_path)
    assert again.returncode == 2 and "solutions/13-hooks exists already" in again.stderr
    bad = run_cli("new", "Hooks_1", cwd=tmp_path)
    assert bad.returncode == 2 and "an assignment id is lower case with hyphens" in bad.stderr
    no_jobs = run_cli("release", "solutions/13-hooks", "--jobs", "0", cwd=tmp_path)
    assert no_jobs.returncode == 2 and "argument --jobs: '0' is not a whole number above 0" in no_jobs.stderr


def _stripped(nb_path):
    """An instructor's notebook written once: no nbgrader metadata, placeholders, stubs or check cells."""
    nb = nbformat.read(nb_path, as_version=4)
    cells = []
    for c in nb.cells:
        c.metadata.pop("nbgrader", None)
        if re.fullmatch(r'lab\.check\("\w+"\)', c.source.strip()):
            continue
        lines = c.source.splitlines()
        if "### BEGIN SOLUTION" in c.source:
            begin = next(i for i, line in enumerate(lines) if line.strip() == "### BEGIN SOLUTION")
            lines = [line for i, line in enumerate(lines) if not (i < begin and re.match(r"\s*\w+\s*=\s*\.\.\.", line))]
            lines = [line for line in lines if "raise NotImplementedError" not in line]
        c.source = "\n".join(lines)
        cells.append(c)
    nb.cells = cells
    nbformat.write(nb, nb_path)


def test_a_shipped_assignment_written_once_releases_to_the_same_student_copy(tmp_path, worker):
    src = ROOT / "solutions/02-accumulation"
    shutil.copytree(src, tmp_path / "solutions/02-accumulation")
    _stripped(tmp_path / "solutions/02-accumulation/accumulation.ipynb")
    r = release(tmp_path / "solutions/02-accumulation", tmp_path / "a", tmp_path / "b", worker=worker, domain_budget=QUICK)
    assert (r.solution_score, r.blank_score, r.max_score) == (39.0, 0.0, 39.0)
    made = nbformat.read(r.student_notebook, as_version=4)
    shipped = nbformat.read(ROOT / "assignments/02-accumulation/accumulation.ipynb", as_version=4)
    assert len(made.cells) == len(shipped.cells)
    assert [c.metadata["nbgrader"]["points"] for c in made.cells if c.metadata["nbgrader"]["grade"]] == \
           [c.metadata["nbgrader"]["points"] for c in shipped.cells if c.metadata["nbgrader"]["grade"]]
    placeholders = [re.findall(r"^(\w+) = \.\.\.", c.source, re.M) for c in made.cells]
    assert placeholders == [re.findall(r"^(\w+) = \.\.\.", c.source, re.M) for c in shipped.cells]


@pytest.fixture(scope="module")
def training_key():
    return _base_key(load_spec(ROOT / "solutions/10-training-loops"), "2.13.0")


def test_a_misconception_that_passes_as_right_for_many_students_is_refused_unless_accepted(tmp_path, training_key):
    """Issue 27: 10's clipped-per-parameter passed within the 2e-3 tolerance for 26.7 % of students; with g0, g1 in
    1.0..3.0 and |g2| in 0.1..0.4 (the ranges before) release measures 27.67 % over the whole grid, and refuses."""
    spec = (ROOT / "solutions/10-training-loops/spec.toml").read_text()
    folder = tmp_path / "10-training-loops"
    folder.mkdir()
    before = spec.replace('g0 = { kind = "real", low = 1.0, high = 2.0,', 'g0 = { kind = "real", low = 1.0, high = 3.0,') \
        .replace('g1 = { kind = "real", low = 1.0, high = 2.0,', 'g1 = { kind = "real", low = 1.0, high = 3.0,') \
        .replace('g2 = { kind = "real", low = 0.3, high = 0.45,', 'g2 = { kind = "real", low = 0.1, high = 0.4,')
    (folder / "spec.toml").write_text(before)
    key = _base_key(load_spec(folder), "2.13.0")
    with pytest.raises(BuildError) as e:
        check_discrimination(key, "spec.toml")
    assert ("spec.toml check '2.predict.norm_w': misconception 'clipped-per-parameter' passes as the right answer for "
            "27.67 % of students (within the check's tolerance, where g2 = -0.18..0.18)") in str(e.value)
    assert "or accept it with overlap = { share = 0.282, why = \"...\" }" in str(e.value)
    accepted = before.replace('name = "each parameter clipped on its own"', 'name = "each parameter clipped on its own"'
                              '\noverlap = { share = 0.3, why = "told apart by the produce check" }')
    (folder / "spec.toml").write_text(accepted)
    overlaps = check_discrimination(_base_key(load_spec(folder), "2.13.0"), "spec.toml")
    assert (overlaps[0].check, overlaps[0].misconception, round(100 * overlaps[0].share, 2)) == \
           ("2.predict.norm_w", "clipped-per-parameter", 27.67)
    # the shipped ranges tell every misconception of 10 apart for all but 1 % of students
    assert max(o.share for o in check_discrimination(training_key, "spec.toml")) < 0.01


@pytest.mark.parametrize("assignment", sorted(p.name for p in (ROOT / "solutions").iterdir()))
def test_every_shipped_misconception_is_told_apart_for_99_percent_of_students(assignment):
    key = _base_key(load_spec(ROOT / "solutions" / assignment), "2.13.0")
    worst = check_discrimination(key, "spec.toml")
    assert not worst or worst[0].share <= 0.01, worst[0]


def test_a_pole_where_two_parameters_meet_is_refused_at_release(training_key):
    """check_domain swept one parameter at a time; 1/(w0 - w1), with both drawable at the same values, is found over
    their joint grid, and 1/(g0*g1 - g2*x0*w0 - 1) over a grid too large to enumerate (14 million points) by sampling
    and at the roots of its denominator; each point found is confirmed exactly."""
    from autograder.authoring.domain import nonfinite_points
    from autograder.grading.plan import draw_point

    check = next(c for c in training_key.checks if c.exercise == "2" and c.kind == "predict")
    ex = training_key.exercise("2")
    base = draw_point(training_key.parameters, training_key.assignment, "reference-a", "own")
    symbols = tuple(ex.values(base))
    for text, used, enumerated in [("1/(w0 - w1)", ["w0", "w1"], True),
                                   ("1/(g0*g1 - g2*x0*w0 - 1)", ["g0", "g1", "g2", "w0", "x0"], False)]:
        points, exact = nonfinite_points(training_key.parameters, used, ExprAnswer(text), symbols, base, ex.values)
        assert points and exact is enumerated, (text, points)
        for p in points:
            assert {n: p[n] for n in base if n not in used} == {n: v for n, v in base.items() if n not in used}
        if text == "1/(w0 - w1)":
            assert all(p["w0"] == p["w1"] for p in points)
        else:
            assert all(abs(p["g0"] * p["g1"] - p["g2"] * p["x0"] * p["w0"] - 1) < 1e-9 for p in points)
        pole = replace(training_key, checks=(replace(check, expectation=ValueExpectation(ExprAnswer(text))),))
        with pytest.raises(BuildError, match=r"spec.toml check '2.predict.\w+': expect has no finite value at "):
            check_domain(pole, "spec.toml")
    assert nonfinite_points(training_key.parameters, ["w0", "w1"], ExprAnswer("1/(w0 + w1)"), symbols, base,
                            ex.values) == ([], True)   # w0, w1 > 0: never 0
    joint = replace(training_key, checks=(replace(check, expectation=ValueExpectation(ExprAnswer("1/(w0 - 3*w1)"))),))
    with pytest.raises(BuildError) as e:   # w0 = 3*w1 at (1.5, 0.5) and (1.8, 0.6): no sample point's sweep reaches them
        check_domain(joint, "spec.toml")
    assert "values a student can draw together" in str(e.value) and "Make the ranges of w0 and w1" in str(e.value)


def _copy(tmp_path, assignment="01-backward-vs-grad"):
    dst = tmp_path / "solutions" / assignment
    shutil.copytree(ROOT / "solutions" / assignment, dst)
    return dst


def _edit_cell(folder, grade_id, change, notebook="backward-vs-grad.ipynb"):
    """Rewrite one cell of the solution notebook, found by its grade id, as an instructor's editor would."""
    nb = nbformat.read(folder / notebook, as_version=4)
    cell = next(c for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == grade_id)
    cell.source = change(cell.source)
    nbformat.write(nb, folder / notebook)


def _edit(path, old, new):
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def test_a_matrix_expect_for_a_function_returning_a_tuple_says_to_list_the_items(tmp_path, worker):
    folder = _copy(tmp_path, "05-vectors")
    spec = folder / "spec.toml"
    text = spec.read_text()
    m = re.search(r'id = "produce.returns"\ntitle = "[^"]*"\nobserve = "returned"\nexpect = (\[.*\])', text)
    assert m, "05 has a produce check of a returned tuple"
    spec.write_text(text[:m.start(1)] + '"Matrix([x0, x1, x2])"' + text[m.end(1):])
    with pytest.raises(BuildError) as e:
        release(folder, tmp_path / "a", tmp_path / "b", worker=worker, domain_budget=QUICK)
    assert "expect is one value ('Matrix([x0, x1, x2])'), but the reference torch run of the solution's" in str(e.value)
    assert "write expect = [...] with one expression per item of the tuple" in str(e.value)
    assert "elements could be compared" not in str(e.value)


def test_a_solution_prediction_computed_with_autograd_names_the_grading_rule(tmp_path, worker):
    folder = _copy(tmp_path)
    _edit_cell(folder, "ex5-predict", lambda src: src.replace(
        "p5_x_grad = P.y0", "_x = torch.tensor(P.x0, requires_grad=True)\n"
        "p5_x_grad = torch.autograd.grad(_x * P.y0, _x)[0].item()"))
    with pytest.raises(BuildError) as e:
        release(folder, tmp_path / "a", tmp_path / "b", worker=worker, domain_budget=QUICK)
    assert "check '5.predict.x_grad': the solution notebook computes p5_x_grad by running code (" in str(e.value)
    assert 'set predictions = "any" in [grading] to accept computed predictions' in str(e.value)
    assert "disagree" not in str(e.value)


def test_a_function_whose_body_is_outside_its_solution_region_is_told_so(tmp_path, worker):
    folder = _copy(tmp_path)
    _edit_cell(folder, "ex1-produce", lambda src: "\n".join(
        line for line in src.splitlines() if "SOLUTION" not in line and "NotImplementedError" not in line
    ).replace("\n\n", "\n### BEGIN SOLUTION\n### END SOLUTION\n", 1))
    with pytest.raises(BuildError) as e:
        release(folder, tmp_path / "a", tmp_path / "b", worker=worker, domain_budget=QUICK)
    assert "instead of raising NotImplementedError: put its body between ### BEGIN SOLUTION and ### END SOLUTION" \
           in str(e.value)
    assert "put that cell's answer inside" not in str(e.value)


def test_a_cell_that_raises_in_the_solution_is_named_by_its_grade_id(tmp_path, worker):
    folder = _copy(tmp_path)
    _edit(folder / "backward-vs-grad.ipynb", "p5_x_grad = P.y0", "p5_x_grad = P.y0 / 0")
    with pytest.raises(BuildError) as e:
        release(folder, tmp_path / "a", tmp_path / "b", worker=worker, domain_budget=QUICK)
    assert re.search(r"code cell \d+ \('ex5-predict'\) of the solution error: ZeroDivisionError", str(e.value)), \
        str(e.value)


def _scaffold(tmp_path, cells: dict[int, str] | None = None, spec_edit=None, metadata: dict[int, dict] | None = None):
    """`autograder new 13-hooks` in tmp_path, with code cells replaced (index -> source), cell metadata set and the
    spec edited; returns the folder."""
    from autograder.authoring.scaffold import new

    spec, nb_path = new("13-hooks", tmp_path / "solutions")
    nb = nbformat.read(nb_path, as_version=4)
    for i, source in (cells or {}).items():
        if i >= len(nb.cells):
            nb.cells.append(nbformat.v4.new_code_cell(source))
        else:
            nb.cells[i].source = source
    for i, meta in (metadata or {}).items():
        nb.cells[i].metadata["nbgrader"] = meta
    nbformat.write(nb, nb_path)
    if spec_edit:
        spec.write_text(spec_edit(spec.read_text()))
    return spec.parent


def test_a_cell_the_author_marked_as_a_solution_ships_blank_and_a_grade_cell_of_theirs_is_refused(tmp_path, worker):
    """The student attack on release: prepare rewrote the metadata, so a whole-cell solution (no markers) shipped
    word for word, and a manually graded cell's points were lost without a word."""
    helper = "def ex1_reference(x):\n    return 3 * x ** 2   # MODEL ANSWER"
    folder = _scaffold(tmp_path, {6: helper}, metadata={6: {"solution": True, "grade": False, "locked": False,
                                                             "grade_id": "helper", "schema_version": 3}})
    r = release(folder, tmp_path / "a", tmp_path / "b", worker=worker, domain_budget=QUICK)
    student = nbformat.read(r.student_notebook, as_version=4)
    cell = next(c for c in student.cells if c.metadata["nbgrader"]["grade_id"] == "helper")
    assert "MODEL ANSWER" not in cell.source and cell.metadata["nbgrader"]["solution"] is True
    folder = _scaffold(tmp_path / "2", {6: "Explain why."}, metadata={6: {
        "solution": True, "grade": True, "points": 2, "locked": False, "grade_id": "explain", "schema_version": 3}})
    with pytest.raises(BuildError) as e:
        release(folder, tmp_path / "a2", tmp_path / "b2", worker=worker, domain_budget=QUICK)
    assert "cell 7 ('explain') is an nbgrader grade cell" in str(e.value) and "its points would be lost" in str(e.value)


def test_marker_words_outside_a_marker_line_are_refused(tmp_path, worker):
    """nbgrader ends a region at any line holding "END SOLUTION": the rest of the region shipped."""
    predict = ("# PREDICT 1\n### BEGIN SOLUTION\np1_grad = 3 * P.x0 ** 2\n# (everything up to END SOLUTION is hidden)\n"
               "# SECRET-WORKING: 3 x**2\n### END SOLUTION")
    folder = _scaffold(tmp_path, {4: predict})
    with pytest.raises(BuildError) as e:
        release(folder, tmp_path / "a", tmp_path / "b", worker=worker, domain_budget=QUICK)
    assert "cell 5, line 4: '# (everything up to END SOLUTION is hidden)' holds the words of a solution marker" \
           in str(e.value)


def test_a_solution_that_leaves_a_grad_none_is_refused_rather_than_expected(tmp_path, worker):
    """The reference run's None became the key's expectation: a correct student scored 1/2, an empty function 2/2."""
    produce = ('def ex1_grad(x):\n    """y = x ** 3, then y.backward()."""\n    ### BEGIN SOLUTION\n    y = x ** 3\n'
               '    ### END SOLUTION')
    folder = _scaffold(tmp_path, {5: produce})
    with pytest.raises(BuildError) as e:
        release(folder, tmp_path / "a", tmp_path / "b", worker=worker, domain_budget=QUICK)
    assert "check '1.produce.grad': expect is a number ('diff(x**3, x)'), but the reference torch run of the " \
           "solution's ex1_grad left x.grad as None (did the solution call backward()?)" in str(e.value)


def test_given_code_after_a_region_gets_no_early_return(tmp_path, worker):
    produce = ('def ex1_grad(x):\n    """y = x ** 3, then y.backward()."""\n    ### BEGIN SOLUTION\n    y = x ** 3\n'
               '    ### END SOLUTION\n    y.backward()   # given')
    folder = _scaffold(tmp_path, {5: produce})
    with pytest.raises(BuildError) as e:   # the solution passes (backward() runs); the blank copy cannot be a stub
        release(folder, tmp_path / "a", tmp_path / "b", worker=worker, domain_budget=QUICK)
    assert "in the student copy ex1_grad runs (raised) instead of raising NotImplementedError" in str(e.value)


def test_a_hidden_prediction_gets_a_placeholder_that_says_nothing_of_it(tmp_path, worker):
    folder = _scaffold(tmp_path, spec_edit=lambda t: t.replace(
        'why = "backward() stores dy/dx = 3x**2 in the .grad of the leaf x."',
        'why = "backward() stores dy/dx = 3x**2 in the .grad of the leaf x."\nvisibility = "hidden"'))
    r = release(folder, tmp_path / "a", tmp_path / "b", worker=worker, domain_budget=QUICK)
    text = (tmp_path / "a/13-hooks/hooks.ipynb").read_text()
    assert "p1_grad = ...   # your prediction (a hidden check)" in nbformat.read(r.student_notebook, as_version=4) \
        .cells[4].source and "y = x**3 and y.backward()" not in text


def test_the_key_digest_cannot_be_recomputed_from_the_public_key_to_test_a_guess(tmp_path):
    """The student attack: key_digest (in the student notebook and public_key.json) was an unsalted hash of the full
    key minus its secret, so a guessed hidden check could be confirmed offline. It is now salted with the solution's
    code, which only the full key holds."""
    import json

    from autograder.keyfile import digest_of, load_key

    full = json.loads((ROOT / "assignments/01-backward-vs-grad/public_key.json").read_text())
    assert "digest_salt" not in full and "secret" not in full
    body = {k: v for k, v in full.items() if k not in ("hidden", "public", "public_digest")}
    assert digest_of(body) != full["digest"]   # the shipped parts (01 has no hidden check) do not give it
    assert load_key(ROOT / "assignments/01-backward-vs-grad/public_key.json").digest == full["digest"]
    nb = json.loads((ROOT / "assignments/01-backward-vs-grad/backward-vs-grad.ipynb").read_text())
    assert nb["metadata"]["autograd_lab"]["key_digest"] == full["digest"]


def test_every_misconception_that_passes_as_right_is_named_at_once(tmp_path):
    """A release named one refusal per run; now each step names all it finds (09's t drawable at 1.0, as before)."""
    folder = tmp_path / "09-forward-mode-and-functions"
    folder.mkdir()
    spec = (ROOT / "solutions/09-forward-mode-and-functions/spec.toml").read_text()
    old = 't = { kind = "real", low = 1.1, high = 2.0,'
    assert old in spec
    (folder / "spec.toml").write_text(spec.replace(old, 't = { kind = "real", low = 0.5, high = 2.0,'))
    with pytest.raises(BuildError) as e:
        check_discrimination(_base_key(load_spec(folder), "2.13.0"), "spec.toml")
    assert str(e.value).startswith("2 problems:\n  1. spec.toml check '2.predict.dual': misconception "
                                   "'tangent-without-t' passes as the right answer for 3.")
    assert "\n  2. spec.toml check '2.produce.dual': misconception 'tangent-without-t'" in str(e.value)
    assert len(e.value.problems) == 2 and "(within the check's tolerance, where t = 1.0)" in e.value.problems[0]


def test_a_spec_typo_is_said_before_any_sandbox_worker_starts(tmp_path):
    """Issue 44: a typo in spec.toml took 8-19 s to be reported on a busy machine, since release started its sandbox
    worker (which imports torch) before it read the spec. Release says each step as it starts (the command prints
    them), the worker's start among them: a refusal whose steps do not hold it came before any worker started."""
    from autograder.authoring.spec import SpecError

    folder = _scaffold(tmp_path, spec_edit=lambda t: t.replace("fresh_points = 2", "fresh_pionts = 2"))
    steps = []
    with pytest.raises(SpecError, match=r"spec.toml \[grading\], line \d+: unknown key 'fresh_pionts' \(did you mean "
                                        r"'fresh_points'\?\)"):
        release(folder, tmp_path / "a", tmp_path / "b", progress=steps.append, domain_budget=QUICK)   # no worker given: it would start one
    assert steps == ["reading the spec and the notebook"]
    p = run_cli("release", "solutions/13-hooks", cwd=tmp_path)
    assert p.returncode == 2 and "unknown key 'fresh_pionts'" in p.stderr, p.stderr
    assert [line.split(" (")[0] for line in p.stderr.splitlines() if line.startswith("release: ")] == \
        ["release: reading the spec and the notebook"], p.stderr
    # a value a student could never pass is read from the spec alone, so it is said before the worker starts too
    folder = _scaffold(tmp_path / "2", spec_edit=lambda t: t.replace(
        'expect = "diff(x**3, x)"\nwhy = "y.backward()', 'expect = "1/(x - 1)"\nwhy = "y.backward()'))
    steps = []
    with pytest.raises(BuildError, match=r"check '1.produce.grad': expect has no finite value at x0 = 1.0"):
        release(folder, tmp_path / "a2", tmp_path / "b2", progress=steps.append, domain_budget=QUICK)
    assert steps == ["reading the spec and the notebook",
                     "checking the expectations over the parameters' ranges, and the misconceptions"]
    assert not (tmp_path / "a2").exists() and not (tmp_path / "b2").exists()


def test_the_first_release_after_the_scaffold_needs_no_force_and_a_later_change_is_refused_first(tmp_path, worker):
    """Issue 44: after `autograder new` and a release of the scaffold (as the guide says), the first release of the
    instructor's own exercise was refused without --force (the scaffold's key "would change", though no student works
    on its placeholder exercise), and said so only after every other check had passed."""
    from autograder.keyfile import load_key

    folder = _scaffold(tmp_path)
    release(folder, tmp_path / "a", tmp_path / "b", worker=worker, domain_budget=QUICK)   # the scaffold as it is
    spec = folder / "spec.toml"
    spec.write_text(spec.read_text().replace("high = 2.5", "high = 3.5")
                    .replace('title = "backward() fills x.grad"', 'title = "x.grad after backward()"'))
    r = release(folder, tmp_path / "a", tmp_path / "b", worker=worker, domain_budget=QUICK)   # no --force: it replaces the scaffold's key
    assert load_key(r.key).parameters["x0"].high == 3.5 and load_key(r.key).exercises[0].title == \
        "x.grad after backward()"
    spec.write_text(spec.read_text().replace("high = 3.5", "high = 3.0"))   # now a change to a real release
    steps = []
    with pytest.raises(BuildError) as e:
        release(folder, tmp_path / "a", tmp_path / "b", worker=worker, progress=steps.append, domain_budget=QUICK)
    assert steps == ["reading the spec and the notebook"]   # said first, before the long checks
    assert "key.json was released before, and this release changes what its students see or are graded on: the " \
           "parameters (x0) of " in str(e.value) and "Release with --force to go ahead" in str(e.value)
    assert load_key(r.key).parameters["x0"].high == 3.5   # nothing written
    forced = release(folder, tmp_path / "a", tmp_path / "b", worker=worker, force=True, domain_budget=QUICK)
    assert load_key(forced.key).parameters["x0"].high == 3.0
