"""Is a spec validated on load, with errors that name the file, the check and the fix?"""
import pytest

from autograder.model import (BoolAnswer, ConventionExpectation, ExprAnswer, ValueExpectation, WarnsExpectation,
                              limits_help)
from autograder.authoring.spec import SpecError, load_spec

from conftest import SOLUTION

GOOD = '''
[assignment]
id = "t"
title = "T"
notebook = "t.ipynb"

[parameters]
x0 = { kind = "real", low = 0.5, high = 2.0 }

[[exercise]]
id = "1"
title = "one"
functions = ["ex1"]
args = [{ name = "x", param = "x0" }]

[[exercise.check]]
id = "produce.grad"
title = "x.grad"
observe = "x.grad"
expect = "diff(x**2, x)"
why = "because"
'''


def load_text(tmp_path, text):
    (tmp_path / "spec.toml").write_text(text)
    return load_spec(tmp_path)


def test_the_real_spec_loads():
    a = load_spec(SOLUTION)
    assert a.id == "01-backward-vs-grad" and len(a.exercises) == 6 and len(a.checks) == 26
    assert {c.kind for c in a.checks} == {"predict", "produce"}


def test_a_minimal_spec_loads(tmp_path):
    a = load_text(tmp_path, GOOD)
    assert a.checks[0].id == "1.produce.grad"
    assert a.checks[0].expectation == ValueExpectation(ExprAnswer("diff(x**2, x)"))
    assert a.grading.fresh_points == 2 and a.limits.call_timeout == 5.0


@pytest.mark.parametrize("old, new, phrases", [
    ('expect = "diff(x**2, x)"', 'expect = "diff(z**2, z)"', ["check '1.produce.grad'", "not a valid expression", "names you may use"]),
    ('observe = "x.grad"', 'observe = "y.grad"', ["check '1.produce.grad'", "observe must be"]),
    ('why = "because"', 'why = "because"\nexpcet = "1"', ["check '1.produce.grad'", "unknown key 'expcet' (did you mean 'expect'?)"]),
    ('low = 0.5', 'low = 0.0', ["[parameters.x0]", "away from 0"]),
    ('param = "x0"', 'param = "x1"', ["names parameter 'x1'", "define it under [parameters]"]),
    ('observe = "x.grad"\nexpect = "diff(x**2, x)"', 'observe = "returned"\nraises = "RuntimeError"\nexpect = "1"',
     ["exactly one of expect"]),
    ('observe = "x.grad"', 'observe = "x.grad"\npredict = "p1"', ["either predict", "not both"]),
    ('observe = "x.grad"\nexpect = "diff(x**2, x)"', 'observe = "returned"\nraises = "NotImplementedError"\nphrase = "jvp"',
     ["check '1.produce.grad'", "unwritten placeholder", "in a prediction"]),
    ('functions = ["ex1"]', 'functions = ["ex-1"]', ["must be a Python identifier"]),
])
def test_mistakes_are_named_with_file_place_and_fix(tmp_path, old, new, phrases):
    assert old in GOOD
    with pytest.raises(SpecError) as e:
        load_text(tmp_path, GOOD.replace(old, new))
    msg = str(e.value)
    assert str(tmp_path / "spec.toml") in msg
    for phrase in phrases:
        assert phrase in msg


def test_invalid_toml_and_missing_file(tmp_path):
    with pytest.raises(SpecError, match="not valid TOML"):
        load_text(tmp_path, "[assignment\n")
    with pytest.raises(SpecError, match="no such file"):
        load_spec(tmp_path / "nope")


def test_an_unbalanced_expression_is_a_spec_error_not_a_traceback(tmp_path):
    with pytest.raises(SpecError, match="check '1.produce.grad'.*not a valid expression"):
        load_text(tmp_path, GOOD.replace('expect = "diff(x**2, x)"', 'expect = "diff(x**2, x"'))


def test_a_misspelt_exception_class_gets_a_suggestion(tmp_path):
    text = GOOD.replace('observe = "x.grad"\nexpect = "diff(x**2, x)"', 'observe = "returned"\nraises = "RunTimeError"')
    with pytest.raises(SpecError, match=r"'RunTimeError' is not a Python exception; did you mean 'RuntimeError'\?"):
        load_text(tmp_path, text)


def test_tensor_arguments_warnings_booleans_and_conventions_load(tmp_path):
    text = GOOD.replace('args = [{ name = "x", param = "x0" }]',
                        'args = [{ name = "x", param = "x0" }, { name = "w", params = ["x0", "x0"], shape = [1, 2] }]')
    text += ('\n[[exercise.check]]\nid = "warn"\ntitle = "t"\nobserve = "returned"\nwarns = "UserWarning"\n'
             'phrase = "not a leaf"\nwhy = "w"\n'
             '\n[[exercise.check]]\nid = "flag"\ntitle = "t"\nobserve = "returned"\nexpect = "False"\nwhy = "w"\n'
             '\n[[exercise.check]]\nid = "kink"\ntitle = "t"\nobserve = "x.grad"\nexpect = "0"\nwhy = "w"\n'
             'convention = "relu\'(0) = 0"\nsympy = "diff(Max(0, x), x)"\nversion_sensitive = true\n')
    a = load_text(tmp_path, text)
    w = a.exercises[0].args[1]
    assert w.params == ("x0", "x0") and w.shape == (1, 2) and w.param is None
    by = {c.id.split(".", 1)[1]: c for c in a.checks}
    assert by["warn"].expectation == WarnsExpectation("UserWarning", "not a leaf")
    assert by["flag"].expectation == ValueExpectation(BoolAnswer(False))
    assert by["kink"].expectation == ConventionExpectation(ExprAnswer("0"), None, "relu'(0) = 0", "diff(Max(0, x), x)")
    assert by["kink"].version_sensitive is True


def test_a_tensor_argument_whose_shape_does_not_hold_its_params_is_refused(tmp_path):
    text = GOOD.replace('args = [{ name = "x", param = "x0" }]',
                        'args = [{ name = "x", param = "x0" }, { name = "w", params = ["x0", "x0"], shape = [3] }]')
    with pytest.raises(SpecError, match=r"shape \[3\] holds 3 values, but params lists 2"):
        load_text(tmp_path, text)


def test_a_convention_without_sympys_value_is_refused(tmp_path):
    text = GOOD + '\nconvention = "relu\'(0) = 0"\n'
    with pytest.raises(SpecError, match="needs sympy ="):
        load_text(tmp_path, text)


def test_limits_are_read_from_the_grading_table_and_refused_by_name(tmp_path):
    a = load_text(tmp_path, GOOD.replace("[parameters]", "[grading]\ncall_timeout = 9.5\nmemory_mb = 512\n\n[parameters]"))
    assert a.limits.call_timeout == 9.5 and a.limits.memory_mb == 512 and a.limits.cell_timeout == 20.0
    with pytest.raises(SpecError, match="memory_mb must be a whole number"):
        load_text(tmp_path, GOOD.replace("[parameters]", "[grading]\nmemory_mb = 51.2\n\n[parameters]"))
    with pytest.raises(SpecError, match=r"unknown key 'memory'"):
        load_text(tmp_path, GOOD.replace("[parameters]", "[grading]\nmemory = 512\n\n[parameters]"))
    assert "call_timeout (s, default 5): each call of a produce function" in limits_help()


def test_a_convention_goes_with_a_value_not_with_an_exception(tmp_path):
    text = GOOD.replace('observe = "x.grad"\nexpect = "diff(x**2, x)"', 'observe = "returned"\nraises = "RuntimeError"\n'
                        'phrase = "p"\nconvention = "c"\nsympy = "0"')
    with pytest.raises(SpecError, match="convention = ... goes with expect"):
        load_text(tmp_path, text)


MISCONCEPTION = '''
[[exercise.misconception]]
id = "power-rule-without-factor"
name = "power rule without the factor 2"
checks = ["produce.grad"]
value = "x"
feedback = "The exponent comes down as a factor."
'''


def test_a_misconception_is_attached_to_each_check_it_lists(tmp_path):
    a = load_text(tmp_path, GOOD + MISCONCEPTION + MISCONCEPTION.replace("power-rule-without-factor", "none-is-zero")
                  .replace('value = "x"', 'value = "None"'))
    (c,) = a.checks
    assert [(m.id, m.answer.text) for m in c.misconceptions] == [("power-rule-without-factor", "x"), ("none-is-zero", "None")]
    assert c.misconceptions[0].name == "power rule without the factor 2"


@pytest.mark.parametrize("old, new, phrase", [
    ('checks = ["produce.grad"]', 'checks = ["produce.gard"]', "checks names 'produce.gard', which is not a check of "
                                                               "exercise '1'; its checks are produce.grad"),
    ('value = "x"', 'value = "diff(x**2, x)"', "its value is the answer of 'produce.grad'"),
    ('value = "x"', 'value = "y"', "value 'y' is not a valid expression"),
    ('value = "x"', 'raises = "RuntimeError"\nvalue = "x"', "give exactly one of value = ..."),
    ('value = "x"', 'value = "x"\ncontainer = "list"', 'container = "list" goes with value = [...]'),
    ('id = "power-rule-without-factor"', 'id = "Power rule"', "lower case with hyphens"),
    ('feedback = "The exponent comes down as a factor."', 'feedback = ""', "one or two sentences"),
    ('name = "power rule without the factor 2"', 'nmae = "x"', "unknown key 'nmae' (did you mean 'name'?)"),
    ('checks = ["produce.grad"]', 'checks = ["produce.grad", "produce.grad"]', "checks lists a check twice"),
    ('value = "x"', 'raises = "RuntimeErorr"', "'RuntimeErorr' is not a Python exception; did you mean 'RuntimeError'?"),
    ('value = "x"', 'raises = "RuntimeError"', "'produce.grad' observes x.grad, and a call that raises is an error "
                                               "there, never this misconception"),
    ('value = "x"', 'value = "x"\nevidence = { "y.grad" = "1" }', "evidence y.grad = '1' is not one of: a tensor "
                                                                  "argument's .grad (x.grad) = a value"),
    ('value = "x"', 'value = "x"\nevidence = { runs_backward = "yes" }', "evidence runs_backward = 'yes' is not one of"),
    ('value = "x"', 'value = "x"\nevidence = {}', "evidence must be a table of what the call did"),
    # issue 27: ^ was accepted inside a misconception as XOR ((3^2) = 1), so it could never match
    ('value = "x"', 'value = "(3^2)*x"', "'^' is not a power: write ** (x**2)"),
    ('value = "x"', 'value = "x"\noverlap = { share = 2, why = "..." }', "overlap must be { share = 0.05, why"),
    ('value = "x"', 'value = "x"\noverlap = 0.05', "overlap must be { share = 0.05, why"),
])
def test_a_bad_misconception_is_named_with_file_check_and_fix(tmp_path, old, new, phrase):
    with pytest.raises(SpecError) as e:
        load_text(tmp_path, GOOD + MISCONCEPTION.replace(old, new))
    assert "spec.toml exercise '1' misconception" in str(e.value) and phrase in str(e.value), str(e.value)


def test_an_unknown_key_is_named_with_its_line_and_the_key_it_is_closest_to(tmp_path):
    """Issue 27: unknown keys got the allowed list, but no "did you mean" and no line number."""
    text = GOOD.replace('why = "because"', 'why = "because"\nobsreve = "x.grad"', 1)
    line = text.splitlines().index('obsreve = "x.grad"') + 1
    with pytest.raises(SpecError) as e:
        load_text(tmp_path, text)
    assert f"check '1.produce.grad', line {line}: unknown key 'obsreve' (did you mean 'observe'?); allowed: " \
           in str(e.value), str(e.value)
    text = GOOD.replace("[parameters]", "[grading]\nzzz = 1\n\n[parameters]")
    with pytest.raises(SpecError) as e:
        load_text(tmp_path, text)
    line = text.splitlines().index("zzz = 1") + 1
    assert f"[grading], line {line}: unknown key 'zzz'; allowed: " in str(e.value), str(e.value)   # nothing close


def test_a_title_or_why_with_a_line_break_is_refused(tmp_path):
    """A check title becomes a generated placeholder's comment: a line break in it would be code in the notebook."""
    with pytest.raises(SpecError) as e:
        load_text(tmp_path, GOOD.replace('why = "because"', 'why = "because"', 1).replace(
            'title = "', 'title = "x.grad\\nimport os; print(1) ', 1))
    assert "holds a line break or control character ('\\n'); write it on one line" in str(e.value), str(e.value)


def test_an_accepted_overlap_is_read_and_kept_by_the_key(tmp_path):
    from autograder.keyfile import _check_from, _check_json
    from autograder.model import Overlap

    a = load_text(tmp_path, GOOD + MISCONCEPTION.replace('value = "x"', 'value = "x"\noverlap = { share = 0.05, why = '
                                                         '"told   apart by the produce check" }'))
    (m,) = a.checks[0].misconceptions
    assert m.overlap == Overlap(0.05, "told apart by the produce check")
    assert _check_from(_check_json(a.checks[0])).misconceptions[0].overlap == m.overlap


def test_evidence_is_read_into_signs_and_kept_by_the_key(tmp_path):
    from autograder.keyfile import _check_from, _check_json
    from autograder.model import Sign

    text = MISCONCEPTION.replace('value = "x"', 'value = "x"\nevidence = { "x.grad" = "2*x", warns = "w", '
                                                 'message = "m", runs_backward = false }')
    (c,) = load_text(tmp_path, GOOD + text).checks
    assert c.misconceptions[0].evidence == (Sign("x.grad", ExprAnswer("2*x")), Sign("warns", phrase="w"),
                                            Sign("message", phrase="m"), Sign("runs_backward", flag=False))
    assert _check_from(_check_json(c)) == c


def test_two_misconceptions_of_one_exercise_need_two_ids(tmp_path):
    with pytest.raises(SpecError, match="exercise '1' has two misconceptions with this id; give each its own"):
        load_text(tmp_path, GOOD + MISCONCEPTION + MISCONCEPTION.replace('value = "x"', 'value = "0"'))


def test_on_cuda_gives_a_produce_checks_value_where_cuda_is_available(tmp_path):
    cuda = 'why = "because"\nversion_sensitive = true\non_cuda = { expect = "2**16*diff(x**2, x)", why = "scaled" }'
    c = load_text(tmp_path, GOOD.replace('why = "because"', cuda)).checks[0]
    assert c.on_cuda.answer == ExprAnswer("2**16*diff(x**2, x)") and c.on_cuda.why == "scaled"
    for text, phrase in ((cuda.replace("version_sensitive = true\n", ""), "add version_sensitive = true"),
                         (cuda.replace(', why = "scaled"', ""), "on_cuda must be a table { expect")):
        with pytest.raises(SpecError) as e:
            load_text(tmp_path, GOOD.replace('why = "because"', text))
        assert phrase in str(e.value) and "check '1.produce.grad'" in str(e.value)
    predict = GOOD.replace('observe = "x.grad"', 'predict = "p1"').replace('why = "because"', cuda)
    with pytest.raises(SpecError) as e:
        load_text(tmp_path, predict)
    assert "on_cuda goes with a produce check" in str(e.value)


def test_a_prediction_is_version_sensitive_where_the_produce_check_it_shares_its_value_with_is(tmp_path):
    twin = GOOD.replace('why = "because"', 'why = "because"\nversion_sensitive = true') + '''
[[exercise.check]]
id = "predict.grad"
title = "predicted: x.grad"
predict = "p1_grad"
expect = "diff(x**2, x)"
why = "because"

[[exercise.check]]
id = "predict.other"
title = "predicted: something else"
predict = "p1_other"
expect = "x"
why = "because"
'''
    flags = {c.id: c.version_sensitive for c in load_text(tmp_path, twin).checks}
    assert flags == {"1.produce.grad": True, "1.predict.grad": True, "1.predict.other": False}


def test_a_prediction_that_names_an_exception_takes_the_flag_of_its_namesake_produce_check(tmp_path):
    """Two produce checks raise RuntimeError, one version-sensitive: the prediction of the same name is the other's
    twin (11's 5.predict.second and 5.produce.second, beside 5.produce.materialize)."""
    two = GOOD.replace('functions = ["ex1"]', 'functions = ["ex1", "ex1_second", "ex1_materialize"]').replace(
        'observe = "x.grad"', 'function = "ex1"\nobserve = "x.grad"') + '''
[[exercise.check]]
id = "produce.second"
title = "the exception"
function = "ex1_second"
observe = "returned"
raises = "RuntimeError"
phrase = "does not require grad"
why = "because"

[[exercise.check]]
id = "produce.materialize"
title = "the exception"
function = "ex1_materialize"
observe = "returned"
raises = "RuntimeError"
phrase = "does not require grad"
version_sensitive = true
why = "because"

[[exercise.check]]
id = "predict.second"
title = "predicted: the exception"
predict = "p1_second"
raises = "RuntimeError"
why = "because"

[[exercise.check]]
id = "predict.materialize"
title = "predicted: the exception"
predict = "p1_materialize"
raises = "RuntimeError"
why = "because"
'''
    flags = {c.id: c.version_sensitive for c in load_text(tmp_path, two).checks}
    assert flags["1.predict.second"] is False and flags["1.predict.materialize"] is True


def test_container_tuple_says_the_tuple_is_the_lesson_and_the_key_keeps_it_only_where_set(tmp_path):
    """issue 44: a list of the same items stands for an expected tuple unless the container is the lesson."""
    from autograder.keyfile import _check_from, _check_json
    from autograder.model import container_is_lesson

    pair = GOOD.replace('observe = "x.grad"\nexpect = "diff(x**2, x)"', 'observe = "returned"\nexpect = ["x", "None"]')
    (c,) = load_text(tmp_path, pair).checks
    assert c.container is None and not container_is_lesson(c) and "container" not in _check_json(c)
    (c,) = load_text(tmp_path, pair.replace('why = "because"', 'why = "because"\ncontainer = "tuple"')).checks
    assert c.container == "tuple" and container_is_lesson(c) and _check_json(c)["container"] == "tuple"
    assert _check_from(_check_json(c)) == c
    (c,) = load_text(tmp_path, pair.replace('["x", "None"]', '["x"]')).checks   # (g,): only torch's container
    assert c.container is None and container_is_lesson(c)
    listed = MISCONCEPTION.replace('value = "x"', 'value = ["x", "None"]\ncontainer = "list"')
    (c,) = load_text(tmp_path, pair + listed).checks   # a list named as a mistake: the tuple is the lesson
    assert c.container is None and container_is_lesson(c)
    for bad in ('container = "list"', 'container = true'):
        with pytest.raises(SpecError, match='container = "tuple" goes with expect = \\[...\\] \\(a tuple\\)'):
            load_text(tmp_path, pair.replace('why = "because"', f'why = "because"\n{bad}'))
    with pytest.raises(SpecError, match="check '1.produce.grad': container = \"tuple\" goes with expect = "):
        load_text(tmp_path, GOOD.replace('why = "because"', 'why = "because"\ncontainer = "tuple"'))


def test_in_the_curriculum_a_tuple_is_the_lesson_where_torch_returns_it_or_a_misconception_names_the_list():
    from autograder.authoring.spec import load_spec as load
    from autograder.model import container_is_lesson

    from conftest import ROOT

    def checks(aid):
        return {c.id: c for c in load(ROOT / "solutions" / aid).checks}

    a11, a01, a04 = checks("11-debugging-gradients"), checks("01-backward-vs-grad"), checks("04-graph-lifetime")
    for cid in ("4.predict.version", "4.produce.version", "5.predict.helper", "5.produce.helper"):
        assert not container_is_lesson(a11[cid]), cid   # a pair the exercise asks for: [0, 1] is (0, 1)
    assert not container_is_lesson(checks("12-hooks-and-processes")["2.predict.terms"])
    assert container_is_lesson(a01["2.predict.returns"]) and container_is_lesson(a01["2.produce.returns"])   # (g,)
    assert container_is_lesson(a04["4.predict.derivatives"]) and container_is_lesson(a04["4.produce.derivatives"])


@pytest.mark.parametrize("value", ["50", "1.5e3", '"200"', "true", "-200"])
def test_domain_points_is_a_whole_number_of_at_least_100(tmp_path, value):
    text = GOOD.replace('functions = ["ex1"]', f'functions = ["ex1"]\ndomain_points = {value}')
    with pytest.raises(SpecError) as e:
        load_text(tmp_path, text)
    assert "[[exercise]] id='1': domain_points must be a whole number of at least 100" in str(e.value)
    assert "leave it out for the check's own budget" in str(e.value) and str(tmp_path) in str(e.value)


def test_domain_points_reaches_the_key_only_where_set():
    """An exercise's domain_points is in its full key's JSON only where the spec sets it, comes back from the JSON, and
    changes neither the key's digest nor the public key."""
    from dataclasses import replace

    from autograder.keyfile import digest_of, from_json, public_key, to_json
    from autograder.model import Key

    a = load_spec(SOLUTION)
    assert all(e.domain_points is None for e in a.exercises)
    key = Key(a.id, a.title, a.notebook, "", "2.13.0", "1.14", a.limits, a.grading, a.parameters, a.exercises,
              a.checks)
    assert all("domain_points" not in e for e in to_json(key)["exercises"])
    capped = replace(key, exercises=(replace(key.exercises[0], domain_points=300), *key.exercises[1:]))
    data = to_json(capped)
    assert data["exercises"][0]["domain_points"] == 300 and "domain_points" not in data["exercises"][1]
    assert from_json(data).exercises[0].domain_points == 300 and from_json(data).exercises[1].domain_points is None
    # release's alone: the same digest (a key that sets it grades as before), and the public key leaves it out
    assert digest_of(data) == digest_of(to_json(key))
    assert all("domain_points" not in e for e in to_json(public_key(capped))["exercises"])
