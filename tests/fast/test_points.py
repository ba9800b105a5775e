"""Are parameters reproducible, per student, and away from 0? (The probe request and the fresh points, which
need a full key: tests/test_plan.py.)"""
from autograder.grading import plan
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
