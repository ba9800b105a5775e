"""Are parameters reproducible, per student, away from 0, and is the probe request free of answers?"""
import json

from dataclasses import replace

from autograder.grading import plan
from autograder.keyfile import public_key
from autograder.model import Parameter

PARAMS = {"x0": Parameter("real", 0.5, 2.5, "any", 2), "k": Parameter("integer", 2, 5)}


def test_same_student_same_point_and_different_students_differ():
    a1 = plan.draw_point(PARAMS, "a1", "alice", "own")
    assert a1 == plan.draw_point(PARAMS, "a1", "alice", "own")
    others = {plan.draw_point(PARAMS, "a1", f"s{i}", "own")["x0"] for i in range(20)}
    assert len(others) > 10


def test_points_stay_away_from_zero_and_use_both_signs():
    xs = [plan.draw_point(PARAMS, "a1", f"s{i}", "own")["x0"] for i in range(200)]
    assert all(0.5 <= abs(x) <= 2.5 for x in xs)
    assert any(x < 0 for x in xs) and any(x > 0 for x in xs)
    assert all(round(x, 2) == x for x in xs)
    ks = {plan.draw_point(PARAMS, "a1", f"s{i}", "own")["k"] for i in range(200)}
    assert ks == {2, 3, 4, 5}


def test_request_has_fresh_points_and_no_expected_values(key):
    req = plan.probe_request(key, ["x = 1", 'lab.check("1")'], "alice", positions={"1": 1})
    entry = next(e for e in req["observe"] if e["exercise"] == "1")
    assert entry["after"] == 1 and entry["names"] == ["p1_grad", "p1_returns"]
    assert all(e["after"] == 1 for e in req["observe"])   # by default, after the last cell
    call = next(c for c in entry["calls"] if c["function"] == "ex1")
    assert len(call["points"]) == 1 + key.grading.fresh_points
    xs = [p["args"][0]["tensor"]["value"] for p in call["points"]]
    assert len(set(xs)) == len(xs)
    text = json.dumps(req)
    assert "diff(" not in text and "expect" not in text and "form" not in text


def test_graded_fresh_points_come_from_the_keys_secret_not_from_the_public_key(key):
    graded, public = plan.points_for(key, "ada"), plan.points_for(public_key(key), "ada")
    assert graded[0] == public[0]                    # the student's own point is the same
    assert graded[1] != public[1] and graded[2] != public[2]
    assert len(key.fresh_seed) == 33 and public_key(key).fresh_seed is None
    assert plan.ProbePlan.of(public_key(key)).fresh_seed == ""   # the kernel's plan has no seed


def test_fresh_points_never_repeat_a_real_parameter_of_an_earlier_point(key):
    for i in range(2000):
        points = plan.points_for(replace(key, fresh_seed=f"-{i}"), f"student-{i}")
        for name, dist in key.parameters.items():
            if dist.kind == "real":
                values = [p[name] for p in points]
                assert len(set(values)) == len(values), (i, name, values)
