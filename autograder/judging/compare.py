"""compare: pure comparisons of an expected wire Value with an observed one -> Comparison, and the
plain-text display of Values. No torch, no sympy.

May import: stdlib, autograder.wire, autograder.model.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Literal

from autograder.model import Tolerance
from autograder.wire import decode_float, dtype_name

Reason = Literal["match", "kind", "length", "dtype", "shape", "values", "exception", "phrase"]
Value = dict[str, Any]


@dataclass(frozen=True)
class Comparison:
    """The result of one comparison: `ok`, the first `reason` it failed, and a one-line `detail`."""

    ok: bool
    reason: Reason
    detail: str = ""


MATCH = Comparison(True, "match")


def short(text: str, limit: int) -> str:
    """`text` cut at a word boundary to at most about `limit` characters, with "…" when cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return (cut if len(cut) > limit // 2 else text[:limit]) + " …"


def _num(x: Any) -> float:
    """A wire number (bools of a bool tensor included) as a float."""
    return float(x) if isinstance(x, bool) else decode_float(x)


def _fmt(x: Any) -> str:
    """A tensor element as torch prints it ("6." for a whole number)."""
    if isinstance(x, bool):
        return str(x)
    f = decode_float(x)
    if math.isnan(f) or math.isinf(f):
        return str(f)
    if f == int(f) and abs(f) < 1e15:
        return f"{int(f)}."
    return f"{f:.6g}"


def number(x: Any) -> str:
    """A number as Python prints a float, to 6 significant figures ("1.0", "0.567308", "nan")."""
    if isinstance(x, bool):
        return str(x)
    f = decode_float(x)
    text = f"{f:.6g}"
    return text + ".0" if text.lstrip("-").isdigit() else text


def show(v: Value | None) -> str:
    """A short, torch-like rendering of a Value: "None", "tensor(6.)", "(tensor(6.),)", "3.5"."""
    if v is None:
        return "nothing"
    t = v["t"]
    if t == "none":
        return "None"
    if t == "ellipsis":
        return "... (not answered)"
    if t == "undefined":
        return "not defined"
    if t in ("bool", "int"):
        return str(v["v"])
    if t == "float":
        return number(v["v"])
    if t == "complex":
        return f"({_fmt(v['re'])}+{_fmt(v['im'])}j)"
    if t == "str":
        return repr(v["v"])
    if t == "class":
        return v["name"]
    if t == "dtype":
        return f"torch.{v['name']}"
    if t in ("tensor", "array"):
        data = v["data"]
        if not data and v.get("note"):
            body = "<values not readable>"
        elif v["shape"] == [] and data:
            body = _fmt(data[0])
        elif len(v["shape"]) == 2 and v["shape"][0] * v["shape"][1] == len(data) and len(data) <= 16:
            cols = v["shape"][1]
            body = "[" + ", ".join("[" + ", ".join(_fmt(x) for x in data[r * cols:(r + 1) * cols]) + "]"
                                   for r in range(v["shape"][0])) + "]"
        else:
            body = "[" + ", ".join(_fmt(x) for x in data[:8]) + (", …" if len(data) > 8 or v.get("truncated") else "") + "]"
        extras = []
        if t == "tensor":
            if v["dtype"] != "float32":
                extras.append(f"dtype={v['dtype']}")
            if v.get("grad_fn"):
                extras.append(f"grad_fn=<{v['grad_fn']}>")
            elif v.get("requires_grad"):
                extras.append("requires_grad=True")
            if v["shape"] not in ([], [len(data)]):
                extras.insert(0, f"shape={tuple(v['shape'])}")
            return f"tensor({', '.join([body] + extras)})"
        return f"array({body}, dtype={v['dtype']})"
    if t == "seq":
        items = [show(i) for i in v["items"]]
        if v["kind"] == "tuple":
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    if t == "dict":
        return "{" + ", ".join(f"{k!r}: {show(i)}" for k, i in v["items"]) + "}"
    return f"<{v['type']}> {v['repr']}"


def plain(v: Value) -> str:
    """A value as a learner writes it: numbers as Python prints them, a vector or matrix as (nested) lists,
    tuples and lists as they are ("[0.5, 1.0]", "([1.5, -2.0], None)", "None"); anything else as `show`."""
    t = v["t"]
    if t == "array":
        nums = [number(x) for x in v["data"]]
        shape = v.get("shape") or [len(nums)]
        if len(shape) == 2 and shape[0] * shape[1] == len(nums):
            cols = shape[1]
            return "[" + ", ".join("[" + ", ".join(nums[r * cols:(r + 1) * cols]) + "]" for r in range(shape[0])) + "]"
        return "[" + ", ".join(nums) + "]"
    if t == "seq":
        items = [plain(i) for i in v["items"]]
        if v["kind"] == "tuple":
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    return show(v)


def describe(v: Value) -> str:
    """The kind of a Value in words: "a tensor", "a tuple of 2 items", "None"."""
    t = v["t"]
    return {
        "none": "None", "ellipsis": "the placeholder ...", "undefined": "nothing", "bool": "a bool",
        "int": "an int", "float": "a float", "complex": "a complex number", "str": "a string",
        "class": "a class", "array": "a numpy array", "dict": "a dict", "dtype": "a dtype",
    }.get(t) or (
        f"a {v['dtype']} tensor of shape {tuple(v['shape'])}" if t == "tensor" else
        f"a {v['kind']} of more than {len(v['items'])} items" if t == "seq" and v.get("truncated") else
        f"a {v['kind']} of {len(v['items'])} item{'s' if len(v['items']) != 1 else ''}" if t == "seq" else
        f"a {v.get('type', t)} object")


def as_bool(v: Value) -> bool | None:
    """The bool a Value is: a Python bool, or numpy's (`np.True_`, `np.False_`, a 0-d bool array such as
    `np.array(True)` or `np.isclose(a, b)`: the probe sends each as a bool array of shape ()); None for anything
    else (a bool array of more elements, a torch tensor, 1, "True")."""
    if v["t"] == "bool":
        return v["v"]
    if v["t"] == "array" and v.get("dtype") == "bool" and v.get("shape") == [] and len(v.get("data") or ()) == 1 \
            and isinstance(v["data"][0], bool) and not v.get("truncated"):
        return v["data"][0]
    return None


def _same_container(expected: Value, observed: Value, list_for_tuple: bool) -> bool:
    """Is `observed` (a seq) in the container `expected` asks for? With `list_for_tuple`, a list stands for an
    expected tuple (model.container_is_lesson says where it may not)."""
    return observed["kind"] == expected["kind"] or (list_for_tuple and expected["kind"] == "tuple"
                                                    and observed["kind"] == "list")


def _close(observed: Any, expected: Any, tol: Tolerance) -> bool:
    o, e = _num(observed), _num(expected)
    if math.isnan(e) or math.isnan(o):
        return math.isnan(e) and math.isnan(o)
    if math.isinf(e) or math.isinf(o):
        return o == e
    return abs(o - e) <= tol.atol + tol.rtol * abs(e)


def _values(observed: list[Any], expected: list[Any], tol: Tolerance, ints: tuple[bool, bool] = (False, False)
            ) -> Comparison:
    """Compare numbers within `tol`; `ints`: whether the observed and the expected number are Python ints (a single
    number each), shown as such ("397 instead of 256", not "397.0 instead of 256.0")."""
    if len(observed) != len(expected):
        return Comparison(False, "values", f"only {len(observed)} of {len(expected)} elements could be compared")
    bad = [i for i, (o, e) in enumerate(zip(observed, expected, strict=True)) if not _close(o, e, tol)]
    if not bad:
        return MATCH
    i = bad[0]
    o, e = _num(observed[i]), _num(expected[i])
    where = f"element {i}: " if len(expected) > 1 else ""
    diff = f" (abs diff {abs(o - e):.3g})" if math.isfinite(o) and math.isfinite(e) else ""
    count = f"{len(bad)} of {len(expected)} elements differ; " if len(expected) > 1 else ""
    shown_o, shown_e = distinct(o, e)
    shown_o, shown_e = str(int(o)) if ints[0] else shown_o, str(int(e)) if ints[1] else shown_e
    why = ""
    if all(o32 == _float32(e32) for o32, e32 in zip(map(_num, observed), map(_num, expected), strict=True)) and _float32(e) != e:
        why = (" — these are the float32-rounded values: the float64 tensor was made from a float32 one (e.g. "
               "torch.tensor(x).double()), which keeps float32's precision; make it from the Python number, "
               "torch.tensor(x, dtype=torch.float64)")
    return Comparison(False, "values", f"{count}{where}{shown_o} instead of {shown_e}{diff}{why}")


def _float32(x: float) -> float:
    """`x` rounded to the nearest float32 (as torch stores it), back as a Python float."""
    import struct

    if not math.isfinite(x):
        return x
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def distinct(a: float, b: float) -> tuple[str, str]:
    """Two different numbers, each with as many significant digits as it takes to tell them apart (6 at the
    least, 17 at the most): "1.19071" and "1.1907" became "1.190710067749" and "1.190710053749"."""
    for digits in range(6, 18):
        ta, tb = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if ta != tb or digits == 17:
            fix = lambda t: t + ".0" if t.lstrip("-").isdigit() else t
            return fix(ta), fix(tb)
    return number(a), number(b)


def compare_produced(expected: Value, observed: Value, tol: Callable[[str], Tolerance],
                     list_for_tuple: bool = False) -> Comparison:
    """Strict comparison of a produced Value: same kind, sequence type and length, dtype, shape,
    then values within `tol(dtype)`. `expected` comes from the reference run's form filled with
    sympy's numbers. Two leniencies: where a bool is expected, numpy's bool is that bool (`as_bool`); with
    `list_for_tuple`, a list of the same items stands for an expected tuple (at any depth)."""
    et, ot = expected["t"], observed["t"]
    if et == "bool" and as_bool(observed) is not None:
        seen = as_bool(observed)
        return MATCH if seen == expected["v"] else Comparison(False, "values", f"{seen} instead of {expected['v']}")
    if et != ot or (et == "seq" and not _same_container(expected, observed, list_for_tuple)):
        return Comparison(False, "kind", f"expected {describe(expected)}, got {describe(observed)}")
    if et == "none":
        return MATCH
    if et == "seq":
        if len(expected["items"]) != len(observed["items"]) or observed.get("truncated"):
            return Comparison(False, "length", f"expected {describe(expected)}, got {describe(observed)}")
        for i, (e, o) in enumerate(zip(expected["items"], observed["items"], strict=True)):
            c = compare_produced(e, o, tol, list_for_tuple)
            if not c.ok:
                return Comparison(False, c.reason, f"item {i}: {c.detail}")
        return MATCH
    if et == "tensor":
        if expected["dtype"] != observed["dtype"]:
            return Comparison(False, "dtype", f"dtype {observed['dtype']} instead of {expected['dtype']}")
        if expected["shape"] != observed["shape"]:
            return Comparison(False, "shape", f"shape {tuple(observed['shape'])} instead of {tuple(expected['shape'])}")
        if not observed["data"] and expected["data"] and observed.get("note"):
            return Comparison(False, "values", f"its values could not be read ({short(str(observed['note']), 200)})")
        return _values(observed["data"], expected["data"], tol(expected["dtype"]))
    if et == "bool":
        return MATCH if observed["v"] == expected["v"] else Comparison(False, "values", f"{observed['v']} instead of {expected['v']}")
    if et == "dtype":
        return MATCH if observed["name"] == expected["name"] else \
            Comparison(False, "dtype", f"torch.{observed['name']} instead of torch.{expected['name']}")
    if et in ("float", "int"):
        return _values([observed["v"]], [expected["v"]], tol("float64"), ints=(ot == "int", et == "int"))
    if et == "str":   # a fact of the installed torch (its version): the same text, no tolerance
        return MATCH if observed["v"] == expected["v"] else \
            Comparison(False, "values", f"{short(repr(observed['v']), 120)} instead of {short(repr(expected['v']), 120)}")
    return Comparison(False, "kind", f"cannot compare {describe(observed)}")


def _as_number(v: Value) -> Any | None:
    if v["t"] in ("int", "float"):
        return v["v"]
    if v["t"] in ("tensor", "array") and len(v["data"]) == 1 and not v.get("truncated"):
        return v["data"][0]
    return None


def flat_numbers(v: Value) -> list[Any] | None:
    """The numbers of a tensor, an array or a (nested) list or tuple of numbers, row-major; else None."""
    if v["t"] in ("tensor", "array"):
        return None if v.get("truncated") else list(v["data"])
    if v["t"] in ("int", "float"):
        return [v["v"]]
    if v["t"] == "seq":
        out: list[Any] = []
        for item in v["items"]:
            sub = flat_numbers(item)
            if sub is None:
                return None
            out += sub
        return out
    return None


def _nested_shape(v: Value) -> list[int] | None:
    """The shape of nested lists and tuples of numbers ([2, 2] for ((1, 2), (3, 4))); a tensor's or an array's own;
    [] for a number; None when the nesting is ragged or holds something else."""
    if v["t"] in ("int", "float"):
        return []
    if v["t"] in ("tensor", "array"):
        return list(v.get("shape") or [])
    if v["t"] == "seq" and not v.get("truncated"):
        shapes = [_nested_shape(i) for i in v["items"]]
        if shapes and all(s is not None and s == shapes[0] for s in shapes):
            return [len(v["items"]), *shapes[0]]
        return [0] if not shapes else None
    return None


def compare_predicted(expected: Value, observed: Value, tol: Tolerance, list_for_tuple: bool = False) -> Comparison:
    """Lenient comparison of a prediction (a plain literal): any number form (int, float, a
    one-element tensor or array) matches a number, numpy's bool (`np.True_`, `np.array(False)`) a bool, and a
    class name (string or class) matches an exception class; a vector or matrix may be written in any form (nested
    lists or tuples of its shape, a flat list row-major, a numpy array, a tensor), but not wrapped in a one-item
    tuple. A tuple of results must be a tuple unless `list_for_tuple` (then a list of the same items is it too):
    the caller says where which container torch returns is the lesson (model.container_is_lesson)."""
    et = expected["t"]
    if et == "bool":
        seen = as_bool(observed)
        if seen is not None and seen == expected["v"]:
            return MATCH
        hint = " (write True or False without quotes)" if observed["t"] == "str" else ""
        return Comparison(False, "kind" if seen is None else "values",
                          f"expected {expected['v']}, got {show(observed)}{hint}")
    if et == "none":
        if observed["t"] == "none":
            return MATCH
        hint = " (write None without quotes)" if observed["t"] == "str" and observed["v"].strip() == "None" else ""
        return Comparison(False, "kind", f"expected None, got {show(observed)}{hint}")
    if et == "dtype":   # torch.bfloat16, or its name as a string ("bfloat16", "torch.bfloat16"), read against wire's names
        name = observed["name"] if observed["t"] == "dtype" else \
            dtype_name(observed["v"]) if observed["t"] == "str" else None
        if name == expected["name"]:
            return MATCH
        if name is not None:
            return Comparison(False, "dtype", f"torch.{name} instead of torch.{expected['name']}")
        hint = " (write a dtype, torch.float32, or its name as a string)" if observed["t"] == "str" else ""
        return Comparison(False, "kind", f"expected the dtype torch.{expected['name']}, got {show(observed)}{hint}")
    if et == "tensor":   # a value of a known dtype (a misconception that gives the right numbers as another dtype)
        return compare_produced(expected, observed, lambda dtype: tol)
    if et == "class":
        name = observed.get("v") if observed["t"] == "str" else observed.get("name") if observed["t"] == "class" else None
        if isinstance(name, str) and name.strip().split(".")[-1] == expected["name"]:
            return MATCH
        return Comparison(False, "kind", f"expected the class name {expected['name']!r}, got {show(observed)}")
    if et == "seq":
        if observed["t"] != "seq" or not _same_container(expected, observed, list_for_tuple) \
                or observed.get("truncated") or len(observed["items"]) != len(expected["items"]):
            return Comparison(False, "kind" if observed["t"] != "seq" else "length",
                              f"expected {describe(expected)}, got {describe(observed)}")
        for i, (e, o) in enumerate(zip(expected["items"], observed["items"], strict=True)):
            c = compare_predicted(e, o, tol, list_for_tuple)
            if not c.ok:
                return Comparison(False, c.reason, f"item {i}: {c.detail}")
        return MATCH
    if et == "array":
        flat = flat_numbers(observed)
        shape, want = _nested_shape(observed), list(expected.get("shape") or [len(expected["data"])])
        # nested lists or tuples are the array when their shape is its shape (or when they are flat, row-major);
        # (tensor([...]),) or ([...],), a one-item tuple around the vector, is not the vector itself
        wrapped = observed["t"] == "seq" and observed["kind"] == "tuple" and len(observed["items"]) == 1 \
            and observed["items"][0]["t"] in ("seq", "tensor", "array") and want[:1] != [1]
        if flat is None or wrapped:
            return Comparison(False, "kind", f"expected {len(expected['data'])} numbers (a list or a tensor), got "
                                             f"{describe(observed)}")
        if len(flat) != len(expected["data"]):
            return Comparison(False, "length", f"expected {len(expected['data'])} numbers, got {len(flat)}")
        squeeze = lambda dims: [d for d in dims if d != 1]   # [[a, b]] is the row vector [a, b]
        if observed["t"] == "seq" and shape is not None and len(squeeze(shape)) > 1 and squeeze(shape) != squeeze(want):
            return Comparison(False, "shape", f"expected shape {tuple(want)}, got nested lists of shape {tuple(shape)}")
        return _values(flat, expected["data"], tol)
    exp_number, obs_number = _as_number(expected), _as_number(observed)
    if exp_number is None:
        return Comparison(False, "kind", f"cannot compare with {describe(expected)}")
    if obs_number is None:
        hint = ""
        if observed["t"] == "str":
            try:
                float(observed["v"])
                hint = " (write the number without quotes)"
            except ValueError:
                pass
        return Comparison(False, "kind", f"expected a number, got {show(observed)}{hint}")
    return _values([obs_number], [exp_number], tol, ints=(observed["t"] == "int", expected["t"] == "int"))


def compare_exception(expected: dict[str, Any], raised: dict[str, Any] | None, library: str = "",
                      called: bool = False) -> Comparison:
    """Does the raised exception ({"type", "mro", "message", "origin", "statement"} or None) have the
    expected class (or a subclass), contain the key phrase (case-insensitive), and, when `library` is
    given (e.g. "torch"), come from that library rather than from a `raise` in the student's code?
    With `called` (torch raised it from C code, so the innermost Python frame is the caller's), it
    must not come from a `raise` statement."""
    if raised is None:
        return Comparison(False, "exception", f"expected {expected['raises']} to be raised, but nothing was raised")
    if expected["raises"] not in raised.get("mro", [raised["type"]]):
        return Comparison(False, "exception", f"{raised['type']} raised instead of {expected['raises']}: "
                                              f"{short(raised['message'], 160)}")
    if expected["phrase"].lower() not in raised["message"].lower():
        return Comparison(False, "phrase", f"{raised['type']} raised, but its message lacks "
                                           f"{expected['phrase']!r}: {short(raised['message'], 160)}")
    origin = raised.get("origin", "?")
    if called and raised.get("statement", True):
        return Comparison(False, "exception", f"{raised['type']} was raised by a raise statement ({origin}), not by "
                                              f"the operation: let the torch call raise it")
    if library and origin.split(".")[0] != library:
        return Comparison(False, "exception", f"{raised['type']} was raised by your own code ({origin}), not by "
                                              f"{library}: call the {library} function whose error this is")
    return MATCH


def compare_warning(expected: dict[str, Any], warnings: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> Comparison:
    """Did the call emit a warning of the expected class (or a subclass: its "mro" names) whose
    message contains the key phrase (case-insensitive)? `warnings`: [{"category", "message", "mro"}]."""
    cls, phrase = expected["warns"], expected["phrase"].lower()
    of_class = [w for w in warnings if cls in (w.get("mro") or [w["category"]])]
    if any(phrase in w["message"].lower() for w in of_class):
        return MATCH
    if of_class:   # the one nearest to the phrase (most words in common; the first of equals) shows what differs
        words = set(phrase.split())
        nearest = max(of_class, key=lambda w: len(words & set(w["message"].lower().split())))
        return Comparison(False, "phrase", f"{cls} was emitted, but its message lacks {expected['phrase']!r}: "
                                           f"{short(nearest['message'], 160)}")
    seen = ", ".join(sorted({w["category"] for w in warnings})) or "no warning"
    return Comparison(False, "exception", f"expected a {cls}; the call emitted {seen}")
