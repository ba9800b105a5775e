"""Do comparisons decide exactly on kind, length, dtype, shape and tolerance?"""
from autograder.judging.compare import Tolerance, compare_exception, compare_predicted, compare_produced, show

T32 = lambda dtype: Tolerance(1e-5, 1e-5)


def tensor(*data, dtype="float32", shape=None):
    return {"t": "tensor", "dtype": dtype, "shape": [] if shape is None and len(data) == 1 else list(shape or [len(data)]),
            "data": list(data), "requires_grad": False, "is_leaf": True, "grad_fn": None, "truncated": False}


def tup(*items):
    return {"t": "seq", "kind": "tuple", "items": list(items)}


def test_a_tensor_is_not_the_tuple_autograd_grad_returns():
    c = compare_produced(tup(tensor(6.0)), tensor(6.0), T32)
    assert not c.ok and c.reason == "kind" and "tuple of 1 item" in c.detail


def test_values_within_float32_tolerance_match_and_outside_do_not():
    assert compare_produced(tensor(6.0), tensor(6.00004), T32).ok
    c = compare_produced(tensor(6.0), tensor(6.1), T32)
    assert not c.ok and c.reason == "values" and "6.1 instead of 6.0" in c.detail


def test_dtype_and_shape_are_checked_before_values():
    assert compare_produced(tensor(6.0), tensor(6.0, dtype="float64"), T32).reason == "dtype"
    assert compare_produced(tensor(6.0), tensor(6.0, shape=[1]), T32).reason == "shape"


def test_none_versus_a_zero_tensor():
    c = compare_produced({"t": "none"}, tensor(0.0), T32)
    assert not c.ok and "expected None" in c.detail


def test_predictions_accept_any_number_form_but_a_tuple_must_be_a_tuple():
    tol = Tolerance(2e-3, 1e-6)
    assert compare_predicted({"t": "float", "v": 2.7418}, {"t": "float", "v": 2.742}, tol).ok
    assert compare_predicted({"t": "float", "v": 4.0}, {"t": "int", "v": 4}, tol).ok
    assert compare_predicted({"t": "float", "v": 4.0}, tensor(4.0), tol).ok
    assert compare_predicted(tup({"t": "float", "v": 1.5}, {"t": "none"}), tup({"t": "int", "v": 1.5}, {"t": "none"}), tol).ok
    as_list = {"t": "seq", "kind": "list", "items": [{"t": "float", "v": 1.5}, {"t": "none"}]}
    c = compare_predicted(tup({"t": "float", "v": 1.5}, {"t": "none"}), as_list, tol)
    assert not c.ok and "expected a tuple of 2 items, got a list of 2 items" in c.detail
    c = compare_predicted({"t": "float", "v": 2.7418}, {"t": "float", "v": 2.8}, tol)
    assert not c.ok and c.detail == "2.8 instead of 2.7418 (abs diff 0.0582)"
    c = compare_predicted({"t": "float", "v": 1.0}, {"t": "str", "v": "1"}, tol)
    assert "without quotes" in c.detail


def test_a_quoted_none_gets_a_hint():
    c = compare_predicted({"t": "none"}, {"t": "str", "v": "None"}, Tolerance(1e-3, 0))
    assert not c.ok and "without quotes" in c.detail


def test_exception_class_names_and_key_phrase():
    exp = {"raises": "RuntimeError", "phrase": "not have been used"}
    assert compare_exception(exp, {"type": "RuntimeError", "mro": ["RuntimeError", "Exception"],
                                   "message": "... appears to NOT have been used in the graph"}).ok
    assert compare_exception(exp, {"type": "ValueError", "mro": ["ValueError"], "message": "x"}).reason == "exception"
    assert compare_exception(exp, {"type": "RuntimeError", "mro": ["RuntimeError"], "message": "other"}).reason == "phrase"
    assert compare_exception(exp, None).reason == "exception"
    assert compare_predicted({"t": "class", "name": "RuntimeError"}, {"t": "str", "v": "RuntimeError"}, Tolerance(0, 0)).ok


def test_show_looks_like_torch():
    assert show(tup(tensor(6.0))) == "(tensor(6.),)"
    assert show(tensor(1.0, 2.0)) == "tensor([1., 2.])"
    assert show({"t": "float", "v": "nan"}) == "nan"


def test_a_warning_check_wants_the_class_or_a_subclass_and_the_phrase():
    from autograder.judging.compare import compare_warning

    leaf = {"category": "UserWarning", "message": "The .grad attribute of a Tensor that is not a leaf Tensor",
            "mro": ["UserWarning", "Warning", "Exception", "BaseException", "object"]}
    assert compare_warning({"warns": "UserWarning", "phrase": "NOT A LEAF"}, [leaf]).ok
    assert compare_warning({"warns": "Warning", "phrase": "not a leaf"}, [leaf]).ok
    c = compare_warning({"warns": "UserWarning", "phrase": "retain_grad"}, [leaf])
    assert not c.ok and c.reason == "phrase"
    c = compare_warning({"warns": "DeprecationWarning", "phrase": "x"}, [leaf])
    assert not c.ok and c.detail == "expected a DeprecationWarning; the call emitted UserWarning"
    assert compare_warning({"warns": "UserWarning", "phrase": "x"}, []).detail.endswith("emitted no warning")
    # of several warnings of the class, the detail shows the one nearest to the phrase (11's anomaly check: anomaly
    # mode's "has been enabled" comes first, the backward's warning without the forward traceback is the one to see)
    enabled = {"category": "UserWarning", "message": "Anomaly Detection has been enabled. This mode will increase the "
                                                     "runtime", "mro": ["UserWarning"]}
    late = {"category": "UserWarning", "message": "Error detected in MulBackward0. No forward pass information "
                                                  "available.", "mro": ["UserWarning"]}
    c = compare_warning({"warns": "UserWarning", "phrase": "Error detected in MulBackward0. Traceback of forward call"},
                        [enabled, late])
    assert not c.ok and c.detail.endswith(": Error detected in MulBackward0. No forward pass information available.")


def test_a_boolean_prediction_must_be_the_boolean_and_a_vector_any_container_of_its_numbers():
    from autograder.judging.compare import Tolerance, compare_predicted

    tol = Tolerance(2e-3, 1e-6)
    assert compare_predicted({"t": "bool", "v": False}, {"t": "bool", "v": False}, tol).ok
    c = compare_predicted({"t": "bool", "v": False}, {"t": "str", "v": "False"}, tol)
    assert not c.ok and "without quotes" in c.detail
    assert not compare_predicted({"t": "bool", "v": True}, {"t": "int", "v": 1}, tol).ok
    vec = {"t": "array", "dtype": "float64", "shape": [2], "data": [1.0, 2.0]}
    as_list = {"t": "seq", "kind": "list", "items": [{"t": "float", "v": 1.0}, {"t": "int", "v": 2}]}
    assert compare_predicted(vec, as_list, tol).ok
    assert compare_predicted(vec, {"t": "tensor", "dtype": "float32", "shape": [2], "data": [1.0, 2.0]}, tol).ok
    c = compare_predicted(vec, {"t": "seq", "kind": "list", "items": [{"t": "float", "v": 1.0}]}, tol)
    assert not c.ok and c.detail == "expected 2 numbers, got 1"


def test_an_exception_torch_raises_from_c_code_must_not_come_from_a_raise_statement():
    from autograder.judging.compare import compare_exception

    expect = {"raises": "RuntimeError", "phrase": "floating point"}
    by_torch = {"type": "RuntimeError", "mro": ["RuntimeError"], "message": "Only Tensors of floating point dtype",
                "origin": "__main__", "statement": False}
    assert compare_exception(expect, by_torch, called=True).ok
    by_hand = {**by_torch, "statement": True}
    c = compare_exception(expect, by_hand, called=True)
    assert not c.ok and "raise statement" in c.detail


def test_a_truncated_sequence_is_said_to_be_longer_and_never_matches():
    long = {"t": "seq", "kind": "tuple", "items": [{"t": "float", "v": 2.0}] * 64, "truncated": True}
    c = compare_predicted({**long, "truncated": False}, long, Tolerance(2e-3, 1e-6))
    assert not c.ok and "got a tuple of more than 64 items" in c.detail
    c = compare_produced(tup(*[tensor(2.0)] * 64), {**long, "items": [tensor(2.0)] * 64}, T32)
    assert not c.ok and c.reason == "length" and "more than 64 items" in c.detail


def test_a_tensor_whose_values_could_not_be_read_says_so():
    meta = {**tensor(0.0), "data": [], "truncated": True, "note": "NotImplementedError: Cannot copy out of meta tensor"}
    c = compare_produced(tensor(6.0), meta, T32)
    assert not c.ok and "its values could not be read (NotImplementedError: Cannot copy out of meta tensor" in c.detail
    assert show(meta) == "tensor(<values not readable>)"


def test_a_vector_wrapped_in_a_tuple_is_not_the_vector():
    from autograder.judging.compare import Tolerance, compare_predicted

    tol = Tolerance(2e-3, 1e-6)
    vec = {"t": "array", "dtype": "float64", "shape": [2], "data": [1.0, 2.0]}
    as_list = {"t": "seq", "kind": "list", "items": [{"t": "float", "v": 1.0}, {"t": "int", "v": 2}]}
    c = compare_predicted(vec, {"t": "seq", "kind": "tuple", "items": [as_list]}, tol)
    assert not c.ok and c.detail == "expected 2 numbers (a list or a tensor), got a tuple of 1 item"
    assert compare_predicted(vec, {**as_list, "kind": "tuple"}, tol).ok   # (1.0, 2): the numbers themselves


def test_a_value_as_a_learner_writes_it():
    from autograder.judging.compare import plain

    vec = {"t": "array", "dtype": "float64", "shape": [2], "data": [0.0, 1.5]}
    assert plain(vec) == "[0.0, 1.5]"
    assert plain({**vec, "shape": [1, 2]}) == "[[0.0, 1.5]]"
    assert plain({"t": "seq", "kind": "tuple", "items": [vec, {"t": "none"}]}) == "([0.0, 1.5], None)"
    assert plain({"t": "seq", "kind": "tuple", "items": [{"t": "float", "v": 2.0}]}) == "(2.0,)"


def test_a_matrix_may_be_written_in_every_form_a_learner_uses():
    """((h00, h01), (h10, h11)) failed before, [(..), (..)] passed (issue "Right grades ... round two")."""
    from autograder.judging.compare import Tolerance, compare_predicted

    tol = Tolerance(2e-3, 1e-6)
    m = {"t": "array", "dtype": "float64", "shape": [2, 2], "data": [1.0, 2.0, 3.0, 4.0]}
    num = lambda x: {"t": "float", "v": x}
    row = lambda kind, a, b: {"t": "seq", "kind": kind, "items": [num(a), num(b)]}
    for outer in ("tuple", "list"):
        for inner in ("tuple", "list"):
            nested = {"t": "seq", "kind": outer, "items": [row(inner, 1.0, 2.0), row(inner, 3.0, 4.0)]}
            assert compare_predicted(m, nested, tol).ok, (outer, inner)
    assert compare_predicted(m, {"t": "seq", "kind": "list", "items": [num(1), num(2), num(3), num(4)]}, tol).ok
    assert compare_predicted(m, {"t": "array", "dtype": "float64", "shape": [2, 2], "data": [1, 2, 3, 4]}, tol).ok
    wrong = compare_predicted(m, {"t": "seq", "kind": "tuple", "items": [row("tuple", 1.0, 2.0), row("tuple", 4.0, 3.0)]}, tol)
    assert not wrong.ok and wrong.reason == "values"
    ragged = {"t": "seq", "kind": "list", "items": [{"t": "seq", "kind": "list", "items": [num(1), num(2), num(3)]},
                                                     {"t": "seq", "kind": "list", "items": [num(4)]}]}
    assert compare_predicted(m, ragged, tol).ok   # ragged: read row-major, as before
    column = {"t": "seq", "kind": "list", "items": [{"t": "seq", "kind": "list", "items": [num(x)]}
                                                     for x in (1.0, 2.0, 3.0, 4.0)]}
    assert compare_predicted(m, column, tol).ok   # one number per row: the flat list again
    m23 = {"t": "array", "dtype": "float64", "shape": [2, 3], "data": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}
    rows32 = {"t": "seq", "kind": "list", "items": [row("list", 1.0, 2.0), row("list", 3.0, 4.0), row("list", 5.0, 6.0)]}
    c = compare_predicted(m23, rows32, tol)
    assert not c.ok and c.detail == "expected shape (2, 3), got nested lists of shape (3, 2)"
    wrapped = {"t": "seq", "kind": "tuple", "items": [{"t": "array", "dtype": "float64", "shape": [2, 2],
                                                       "data": [1.0, 2.0, 3.0, 4.0]}]}
    assert not compare_predicted(m, wrapped, tol).ok   # (H,): autograd.grad's tuple, not the matrix


# ------------------------------------------------------------------ issue 44: numpy's bools, a pair written as a list

def _np_bool(v, shape=()):
    """A numpy bool as the probe sends it (autograder.sandbox.inside.probe.encode: an array of dtype bool)."""
    import numpy as np

    from autograder.sandbox.inside.probe import encode

    return encode(np.array(v).reshape(shape) if shape != () or isinstance(v, list) else v)


def test_numpy_bools_are_the_bools_they_are_in_predictions_and_produced_values():
    import numpy as np

    tol = Tolerance(2e-3, 1e-6)
    for right, value in [(False, np.False_), (True, np.True_), (True, np.array(True)), (False, np.isclose(1.0, 2.0)),
                         (True, np.all(np.array([1.0, 2.0]) > 0))]:
        observed = _np_bool(value)
        assert observed == {"t": "array", "dtype": "bool", "shape": [], "data": [right], "truncated": False}
        assert compare_predicted({"t": "bool", "v": right}, observed, tol).ok
        assert compare_produced({"t": "bool", "v": right}, observed, T32).ok
        c = compare_predicted({"t": "bool", "v": not right}, observed, tol)
        assert not c.ok and c.reason == "values" and c.detail == f"expected {not right}, got array({right}, dtype=bool)"
        c = compare_produced({"t": "bool", "v": not right}, observed, T32)
        assert not c.ok and c.reason == "values" and c.detail == f"{right} instead of {not right}"
    # in a pair, too: (x.is_leaf, x.requires_grad) computed with numpy
    pair = {"t": "seq", "kind": "tuple", "items": [_np_bool(np.False_), {"t": "bool", "v": True}]}
    assert compare_predicted(tup({"t": "bool", "v": False}, {"t": "bool", "v": True}), pair, tol).ok
    assert compare_produced(tup({"t": "bool", "v": False}, {"t": "bool", "v": True}), pair, T32).ok


def test_what_is_not_one_bool_is_still_refused_where_a_bool_is_expected():
    import numpy as np

    tol = Tolerance(2e-3, 1e-6)
    for value, kind in [(np.array([True, True]), "a numpy array"), (np.array([True]), "a numpy array"),
                        (np.float64(1.0), "a float"), (np.int64(1), "a numpy array")]:
        observed = _np_bool(value)
        c = compare_predicted({"t": "bool", "v": True}, observed, tol)
        assert not c.ok and c.reason == "kind", value
        c = compare_produced({"t": "bool", "v": True}, observed, T32)
        assert not c.ok and c.reason == "kind" and c.detail == f"expected a bool, got {kind}", value
    for observed in [{"t": "int", "v": 1}, {"t": "str", "v": "True"}, tensor(True, dtype="bool")]:
        assert compare_predicted({"t": "bool", "v": True}, observed, tol).reason == "kind"
        assert compare_produced({"t": "bool", "v": True}, observed, T32).reason == "kind"


def test_a_list_stands_for_a_tuple_only_where_the_caller_allows_it_and_the_feedback_stays_exact():
    tol = Tolerance(2e-3, 1e-6)
    pair = tup({"t": "int", "v": 0}, {"t": "int", "v": 1})
    as_list = {"t": "seq", "kind": "list", "items": [{"t": "int", "v": 0}, {"t": "int", "v": 1}]}
    assert compare_predicted(pair, as_list, tol, list_for_tuple=True).ok
    assert compare_produced(pair, as_list, T32, list_for_tuple=True).ok
    c = compare_predicted(pair, as_list, tol)   # where the tuple is the lesson
    assert not c.ok and c.detail == "expected a tuple of 2 items, got a list of 2 items"
    assert compare_produced(pair, as_list, T32).detail == "expected a tuple of 2 items, got a list of 2 items"
    wrong = {"t": "seq", "kind": "list", "items": [{"t": "int", "v": 1}, {"t": "int", "v": 2}]}
    c = compare_predicted(pair, wrong, tol, list_for_tuple=True)
    assert not c.ok and c.detail == "item 0: 1 instead of 0 (abs diff 1)"
    c = compare_predicted(pair, {"t": "seq", "kind": "list", "items": as_list["items"] * 2}, tol, list_for_tuple=True)
    assert not c.ok and c.reason == "length" and c.detail == "expected a tuple of 2 items, got a list of 4 items"
    # a tuple never stands for an expected list (a misconception's value), and a dict or a tensor is not a pair
    assert not compare_predicted(as_list, pair, tol, list_for_tuple=True).ok
    assert compare_predicted(pair, tensor(0.0, 1.0), tol, list_for_tuple=True).reason == "kind"
