"""wire: the JSON shapes that cross the process boundary (probe -> grader), versioned and size-capped.

Both sides import this module; nothing here knows an answer.

May import: stdlib.

A *Value* is a tagged JSON object describing one Python object the probe saw:

    {"t": "none"} | {"t": "ellipsis"} | {"t": "undefined"}
    {"t": "bool", "v": true} | {"t": "int", "v": 3} | {"t": "float", "v": 1.5 | "nan" | "inf" | "-inf"}
    {"t": "complex", "re": <float>, "im": <float>} | {"t": "str", "v": "..."} | {"t": "class", "name": "RuntimeError"}
    {"t": "dtype", "name": "bfloat16"}      (a torch.dtype, by its name without "torch.")
    {"t": "tensor", "dtype": "float32", "shape": [2], "data": [<float>, ...], "requires_grad": bool,
         "is_leaf": bool, "grad_fn": "MulBackward0" | null, "truncated": bool}
    {"t": "array", "dtype": "float64", "shape": [2], "data": [...], "truncated": bool}     (numpy)
    {"t": "seq", "kind": "tuple" | "list", "items": [<Value>, ...], "truncated": bool}
    {"t": "dict", "items": [[<str>, <Value>], ...], "truncated": bool}
    {"t": "object", "type": "module.Class", "repr": "..."}

Non-finite floats are strings ("nan", "inf", "-inf") so that every document is strict JSON.
The probe writes one JSON object per line (a *record*); see `RECORD_KINDS`.

A *form* is a Value with its numbers left out: {"t": "float"}, {"t": "int"}, {"t": "none"}, a bool as it is, a tensor or array without "data" and
with "n" (how many numbers it holds), a seq of forms. A "columns" record (release's sweep only: calls with
"targets") holds many calls of one function whose read values have the same forms, as rows of numbers:

    {"k": "columns", "call": "ex1_grad", "forms": {"returned": <form>, "x": {"grad": <form>, "requires_grad": bool,
     "is_leaf": bool}}, "points": [0, 1, ...], "rows": [[<number>, ...], ...]}

A row holds every target's numbers, targets in sorted order, each in its Value's order, as a Value writes them (a
call whose value holds a bool, a string or anything but numbers and None is written as a "call" record).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

# Bound as module globals: inside the probe, a submission may replace builtins.
from builtins import bool, dict, float, int, isinstance, len, list, str  # noqa: E402, A004

SCHEMA = "autograd-lab/observations"
VERSION = 5   # 2: cell records may be "skipped" (a cell an earlier run of the submission ended in); 3: the hello
#               record says whether the run had CUDA ("cuda": bool), a call record how many times the call ran
#               torch.autograd.backward ("backward_calls": int); 4: the hello record may hold "installed": {fact
#               name: Value}, facts of the installed torch read before the submission's code ran (model.INSTALLED_FACTS);
#               5: a Value may be a torch dtype, {"t": "dtype", "name": "bfloat16"}. A "columns" record is written
#               only where the request asks for it (a call with "targets": release's sweep of the solution, whose
#               reader is the same install), so it needs no version of its own: a learner's kernel never writes one,
#               and a course service one release older still reads everything a kernel writes
READS = (4, VERSION)   # versions parse_results reads: 5 only adds a Value tag, so a kernel of 4 (a learner's older
#                        install, talking to a course service) is still read
MAX_FACTS = 64                 # installed facts a hello record may hold

MAX_RESULT_BYTES = 2_000_000   # whole results stream read by the grader (bytes)
MAX_ELEMENTS = 4096            # tensor/array elements encoded (more are truncated)
MAX_ITEMS = 64                 # items of a tuple/list/dict encoded
MAX_STR = 2000                 # characters of a string, repr or message
MAX_DEPTH = 8                  # nesting of sequences
MAX_INT = 2**63                # the probe sends an int at least this large as a float

RECORD_KINDS = ("hello", "cell", "name", "call", "columns", "done")
MAX_COLUMN_POINTS = 4096       # points of one "columns" record
CallStatus = Literal["returned", "raised", "undefined", "timeout", "skipped"]

VALUE_TAGS = frozenset(
    {"none", "ellipsis", "undefined", "bool", "int", "float", "complex", "str", "class",
     "tensor", "array", "seq", "dict", "object", "dtype"}
)

# The dtype names of torch 2.13.0 that a prediction or a spec may name (torch.<name>), and the other names torch gives
# the same dtypes (torch.half is torch.float16). A string a learner writes is read against these, never evaluated.
DTYPE_NAMES = ("float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128", "uint8", "uint16",
               "uint32", "uint64", "int8", "int16", "int32", "int64", "bool", "float8_e4m3fn", "float8_e5m2")
DTYPE_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "cfloat": "complex64",
                 "cdouble": "complex128", "chalf": "complex32", "short": "int16", "int": "int32", "long": "int64"}


def dtype_name(text: str) -> str | None:
    """The dtype a learner's string names ("bfloat16", "torch.bfloat16", " torch.half " -> "bfloat16", "bfloat16",
    "float16"), or None: a name of DTYPE_NAMES or DTYPE_ALIASES, with or without "torch."; nothing else (no
    evaluation, no other spelling)."""
    name = text.strip()
    name = name[len("torch."):] if name.startswith("torch.") else name
    name = DTYPE_ALIASES.get(name, name)
    return name if name in DTYPE_NAMES else None


class WireError(ValueError):
    """A results stream that does not have the fixed shape (forged, truncated or from another version)."""


def encode_float(x: float) -> float | str:
    """Return `x` as a JSON-safe number: NaN and ±inf become the strings "nan", "inf", "-inf"."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def decode_float(v: Any) -> float:
    """Inverse of `encode_float`. Raises WireError for anything but a number or the three strings."""
    if isinstance(v, bool):
        raise WireError(f"expected a float, got a bool: {v!r}")
    if isinstance(v, (int, float)):
        try:
            return float(v)
        except OverflowError:   # an int of thousands of digits: not a number the probe writes
            raise WireError(f"expected a float, got an int of {v.bit_length()} bits") from None
    if v in ("nan", "inf", "-inf"):
        return float(v)
    raise WireError(f"expected a float, got {v!r}")


MAX_CLASS_NAME = 200   # characters of a "class" value's name (the probe's wire.clip(obj.__name__, 200))


def clip(text: str, limit: int = MAX_STR) -> str:
    """Cut `text` to at most `limit` characters, marking the cut."""
    return text if len(text) <= limit else text[: limit - 15] + " …[truncated]"


def _number(v: Any) -> None:
    """A wire number: an int, a finite float, or one of "nan", "inf", "-inf" (a bare NaN or infinity, which
    Python's JSON reader accepts, is not one: it could not be written again)."""
    if isinstance(v, float) and not math.isfinite(v):
        raise WireError("a non-finite number must be written as \"nan\", \"inf\" or \"-inf\"")
    decode_float(v)


def check_value(v: Any, depth: int = 0) -> None:
    """Validate one wire Value (see the module docstring). Raises WireError naming what is wrong."""
    if depth > MAX_DEPTH + 1:
        raise WireError("value nested too deeply")
    if not isinstance(v, dict) or v.get("t") not in VALUE_TAGS:
        raise WireError(f"not a wire value: {str(v)[:80]}")
    t = v["t"]
    if t == "bool" and not isinstance(v.get("v"), bool):
        raise WireError("bool value without a bool")
    if t == "int" and (not isinstance(v.get("v"), int) or isinstance(v.get("v"), bool) or abs(v["v"]) >= MAX_INT):
        raise WireError("int value without an int of at most 64 bits")
    if t == "float":
        _number(v.get("v"))
    if t == "complex":
        _number(v.get("re")), _number(v.get("im"))
    if t in ("str",) and not isinstance(v.get("v"), str):
        raise WireError("str value without a string")
    if t == "class" and not isinstance(v.get("name"), str):
        raise WireError("class value without a name")
    if t == "class" and len(v["name"]) > MAX_CLASS_NAME:   # the probe clips a class's name to this
        raise WireError(f"class value with a name of {len(v['name'])} characters (at most {MAX_CLASS_NAME})")
    if t == "dtype" and not (isinstance(v.get("name"), str) and 0 < len(v["name"]) <= 40
                             and v["name"].replace("_", "").isalnum() and v["name"].isascii()):
        raise WireError("dtype value without a dtype name")
    if t in ("tensor", "array"):
        shape, data = v.get("shape"), v.get("data")
        if not isinstance(v.get("dtype"), str) or not isinstance(shape, list) or not isinstance(data, list):
            raise WireError(f"{t} value without dtype, shape and data")
        if not all(isinstance(n, int) and n >= 0 for n in shape):
            raise WireError(f"{t} value with a bad shape")
        for x in data:
            if not isinstance(x, bool):
                _number(x)
    if t == "seq":
        if v.get("kind") not in ("tuple", "list") or not isinstance(v.get("items"), list):
            raise WireError("seq value without kind and items")
        for item in v["items"]:
            check_value(item, depth + 1)
    if t == "dict":
        if not isinstance(v.get("items"), list):
            raise WireError("dict value without items")
        for pair in v["items"]:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                raise WireError("dict item is not a [key, value] pair")
            check_value(pair[1], depth + 1)
    if t == "object" and not (isinstance(v.get("type"), str) and isinstance(v.get("repr"), str)):
        raise WireError("object value without type and repr")


@dataclass(frozen=True)
class CellResult:
    """How one code cell of the submission ran. `index` counts code cells from 0."""

    index: int
    status: Literal["ok", "error", "timeout", "skipped"]
    ename: str = ""
    evalue: str = ""


@dataclass(frozen=True)
class CallResult:
    """One call of a produce function at one point.

    `returned` is a wire Value (status "returned"); `exception` is {"type", "mro", "message"}
    (status "raised"); `tensors` maps each tensor argument's name to {"grad": Value,
    "requires_grad": bool, "is_leaf": bool} observed after the call; `warnings` lists
    {"category", "message"}; `seconds` is the call's wall time; `backward_calls` how many times it ran
    torch.autograd.backward (Tensor.backward() included; None: not reported).
    """

    call: str
    point: int
    status: CallStatus
    returned: dict[str, Any] | None = None
    exception: dict[str, Any] | None = None
    tensors: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: tuple[dict[str, str], ...] = ()
    seconds: float = 0.0
    backward_calls: int | None = None


@dataclass(frozen=True)
class Observations:
    """Everything one probe run reported. `complete` is False when the stream has no "done" record."""

    torch_version: str
    cells: tuple[CellResult, ...]
    names: dict[str, dict[str, Any]]
    calls: dict[tuple[str, int], CallResult]
    complete: bool
    cell_count: int = 0
    duplicated: frozenset[str | tuple[str, int]] = frozenset()
    rejected: int = 0
    timing: dict[str, float] = field(default_factory=dict)   # a profiled run's own timings (untrusted; profile only)
    cuda: bool | None = None   # torch.cuda.is_available() in the run (None: not reported)
    installed: dict[str, dict[str, Any]] = field(default_factory=dict)   # fact name -> Value, read before student code
    columns: tuple[Columns, ...] = ()   # release's sweep: calls whose values came as rows of numbers (Columns)


def _check_exception(e: Any) -> dict[str, Any]:
    if not (isinstance(e, dict) and isinstance(e.get("type"), str) and isinstance(e.get("message"), str)
            and isinstance(e.get("mro", []), list)):
        raise WireError("exception without type and message")
    return {"type": clip(e["type"], 200), "mro": [str(m)[:200] for m in e.get("mro", [])][:20],
            "message": clip(e["message"]), "origin": clip(str(e.get("origin", "?")), 200),
            "statement": e.get("statement") is not False}


def _cell(rec: dict[str, Any], count: int) -> CellResult:
    i = rec.get("i")
    if rec.get("status") not in ("ok", "error", "timeout", "skipped") or not isinstance(i, int) or isinstance(i, bool) \
            or not 0 <= i < count:
        raise WireError("bad cell record")
    return CellResult(rec["i"], rec["status"], clip(str(rec.get("ename", "")), 200), clip(str(rec.get("evalue", ""))))


def _call(rec: dict[str, Any]) -> CallResult:
    if rec.get("status") not in ("returned", "raised", "undefined", "timeout", "skipped") \
            or not isinstance(rec.get("call"), str) or not isinstance(rec.get("point"), int):
        raise WireError("bad call record")
    returned = rec.get("returned")
    if rec["status"] == "returned":
        check_value(returned)
    exception = _check_exception(rec.get("exception")) if rec["status"] == "raised" else None
    tensors: dict[str, dict[str, Any]] = {}
    raw_tensors = rec.get("tensors") or {}
    if not isinstance(raw_tensors, dict):
        raise WireError("bad tensor states")
    for name, st in raw_tensors.items():
        if not (isinstance(st, dict) and isinstance(st.get("requires_grad"), bool) and isinstance(st.get("is_leaf"), bool)):
            raise WireError("bad tensor state")
        check_value(st.get("grad"))
        tensors[str(name)] = {"grad": st["grad"], "requires_grad": st["requires_grad"], "is_leaf": st["is_leaf"]}
    raw_warnings = rec.get("warnings") or []
    warns = tuple({"category": clip(str(w.get("category", "")), 200), "message": clip(str(w.get("message", ""))),
                   "mro": [clip(str(c), 200) for c in w.get("mro", [])[:20]] if isinstance(w.get("mro"), list) else []}
                  for w in (raw_warnings if isinstance(raw_warnings, list) else [])[:20] if isinstance(w, dict))
    seconds = rec.get("seconds", 0.0)
    runs = rec.get("backward_calls")
    return CallResult(rec["call"], rec["point"], rec["status"], returned if rec["status"] == "returned" else None,
                      exception, tensors, warns, float(seconds) if isinstance(seconds, (int, float)) else 0.0,
                      runs if isinstance(runs, int) and not isinstance(runs, bool) and runs >= 0 else None)


def form_width(form: Any, depth: int = 0) -> int:
    """How many numbers a form holds (see the module docstring). Raises WireError for anything but a form."""
    if depth > MAX_DEPTH + 1 or not isinstance(form, dict):
        raise WireError("not a form")
    t = form.get("t")
    if t in ("float", "int") and "v" not in form:
        return 1
    if t == "none" and len(form) == 1:
        return 0
    if t == "bool" and isinstance(form.get("v"), bool) and len(form) == 2:   # its value is part of the form
        return 0
    if t in ("tensor", "array") and "data" not in form and isinstance(form.get("n"), int) \
            and not isinstance(form["n"], bool) and 0 <= form["n"] <= MAX_ELEMENTS:
        return form["n"]
    if t == "seq" and isinstance(form.get("items"), list) and len(form["items"]) <= MAX_ITEMS:
        return sum(form_width(i, depth + 1) for i in form["items"])
    raise WireError(f"not a form: {str(form)[:80]}")


def fill(form: dict[str, Any], numbers: list[Any], at: int = 0) -> tuple[dict[str, Any], int]:
    """The Value of `form` with the numbers from `numbers[at:]`, and where the next form's numbers start."""
    t = form["t"]
    if t in ("none", "bool"):
        return dict(form), at
    if t in ("float", "int"):
        return {**form, "v": numbers[at]}, at + 1
    if t in ("tensor", "array"):
        n = form["n"]
        value = {k: v for k, v in form.items() if k != "n"}
        value["data"] = list(numbers[at:at + n])
        return value, at + n
    items = []
    for item in form["items"]:
        v, at = fill(item, numbers, at)
        items.append(v)
    return {**form, "items": items}, at


@dataclass(frozen=True)
class Columns:
    """Calls of one produce function at many points (release's sweep) whose read values have the same forms:
    `forms` maps each target ("returned", or a tensor argument's name: {"grad": form, "requires_grad", "is_leaf"}) to
    its form; `rows[i]` holds the numbers of every target (sorted order) of the call at `points[i]`."""

    call: str
    forms: dict[str, dict[str, Any]]
    points: tuple[int, ...]
    rows: tuple[list[float | int], ...]

    def offsets(self) -> dict[str, tuple[int, int]]:
        """target -> (first, end) of its numbers in a row."""
        out, at = {}, 0
        for target in sorted(self.forms):
            f = self.forms[target]
            n = form_width(f if target == "returned" else f["grad"])
            out[target], at = (at, at + n), at + n
        return out

    def record(self, i: int) -> CallResult:
        """The call record of `points[i]`, as a "call" record would have given it."""
        row, returned, tensors = self.rows[i], None, {}
        for target, (first, _) in self.offsets().items():
            f = self.forms[target]
            if target == "returned":
                returned = fill(f, row, first)[0]
            else:
                tensors[target] = {**f, "grad": fill(f["grad"], row, first)[0]}
        return CallResult(self.call, self.points[i], "returned",
                          returned if returned is not None else {"t": "object", "type": "?", "repr": "<not read>"},
                          tensors=tensors)


_NONFINITE = frozenset({"nan", "inf", "-inf"})


def _columns(rec: dict[str, Any]) -> Columns:
    call, forms, points, rows = rec.get("call"), rec.get("forms"), rec.get("points"), rec.get("rows")
    if not (isinstance(call, str) and isinstance(forms, dict) and forms and isinstance(points, list)
            and isinstance(rows, list) and len(points) == len(rows) <= MAX_COLUMN_POINTS):
        raise WireError("bad columns record")
    width = 0
    for target, f in forms.items():
        if not isinstance(target, str):
            raise WireError("bad columns target")
        if target != "returned" and not (isinstance(f, dict) and isinstance(f.get("requires_grad"), bool)
                                         and isinstance(f.get("is_leaf"), bool) and set(f) == {"grad", "requires_grad",
                                                                                                "is_leaf"}):
            raise WireError("bad tensor state form")
        n = form_width(f if target == "returned" else f["grad"])
        check_value(fill(f if target == "returned" else f["grad"], [0] * n)[0])
        width += n
    for p in points:
        if not isinstance(p, int) or isinstance(p, bool) or p < 0:
            raise WireError("bad columns point")
    for row in rows:
        if not isinstance(row, list) or len(row) != width:
            raise WireError("bad columns row")
        for x in row:
            t = type(x)
            if not ((t is float and math.isfinite(x)) or (t is int and abs(x) < 2**53) or (t is str and x in _NONFINITE)):
                raise WireError("a columns row holds numbers only: floats (\"nan\", \"inf\", \"-inf\" as strings) "
                                "and ints below 2**53")
    return Columns(call, forms, tuple(points), tuple(rows))


_DECODE = json.JSONDecoder().decode   # one decoder for every line (json.loads makes its own and sniffs the encoding)


def parse_results(data: bytes, limit: int = MAX_RESULT_BYTES) -> Observations:
    """Parse the probe's JSON-lines stream into Observations.

    The first line must be the probe's hello (the submission's code only runs after it). Any later
    line that is not a well-formed record was not written by the probe: it is skipped and counted
    in `rejected`. A name or call reported twice was tampered with: its key goes into
    `duplicated` (the probe reports each once), and the grader must not trust it.

    Args:
        data: the raw bytes from the results pipe (at most `limit` are read: MAX_RESULT_BYTES but for release's
            sweep of the instructor's solution, authoring.sweep).
    Raises:
        WireError: no hello record first, or another schema or version.
    """
    lines = data[:limit].split(b"\n")
    try:
        hello = json.loads(lines[0])
    except ValueError:
        hello = None
    if not isinstance(hello, dict) or hello.get("k") != "hello":
        raise WireError("results do not start with a hello record")
    if hello.get("schema") != SCHEMA or hello.get("v") not in READS or isinstance(hello.get("v"), bool):
        raise WireError(f"results schema {hello.get('schema')!r} v{hello.get('v')!r}, expected {SCHEMA} v{VERSION}")
    count = hello.get("cells", 0)
    count = count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else 0
    cells: list[CellResult] = []
    names: dict[str, dict[str, Any]] = {}
    calls: dict[tuple[str, int], CallResult] = {}
    duplicated: set[str | tuple[str, int]] = set()
    rejected = 0
    complete = False
    timing: dict[str, float] = {}
    columns: list[Columns] = []
    for i, raw in enumerate(lines[1:], start=2):
        if not raw.strip():
            continue
        try:
            rec = _DECODE(raw.decode("utf-8"))   # the probe writes UTF-8 (ASCII, in fact): nothing else is a record
            if not isinstance(rec, dict) or rec.get("k") not in RECORD_KINDS[1:]:
                raise WireError("not a record")
            if rec["k"] == "cell":
                cell = _cell(rec, count)
                if cell.index != len(cells):   # the probe reports cells once each, in order
                    raise WireError("cell record out of order")
                cells.append(cell)
            elif rec["k"] == "name":
                if not isinstance(rec.get("name"), str):
                    raise WireError("bad name record")
                check_value(rec.get("value"))
                if rec["name"] in names:
                    duplicated.add(rec["name"])
                names[rec["name"]] = rec["value"]
            elif rec["k"] == "call":
                call = _call(rec)
                if (call.call, call.point) in calls:
                    duplicated.add((call.call, call.point))
                calls[(call.call, call.point)] = call
            elif rec["k"] == "columns":
                columns.append(_columns(rec))
            else:
                complete = True
                raw_timing = rec.get("timing")
                if isinstance(raw_timing, dict):
                    timing = {str(k)[:40]: float(v) for k, v in list(raw_timing.items())[:20]
                              if isinstance(v, (int, float)) and not isinstance(v, bool)}
        except Exception:   # anything malformed (WireError, OverflowError, ...): not the probe's line
            if i < len(lines):   # a last line cut off by a kill is not counted against anyone
                rejected += 1
    cuda = hello.get("cuda")
    return Observations(str(hello.get("torch", "unknown"))[:40], tuple(cells), names, calls, complete, count,
                        frozenset(duplicated), rejected, timing, cuda if isinstance(cuda, bool) else None,
                        _installed(hello.get("installed")), tuple(columns))


def _installed(raw: Any) -> dict[str, dict[str, Any]]:
    """The hello record's installed facts ({name: Value}); anything of another shape is no fact at all."""
    if not isinstance(raw, dict):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for name, value in list(raw.items())[:MAX_FACTS]:
        try:
            check_value(value)
        except WireError:
            continue
        if isinstance(name, str) and value["t"] in ("str", "bool", "none"):
            out[clip(name, 200)] = {"t": "str", "v": clip(value["v"])} if value["t"] == "str" else value
    return out
