"""Is the probe request free of answers, and do the graded fresh points come from the full key's secret?
(Parameters drawn per student: tests/fast/test_points.py.)"""
import json
from dataclasses import replace

from autograder.grading import plan
from autograder.keyfile import public_key


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
