"""Does the results stream keep its fixed shape, and refuse anything else?"""
import json

import pytest

from autograder import wire

HELLO = {"k": "hello", "schema": wire.SCHEMA, "v": wire.VERSION, "torch": "2.13.0", "cells": 2}


def stream(*records):
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def test_round_trip_with_non_finite_floats_and_a_tensor():
    value = {"t": "tensor", "dtype": "float32", "shape": [3], "data": [1.0, "nan", "-inf"], "requires_grad": False,
             "is_leaf": True, "grad_fn": None, "truncated": False}
    obs = wire.parse_results(stream(HELLO, {"k": "name", "name": "p", "value": value}, {"k": "done"}))
    assert obs.complete and obs.torch_version == "2.13.0"
    assert obs.names["p"]["data"][1] == "nan"
    assert wire.decode_float("-inf") == float("-inf")


def test_a_stream_cut_by_a_kill_keeps_the_records_before_the_cut():
    data = stream(HELLO, {"k": "cell", "i": 0, "status": "ok"}) + b'{"k": "call", "call": "ex1", "po'
    obs = wire.parse_results(data)
    assert not obs.complete and len(obs.cells) == 1


@pytest.mark.parametrize("data, phrase", [
    (b"", "hello"),
    (stream({**HELLO, "v": 99}), "expected autograd-lab"),
    (stream({**HELLO, "v": 3}), "expected autograd-lab"),
    (stream({**HELLO, "v": True}), "expected autograd-lab"),
    (b'garbage\n' + stream(HELLO), "hello"),
])
def test_a_stream_without_the_probes_hello_is_refused(data, phrase):
    with pytest.raises(wire.WireError, match=phrase):
        wire.parse_results(data)


def test_lines_the_probe_did_not_write_are_skipped_and_counted():
    bad_value = {"k": "name", "name": "p", "value": {"t": "evil"}}
    bad_float = {"k": "call", "call": "f", "point": 0, "status": "returned", "returned": {"t": "float", "v": "1"}}
    good = {"k": "name", "name": "q", "value": {"t": "int", "v": 1}}
    obs = wire.parse_results(stream(HELLO, bad_value, bad_float, good) + b"garbage\n" + stream({"k": "done"}))
    assert obs.rejected == 3 and obs.names == {"q": {"t": "int", "v": 1}} and obs.complete


def test_a_result_reported_twice_is_marked_as_tampered():
    call = {"k": "call", "call": "ex1", "point": 0, "status": "returned", "returned": {"t": "none"}}
    name = {"k": "name", "name": "p", "value": {"t": "int", "v": 1}}
    obs = wire.parse_results(stream(HELLO, call, name, call, name, {"k": "done"}))
    assert obs.duplicated == {("ex1", 0), "p"}


def test_forged_lines_that_would_break_the_grader_are_only_rejected():
    huge = {"k": "name", "name": "zz", "value": {"t": "float", "v": int("1" + "0" * 400)}}
    negative_cell = {"k": "cell", "i": -1000, "status": "error"}
    repeated_cell = {"k": "cell", "i": 0, "status": "ok"}
    big_seconds = {"k": "call", "call": "f", "point": 0, "status": "undefined", "seconds": int("9" * 400)}
    obs = wire.parse_results(stream(HELLO, repeated_cell, huge, negative_cell, repeated_cell, big_seconds))
    assert obs.rejected == 4 and len(obs.cells) == 1 and obs.names == {} and obs.calls == {}


def test_an_int_too_large_for_a_float_is_rejected_not_passed_on_to_the_comparisons():
    big = 10 ** 400
    as_int = {"k": "name", "name": "p1_grad", "value": {"t": "int", "v": big}}
    just_too_big = {"k": "name", "name": "p2_grad", "value": {"t": "int", "v": 2**63}}
    in_a_tensor = {"k": "name", "name": "p3_grad", "value": {"t": "tensor", "dtype": "float32", "shape": [], "data": [big],
                                                            "requires_grad": False, "is_leaf": True}}
    fine = {"k": "name", "name": "p4", "value": {"t": "int", "v": 2**63 - 1}}
    obs = wire.parse_results(stream(HELLO, as_int, just_too_big, in_a_tensor, fine))
    assert obs.rejected == 3 and list(obs.names) == ["p4"]
    with pytest.raises(wire.WireError, match="an int of 1329 bits"):
        wire.decode_float(big)


def test_a_bare_nan_or_infinity_is_not_a_wire_number():
    import pytest

    from autograder.wire import WireError, check_value

    for v in (float("nan"), float("inf")):
        with pytest.raises(WireError, match="must be written as"):
            check_value({"t": "float", "v": v})
        with pytest.raises(WireError):
            check_value({"t": "tensor", "dtype": "float32", "shape": [1], "data": [v]})
    check_value({"t": "float", "v": "nan"})


def test_a_dtype_value_is_read_and_a_stream_of_version_4_still_is():
    """Version 5 adds {"t": "dtype", "name": ...} (issue 44); a v4 stream (a learner's older install sending its
    kernel's results to a course service) holds nothing a v5 reader lacks, so it is read as it was."""
    dtype = {"t": "dtype", "name": "bfloat16"}
    obs = wire.parse_results(stream(HELLO, {"k": "name", "name": "p", "value": dtype}, {"k": "done"}))
    assert obs.names["p"] == dtype and obs.rejected == 0
    old = wire.parse_results(stream({**HELLO, "v": 4}, {"k": "name", "name": "p", "value": {"t": "int", "v": 1}},
                                    {"k": "done"}))
    assert old.complete and old.names["p"] == {"t": "int", "v": 1}
    bad = wire.parse_results(stream(HELLO, {"k": "name", "name": "p", "value": {"t": "dtype", "name": "a b"}}))
    assert bad.rejected == 1 and "p" not in bad.names   # not a dtype name: not a line the probe wrote


def test_a_columns_record_gives_each_point_the_call_record_a_call_record_would():
    """Release's sweep (a request's calls with "targets"): many calls of one function whose values share a form, as
    rows of numbers; each row filled into its form is the Value a "call" record would have held."""
    tensor = {"t": "tensor", "dtype": "float32", "shape": [2], "requires_grad": False, "is_leaf": True,
              "grad_fn": None, "truncated": False, "n": 2}
    forms = {"returned": {"t": "seq", "kind": "tuple", "items": [{"t": "float"}, {"t": "none"}, {"t": "bool", "v": True}],
                          "truncated": False},
             "x": {"grad": tensor, "requires_grad": True, "is_leaf": True}}
    rec = {"k": "columns", "call": "f", "forms": forms, "points": [0, 3], "rows": [[1.5, 2.0, 3.0], [-1, 0.25, "-inf"]]}
    obs = wire.parse_results(stream(HELLO, rec, {"k": "done"}))
    (cols,) = obs.columns
    assert cols.points == (0, 3) and cols.offsets() == {"returned": (0, 1), "x": (1, 3)}
    second = cols.record(1)
    assert second.call == "f" and second.point == 3 and second.status == "returned"
    assert second.returned == {"t": "seq", "kind": "tuple", "items": [{"t": "float", "v": -1}, {"t": "none"},
                                                                      {"t": "bool", "v": True}], "truncated": False}
    assert second.tensors["x"]["grad"]["data"] == [0.25, "-inf"] and second.tensors["x"]["requires_grad"] is True
    assert "n" not in second.tensors["x"]["grad"]


@pytest.mark.parametrize("change, why", [
    ({"rows": [[1.5, 2.0, 3.0], [float("nan"), 0.25, 7.0]]}, "a NaN written bare (a Value writes \"nan\")"),
    ({"rows": [[1.5, 2.0, 3.0], [True, 0.25, 7.0]]}, "a bool"),
    ({"rows": [[1.5, 2.0, 3.0], [0.25, 7.0]]}, "a row of another width"),
    ({"points": [0]}, "fewer points than rows"),
    ({"forms": {"returned": {"t": "float", "v": 1.0}}}, "a Value, not a form"),
    ({"forms": {"x": {"grad": {"t": "float"}}}}, "a tensor state form without its flags"),
])
def test_a_malformed_columns_record_is_rejected_not_read(change, why):
    rec = {"k": "columns", "call": "f", "forms": {"returned": {"t": "float"}, "x": {"grad": {"t": "tensor",
           "dtype": "float32", "shape": [2], "requires_grad": False, "is_leaf": True, "grad_fn": None,
           "truncated": False, "n": 2}, "requires_grad": True, "is_leaf": True}}, "points": [0, 3],
           "rows": [[1.5, 2.0, 3.0], [-1, 0.25, 7.0]]}
    obs = wire.parse_results(stream(HELLO, {**rec, **change}, {"k": "done"}))
    assert obs.columns == () and obs.rejected == 1, why
