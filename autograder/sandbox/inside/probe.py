"""probe: runs INSIDE the untrusted process. Runs a submission's cells, calls its produce functions, and
reports what it saw as wire records: nothing here knows an expected value.

The sandbox's warm worker (`autograder.sandbox.inside.worker`) calls `prepare()` once (imports torch and IPython, makes
the shell), then `run(request, fd, shell)` in each fresh child it forks, after it has given up root;
records go to the pipe `fd`. The in-notebook self-check (`autograder.student.lab`) reuses `observe_calls` and
`observe_name` in the kernel.

May import: stdlib, torch, IPython, traitlets, matplotlib (only for a `%matplotlib` line), autograder.wire,
autograder.model (nest: a tensor argument's values), autograder.sandbox.inside.installed.
"""
from __future__ import annotations

import dis
import hashlib
import json
import math
import operator
import os
import random
import re
import signal
import sys
import threading
import time
import warnings
from typing import Any, Callable, Iterator

from autograder import wire
from autograder.model import nest
from autograder.sandbox.inside import installed   # imported once in the warm worker, before it forks

# Bound here, as module globals, so that a submission that replaces builtins (builtins.float = ...)
# does not change how the probe reads its values.
from builtins import (BaseException, Exception, TypeError, abs, bool, callable, complex, dict,  # noqa: E402, A004
                      float, getattr, hasattr, int, isinstance, len, list, range, repr, round, str, tuple, type)

_dumps = json.dumps          # kept before student code runs, which may replace json.dumps
_monotonic = time.monotonic
_process_time = time.process_time
_CALL_CPU = [0.0]            # CPU seconds spent inside produce functions (benchmarks/batch.py --profile)
_getpid = os.getpid
_exit = os._exit
_write = os.write
_is = operator.is_
_isfinite = math.isfinite
# The alarm's functions too: a submission that replaces signal.setitimer cannot disarm the probe's alarms
# (one that calls the real ones, or blocks or ignores the signal, is stopped by the worker's step limit).
_signal, _setitimer, _sigmask = signal.signal, signal.setitimer, signal.pthread_sigmask
_SIGALRM, _ITIMER_REAL, _SIG_UNBLOCK = signal.SIGALRM, signal.ITIMER_REAL, signal.SIG_UNBLOCK


class ProbeTimeout(BaseException):
    """Raised in the student's code when a cell or a call runs past its time limit."""


_ARMED = [0]   # how many _Deadline blocks are open: an alarm outside them does nothing
_OBJECTS: dict[str, Any] = {}   # dotted name -> the object of torch a produce call is given (installed.resolve)


def cuda_available() -> bool:
    """torch.cuda.is_available() for this run, asked before any of the submission's code runs (a CUDA build on a
    machine with a GPU: True; torch's CPU build: False): what some checks expect depends on it (model.OnCuda)."""
    import torch

    try:
        return bool(torch.cuda.is_available())
    except Exception:   # a broken driver is no CUDA for the learner's code either
        return False


def installed_facts(observe: list[dict[str, Any]], seed: str | None = None) -> dict[str, dict[str, Any]]:
    """The installed torch's facts a request's checks may expect (autograder.sandbox.inside.installed.read), read
    now, before any of the submission's code runs; the objects its calls pass are resolved now too (`_OBJECTS`;
    `seed`: the request's for a generated function, so that a run again makes the same one)."""
    facts, objects = installed.read(installed.object_names(observe), seed)
    _OBJECTS.update(objects)
    return facts


def _on_alarm(signum: int, frame: Any) -> None:
    if _ARMED[0]:
        raise ProbeTimeout()


class _Deadline:
    """Arm a wall-clock alarm of `seconds` for a `with` block (main thread only). After it first fires it
    keeps firing every INTERVAL seconds until the block ends, so that code which catches the first
    ProbeTimeout (a bare `except:`, IPython formatting a traceback whose message never ends) meets the
    next one. What no alarm can stop (an ignored or blocked signal, C code that holds the interpreter)
    the worker stops from outside (see autograder.sandbox.inside.worker)."""

    INTERVAL = 0.25

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __enter__(self) -> None:
        # Off the main thread (an unusual kernel) there is no alarm: the run's own limit applies.
        self.armed = threading.current_thread() is threading.main_thread()
        if self.armed:
            self.previous = _signal(_SIGALRM, _on_alarm)
            _ARMED[0] += 1
            _sigmask(_SIG_UNBLOCK, {_SIGALRM})   # a block left by earlier code does not hold this alarm back
            _setitimer(_ITIMER_REAL, max(self.seconds, 1e-3), self.INTERVAL)

    def __exit__(self, *exc: object) -> None:
        if self.armed:
            _setitimer(_ITIMER_REAL, 0)
            _ARMED[0] -= 1
            if callable(self.previous) and self.previous is not _on_alarm:   # a handler of the kernel's own
                _signal(_SIGALRM, self.previous)
            # Otherwise _on_alarm stays: an alarm already on its way finds nothing armed and does nothing
            # (the default action would end the process).


def _type_name(obj: Any) -> str:
    t = type(obj)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _safe_repr(obj: Any) -> str:
    try:
        return wire.clip(repr(obj))
    except ProbeTimeout:
        raise
    except BaseException as e:  # a student's __repr__ may raise anything
        return f"<{_type_name(obj)} whose repr raised {type(e).__name__}>"


def encode(obj: Any, depth: int = 0) -> dict[str, Any]:
    """Encode one Python object as a wire Value (see `wire`). Never calls the object's own
    __eq__, __float__ or __bool__: only the base types' methods."""
    import torch

    if obj is None:
        return {"t": "none"}
    if obj is Ellipsis:
        return {"t": "ellipsis"}
    if isinstance(obj, bool):
        return {"t": "bool", "v": bool(int.__int__(obj))}
    if isinstance(obj, int):
        v = int.__int__(obj)
        return {"t": "int", "v": v} if abs(v) < 2**63 else {"t": "float", "v": wire.encode_float(float(v))}
    if isinstance(obj, float):
        return {"t": "float", "v": wire.encode_float(float.__float__(obj))}
    if isinstance(obj, complex):
        c = complex.__complex__(obj)
        return {"t": "complex", "re": wire.encode_float(c.real), "im": wire.encode_float(c.imag)}
    if isinstance(obj, str):
        return {"t": "str", "v": wire.clip(str.__str__(obj))}
    if type(obj) is torch.dtype:   # a C type: neither subclassed nor given another __str__ by a submission
        return {"t": "dtype", "name": wire.clip(str(obj).removeprefix("torch."), 40)}
    if isinstance(obj, type):
        return {"t": "class", "name": wire.clip(obj.__name__, wire.MAX_CLASS_NAME)}
    if isinstance(obj, torch.Tensor):
        return _encode_tensor(obj)
    if type(obj).__module__ == "numpy" and hasattr(obj, "dtype") and hasattr(obj, "shape"):
        try:
            return _encode_array(obj)
        except Exception:
            pass
    if isinstance(obj, (tuple, list)) and depth < wire.MAX_DEPTH:
        items = list(tuple.__iter__(obj) if isinstance(obj, tuple) else list.__iter__(obj))
        return {"t": "seq", "kind": "tuple" if isinstance(obj, tuple) else "list",
                "items": [encode(i, depth + 1) for i in items[: wire.MAX_ITEMS]],
                "truncated": len(items) > wire.MAX_ITEMS}
    if isinstance(obj, dict) and depth < wire.MAX_DEPTH:
        pairs = list(dict.items(obj))
        return {"t": "dict", "items": [[_safe_repr(k) if not isinstance(k, str) else wire.clip(str.__str__(k), 200),
                                        encode(v, depth + 1)] for k, v in pairs[: wire.MAX_ITEMS]],
                "truncated": len(pairs) > wire.MAX_ITEMS}
    return {"t": "object", "type": wire.clip(_type_name(obj), 200), "repr": _safe_repr(obj)}


def _flat_numbers(values: list[Any]) -> list[Any]:
    out = []
    for x in values:
        if isinstance(x, bool):
            out.append(x)
        elif isinstance(x, int):
            out.append(x if abs(x) < 2**53 else float(x))
        else:
            out.append(wire.encode_float(float(x)))
    return out


def _encode_tensor(t: Any) -> dict[str, Any]:
    import torch

    base = torch.Tensor
    shape = [int(n) for n in base.size(t)]
    numel = int(base.numel(t))
    dtype = str(t.dtype).removeprefix("torch.")
    grad_fn = t.grad_fn
    out: dict[str, Any] = {"t": "tensor", "dtype": dtype, "shape": shape, "data": [],
                           "requires_grad": bool(t.requires_grad), "is_leaf": bool(t.is_leaf),
                           "grad_fn": type(grad_fn).__name__ if grad_fn is not None else None,
                           "truncated": numel > wire.MAX_ELEMENTS}
    try:
        flat = base.detach(t).reshape(-1)[: wire.MAX_ELEMENTS]
        if flat.is_complex():
            flat = torch.view_as_real(flat).reshape(-1)
        out["data"] = _flat_numbers(flat.cpu().tolist())
    except Exception as e:  # e.g. a meta tensor or an inference-mode oddity: keep the form, say why
        out["data"] = []
        out["truncated"] = True
        out["note"] = wire.clip(f"{type(e).__name__}: {e}", 200)
    return out


def _encode_array(a: Any) -> dict[str, Any]:
    flat = a.reshape(-1)[: wire.MAX_ELEMENTS]
    if flat.dtype.kind == "c":
        data: list[Any] = []
        for z in flat.tolist():
            data += [z.real, z.imag]
    elif flat.dtype.kind in "biuf":
        data = flat.tolist()
    else:
        raise TypeError("not a numeric array")
    return {"t": "array", "dtype": str(a.dtype), "shape": [int(n) for n in a.shape],
            "data": _flat_numbers(data), "truncated": int(a.size) > wire.MAX_ELEMENTS}


_PLAIN = (type(None), bool, int, float, str)


def _plain(obj: Any) -> bool:
    """Is `obj` of a type whose reading runs none of a submission's code (None, a bool, int, float or str, or a
    short tuple or list of these), so that no alarm is needed to read it? A tensor is not: reading it calls
    methods looked up on torch.Tensor, which a submission can replace (`torch.Tensor.tolist = loop`)."""
    t = type(obj)
    if t in _PLAIN:
        return True
    return (t is tuple or t is list) and len(obj) <= 16 and all(type(i) in _PLAIN for i in obj)


def encode_guarded(obj: Any, timeout: float) -> dict[str, Any]:
    """`encode` under a time limit, never raising: an object whose reading loops or raises
    (a lying __repr__, a tensor subclass, an int too big for a float) becomes an "object" Value
    that says so. A plain value (`_plain`) is read without arming the alarm (20 µs a read)."""
    try:
        if _plain(obj):
            return encode(obj)
        with _Deadline(timeout):
            return encode(obj)
    except ProbeTimeout:
        why = f"reading this value took longer than {timeout:g} s"
    except BaseException as e:
        why = f"reading this value raised {type(e).__name__}"
    return {"t": "object", "type": wire.clip(_type_name(obj), 200), "repr": f"<{why}>"}


def make_args(descs: list[dict[str, Any]]) -> tuple[list[Any], dict[str, Any]]:
    """Build the arguments of one produce call.

    Args:
        descs: [{"name", "tensor": {"value", "dtype", "requires_grad", "grad"}} | {"name", "number"} |
            {"name", "object": "torch.autograd.grad"}] (an object: the one `run` resolved before the submission's
            code ran; LookupError where this torch has none).
    Returns:
        (positional arguments, name -> tensor argument) — the tensors are observed after the call.
    """
    import torch

    args: list[Any] = []
    tensors: dict[str, Any] = {}
    for d in descs:
        if "object" in d:   # an object of torch, resolved before the submission's code ran (it may replace it)
            name = d["object"]
            if name not in _OBJECTS:
                try:
                    _OBJECTS[name] = installed.resolve(name)
                except LookupError:   # this torch has none: the judge says so (no fact was read for it)
                    _OBJECTS[name] = None
            args.append(_OBJECTS[name])
        elif "tensor" in d:
            spec = d["tensor"]
            dtype = getattr(torch, spec.get("dtype", "float32"))
            t = torch.tensor(spec["value"], dtype=dtype, requires_grad=bool(spec["requires_grad"]))
            if spec.get("grad") is not None:
                t.grad = torch.tensor(spec["grad"], dtype=dtype)
            args.append(t)
            tensors[d["name"]] = t
        else:
            args.append(d["number"])
    return args, tensors


def _tensor_state(t: Any, timeout: float) -> dict[str, Any]:
    import torch

    # t is the probe's own leaf; what the student may have put in its .grad is read with care.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            grad = torch.Tensor.grad.__get__(t)
        except BaseException as e:
            return {"grad": {"t": "object", "type": "?", "repr": f"<reading .grad raised {type(e).__name__}>"},
                    "requires_grad": False, "is_leaf": False}
    return {"grad": encode_guarded(grad, timeout), "requires_grad": bool(torch.Tensor.requires_grad.__get__(t)),
            "is_leaf": bool(torch.Tensor.is_leaf.__get__(t))}


def _exception(e: BaseException) -> dict[str, Any]:
    """Class, class names up the MRO, message, and `origin`: the module of the innermost Python frame
    that raised it ("torch.autograd" when torch raised it, "__main__" for the student's own raise)."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    origin = tb.tb_frame.f_globals.get("__name__", "?") if tb is not None else "?"
    statement = False   # raised by a `raise` statement in that frame, rather than by C code it called
    if tb is not None:
        try:
            statement = tb.tb_frame.f_code.co_code[tb.tb_lasti] in _RAISE_OPS
        except (IndexError, AttributeError):
            statement = True
    return {"type": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__],
            "message": wire.clip(_safe_str(e)), "origin": wire.clip(str(origin), 200), "statement": statement}


_RAISE_OPS = {dis.opmap[name] for name in ("RAISE_VARARGS", "RERAISE") if name in dis.opmap}


def _safe_str(e: Any) -> str:
    try:
        return str(e)
    except ProbeTimeout:
        raise
    except BaseException:
        return "<message unavailable>"


_FRAME = re.compile(r'^  File "([^"]*)", line \d+, in ')
# Where a traceback frame's file is the grader's own (Python's start-up, this package) or an installed library's
# (the standard library, site-packages: torch, IPython), rather than the submission's code.
_FOREIGN = ("<frozen", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep,
            *sorted({p + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if len(p) > 1}))


def _own_frames(text: str) -> str:
    """A warning's text with the frames of a traceback in it (anomaly mode's "Traceback of forward call that caused
    the error") kept only where they are the submission's own: the grader's frames and the libraries' go (with
    the source line under each), so that the learner's line is what a clipped message shows, and no path of the
    grading machine is in a report."""
    if 'File "' not in text:
        return text
    out, skipping = [], False
    for line in text.split("\n"):
        m = _FRAME.match(line)
        if m:
            skipping = m.group(1).startswith(_FOREIGN)
        elif not (skipping and line.startswith("    ")):
            skipping = False
        if not skipping:
            out.append(line)
    return "\n".join(out)


def _seed(name: str) -> None:
    """Start torch's and Python's random generators from a seed derived from `name` (a call's own): a call's
    random numbers are the same in every run (a batch, a rerun, the notebook's self-check)."""
    import torch

    seed = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big")
    torch.default_generator.manual_seed(seed)   # (torch.manual_seed also seeds accelerators: 80 µs)
    random.seed(seed)


class _GeneratorsKept:
    """Afterwards torch's and Python's random generators are back where they were before the block: the calls
    in it (each seeded with `_seed`) do not change what later cells draw."""

    def __enter__(self) -> None:
        import torch

        self.saved = (torch.default_generator.get_state(), random.getstate())

    def __exit__(self, *exc: object) -> None:
        import torch

        torch.default_generator.set_state(self.saved[0])
        random.setstate(self.saved[1])


def _count_backward(torch: Any) -> tuple[list[int], Any]:
    """For one call: torch.autograd.backward wrapped to count its calls (Tensor.backward() calls it through the
    module, so it is counted too; a name bound to the original before the call is not), and what it was."""
    kept = torch.autograd.backward
    count = [0]

    def backward(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return kept(*args, **kwargs)

    backward.__wrapped__ = kept
    torch.autograd.backward = backward
    return count, kept


def observe_call(ns: dict[str, Any], call: dict[str, Any], point: int, timeout: float) -> dict[str, Any]:
    """Call `ns[call["function"]]` at `call["points"][point]` and return a "call" record.

    The record holds the return value, or the exception (class, MRO names, message), the state of
    each tensor argument afterwards, the warnings raised (with the "always" filter, so a warning
    is seen even when Python's once-per-location rule would hide it), the wall time in seconds and how many
    times it ran torch.autograd.backward (`_count_backward`: a misconception's evidence).
    """
    rec: dict[str, Any] = {"k": "call", "call": call["call"], "point": point}
    fn = ns.get(call["function"])
    if not callable(fn):
        rec["status"] = "undefined"
        return rec
    args, tensors = make_args(call["points"][point]["args"])
    start = _monotonic()
    import torch

    warn_always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)   # torch's warn-once warnings too, at every call (torch.set_warn_always)
    _seed(f"{call['call']}\0{point}")   # (observe_calls puts the generators back after all its calls)
    backward_calls, kept_backward = _count_backward(torch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            cpu = _process_time()
            with _Deadline(timeout):
                try:
                    result = fn(*args)
                finally:
                    _CALL_CPU[0] += _process_time() - cpu
            rec["status"] = "returned"
        except ProbeTimeout:
            rec["status"] = "timeout"
        except BaseException as e:  # SystemExit and KeyboardInterrupt are a student's fault too
            rec["status"] = "raised"
            try:   # its __str__ is the student's code too
                with _Deadline(timeout):
                    rec["exception"] = _exception(e)
            except BaseException:
                rec["exception"] = {"type": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__],
                                    "message": "<the message could not be read in time>", "origin": "?"}
    torch.autograd.backward = kept_backward
    torch.set_warn_always(warn_always)
    rec["seconds"] = round(_monotonic() - start, 6)
    rec["backward_calls"] = backward_calls[0]
    if rec["status"] == "returned":
        rec["returned"] = encode_guarded(result, timeout)
    rec["tensors"] = {name: _tensor_state(t, timeout) for name, t in tensors.items()}
    rec["warnings"] = []
    if caught:
        try:   # a warning's text is the student's code too
            with _Deadline(timeout):
                rec["warnings"] = [{"category": str(w.category.__name__),
                                    "message": wire.clip(_own_frames(_safe_str(w.message)), 500),
                                    "mro": [str(c.__name__) for c in w.category.__mro__][:20]} for w in caught[:20]]
        except BaseException:
            rec["warnings"] = [{"category": "?", "message": "<warnings could not be read in time>"}]
    return rec


_FLOATS: dict[Any, str] = {}   # torch's floating and integer dtypes -> their names (filled on first use)


def _sig(obj: Any, numbers: list[Any], depth: int = 0) -> tuple[Any, ...] | None:
    """The form of what `encode` would make of `obj` (wire; see `_form_of`) as a tuple, its numbers appended to
    `numbers` as `encode` writes them (a non-finite float as "nan", "inf" or "-inf"; a bool is part of the form and
    holds no number); None where it is anything but None, a bool, a float, an int below 2**53, a floating or
    integer tensor of at most wire.MAX_ELEMENTS numbers, or a tuple (a namedtuple too) or list of at most
    wire.MAX_ITEMS of these (then the call is written as a "call" record). Reads
    what `encode` reads, the same way."""
    import torch

    tp = type(obj)
    if obj is None:
        return ("none",)
    if tp is bool:   # no number: its value is part of the form
        return ("bool", obj)
    if tp is float:
        numbers.append(obj if _isfinite(obj) else wire.encode_float(obj))
        return ("float",)
    if tp is int:
        if -2**53 < obj < 2**53:
            numbers.append(obj)
            return ("int",)
        return None
    if tp is torch.Tensor or tp is torch.nn.Parameter:
        if not _FLOATS:
            _FLOATS.update({torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
                            torch.float64: "float64", torch.int64: "int64", torch.int32: "int32",
                            torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8"})
        dtype = _FLOATS.get(obj.dtype)
        numel = int(torch.Tensor.numel(obj))
        if dtype is None or numel > wire.MAX_ELEMENTS:
            return None
        data = torch.Tensor.detach(obj).reshape(-1).tolist()
        if dtype == "int64":
            if not all(-2**53 < x < 2**53 for x in data):   # as `_flat_numbers` writes larger ones as floats
                return None
        elif not all(map(_isfinite, data)):
            data = [x if _isfinite(x) else wire.encode_float(x) for x in data]
        numbers.extend(data)
        grad_fn = obj.grad_fn
        return ("tensor", dtype, tuple(int(n) for n in torch.Tensor.size(obj)), bool(obj.requires_grad),
                bool(obj.is_leaf), type(grad_fn).__name__ if grad_fn is not None else None, numel)
    if isinstance(obj, (tuple, list)) and depth < wire.MAX_DEPTH:   # a namedtuple too (torch's UnpackedDualTensor)
        items = list(tuple.__iter__(obj) if isinstance(obj, tuple) else list.__iter__(obj))
        if len(items) > wire.MAX_ITEMS:
            return None
        sigs = []
        for item in items:
            s = _sig(item, numbers, depth + 1)
            if s is None:
                return None
            sigs.append(s)
        return ("seq", "tuple" if isinstance(obj, tuple) else "list", tuple(sigs))
    return None


def _form_of(sig: tuple[Any, ...]) -> dict[str, Any]:
    """The wire form (a Value with its numbers left out) of a `_sig` tuple."""
    if sig[0] == "tensor":
        _, dtype, shape, requires_grad, is_leaf, grad_fn, n = sig
        return {"t": "tensor", "dtype": dtype, "shape": list(shape), "requires_grad": requires_grad,
                "is_leaf": is_leaf, "grad_fn": grad_fn, "truncated": False, "n": n}
    if sig[0] == "seq":
        return {"t": "seq", "kind": sig[1], "items": [_form_of(i) for i in sig[2]], "truncated": False}
    if sig[0] == "bool":
        return {"t": "bool", "v": sig[1]}
    return {"t": sig[0]}


def _read_sig(result: Any, tensors: dict[str, Any], targets: list[str], numbers: list[Any]) -> tuple[Any, ...] | None:
    """The `_sig` of every target of a lean call (sorted: "returned", or a tensor argument whose .grad, requires_grad
    and is_leaf are read), its numbers appended to `numbers` in that order; None where one has no form."""
    parts = []
    for target in targets:
        if target == "returned":
            s = _sig(result, numbers)
        elif target in tensors:
            t = tensors[target]
            g = _sig(t.grad, numbers)
            s = None if g is None else ("state", g, bool(t.requires_grad), bool(t.is_leaf))
        else:
            continue
        if s is None:
            return None
        parts.append((target, s))
    return tuple(parts)


def _columns_record(call: str, sig: tuple[Any, ...], points: list[int], rows: list[list[Any]]) -> dict[str, Any]:
    forms = {target: (_form_of(s) if s[0] != "state" else {"grad": _form_of(s[1]), "requires_grad": s[2],
                                                            "is_leaf": s[3]}) for target, s in sig}
    return {"k": "columns", "call": call, "forms": forms, "points": points, "rows": rows}


class _Handler:
    """The alarm's handler, installed once around many `_Alarm`s (with SIGALRM unblocked), and what was there before
    put back afterwards."""

    def __enter__(self) -> None:
        self.main = threading.current_thread() is threading.main_thread()
        if self.main:
            self.previous = _signal(_SIGALRM, _on_alarm)
            _sigmask(_SIG_UNBLOCK, {_SIGALRM})

    def __exit__(self, *exc: object) -> None:
        if self.main and callable(self.previous) and self.previous is not _on_alarm:
            _signal(_SIGALRM, self.previous)


class _Alarm(_Deadline):
    """`_Deadline` inside a `_Handler` (release's lean calls): only the timer is set and cleared, a few µs where
    installing the handler each time costs tens."""

    def __enter__(self) -> None:
        self.armed = threading.current_thread() is threading.main_thread()
        if self.armed:
            _ARMED[0] += 1
            _setitimer(_ITIMER_REAL, max(self.seconds, 1e-3), self.INTERVAL)

    def __exit__(self, *exc: object) -> None:
        if self.armed:
            _setitimer(_ITIMER_REAL, 0)
            _ARMED[0] -= 1


BEAT_GAP = 0.1   # seconds: a lean call beats the worker at most this often, with this much more than its limit


def _point_args(call: dict[str, Any]) -> tuple[int, Callable[[int], list[dict[str, Any]]]]:
    """How many points a lean call has, and each point's argument descriptions (`make_args`'s): from its "points", or
    from its "columns" (release's sweep, which sends each parameter's values as one column instead of a description
    per point): {"n": points, "values": {parameter: [its value at each point]}, "args": [per argument {"name",
    "params", "shape", "dtype", "requires_grad"} (a tensor of parameters), {"name", "param", "tensor": true, "dtype",
    "requires_grad", "grad": parameter or null} (a scalar tensor) or {"name", "param"} (a number)]}; at each point
    the descriptions plan.call_args would write there."""
    columns = call.get("columns")
    if columns is None:
        points = call["points"]
        return len(points), lambda i: points[i]["args"]
    values, template = columns["values"], columns["args"]

    def at(i: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for a in template:
            if "params" in a:
                out.append({"name": a["name"], "tensor": {"value": nest([values[p][i] for p in a["params"]],
                                                                          list(a["shape"])),
                                                            "dtype": a["dtype"], "requires_grad": a["requires_grad"],
                                                            "grad": None}})
            elif a.get("tensor"):
                out.append({"name": a["name"], "tensor": {"value": values[a["param"]][i], "dtype": a["dtype"],
                                                            "requires_grad": a["requires_grad"],
                                                            "grad": values[a["grad"]][i] if a.get("grad") else None}})
            else:
                out.append({"name": a["name"], "number": values[a["param"]][i]})
        return out
    return int(columns["n"]), at


def _lean_calls(ns: dict[str, Any], call: dict[str, Any], timeout: float, before_each: Callable[[], None],
                beat: Callable[[float], None]) -> Iterator[dict[str, Any]]:
    """`observe_calls` for release's sweep of the instructor's solution over its domain (a call with "targets": the
    values its checks read, "returned" or a tensor argument's name): the same arguments and time limit per call, but
    only the targets are read (no warnings, no count of backward calls), and calls whose values have one form come
    back together as "columns" records (`_sig`, wire.Columns); a call that raised, timed out or returned anything
    else comes back as its own "call" record, read with care. Each call's random numbers come from a seed of its
    own (the call's name and the point's index). The worker hears a beat at most every BEAT_GAP seconds (with
    BEAT_GAP more than the call's limit), so that a call costs little more than the function itself."""
    import torch

    name, targets = call["call"], sorted(call["targets"])
    count, args_at = _point_args(call)
    base = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big")
    groups: dict[tuple[Any, ...], tuple[list[int], list[list[Any]]]] = {}
    last_beat = -1.0
    seed = torch.default_generator.manual_seed
    with warnings.catch_warnings(), _Handler():
        warnings.simplefilter("ignore")
        for point in range(count):
            before_each()
            now = _monotonic()
            if now - last_beat >= BEAT_GAP:
                beat(timeout + BEAT_GAP)
                last_beat = now
            rec: dict[str, Any] = {"k": "call", "call": name, "point": point}
            fn = ns.get(call["function"])
            if not callable(fn):
                rec["status"] = "undefined"
                yield rec
                continue
            args, tensors = make_args(args_at(point))
            s = (base + point) & 0xFFFFFFFF
            seed(s)
            random.seed(s)
            numbers: list[Any] = []
            sig = None
            start = _monotonic()
            try:
                with _Alarm(timeout):
                    result = fn(*args)
                    rec["status"] = "returned"
                    rec["seconds"] = round(_monotonic() - start, 6)
                    sig = _read_sig(result, tensors, targets, numbers)
            except ProbeTimeout:
                rec.setdefault("status", "timeout")
            except BaseException as e:
                if "status" not in rec:
                    rec["status"] = "raised"
                    try:
                        with _Deadline(timeout):
                            rec["exception"] = _exception(e)
                    except BaseException:
                        rec["exception"] = {"type": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__],
                                            "message": "<the message could not be read in time>", "origin": "?"}
            if sig is not None:
                group = groups.get(sig)
                if group is None:
                    group = groups[sig] = ([], [])
                group[0].append(point)
                group[1].append(numbers)
                if len(group[0]) >= wire.MAX_COLUMN_POINTS:
                    del groups[sig]
                    yield _columns_record(name, sig, *group)
                continue
            rec.setdefault("seconds", round(_monotonic() - start, 6))
            if rec["status"] == "returned":   # read as observe_call reads it
                rec["returned"] = encode_guarded(result, timeout) if "returned" in targets else \
                    {"t": "object", "type": "?", "repr": "<not read>"}
                rec["tensors"] = {n: _tensor_state(t, timeout) for n, t in tensors.items() if n in targets}
            yield rec
            if rec["status"] == "timeout":   # one timeout is enough: the function's later points are skipped
                for p in range(point + 1, count):
                    yield {"k": "call", "call": name, "point": p, "status": "skipped"}
                break
    for sig, group in groups.items():
        yield _columns_record(name, sig, *group)


def observe_calls(ns: dict[str, Any], calls: list[dict[str, Any]], timeout: float,
                  before_each: Callable[[], None] = lambda: None,
                  beat: Callable[[float], None] = lambda seconds: None) -> Iterator[dict[str, Any]]:
    """Yield a "call" record for every call at every point. After a timeout the function's later
    points are "skipped": one timeout is enough, the limit is not spent again on it. `before_each`
    runs before every call (the probe restores its own module there); `beat` tells the worker the
    step's limit. Each call draws its random numbers from a seed of its own (`_seed`), and afterwards the
    generators are where they were before the first."""
    with _GeneratorsKept():
        for call in calls:
            if "targets" in call:   # release's sweep of the instructor's solution
                yield from _lean_calls(ns, call, timeout, before_each, beat)
                continue
            timed_out = False
            for p in range(len(call["points"])):
                if timed_out:
                    yield {"k": "call", "call": call["call"], "point": p, "status": "skipped"}
                    continue
                before_each()
                beat(timeout)
                rec = observe_call(ns, call, p, timeout)
                timed_out = rec["status"] == "timeout"
                yield rec


def observe_name(ns: dict[str, Any], name: str, timeout: float = 5.0) -> dict[str, Any]:
    """Return a "name" record for a prediction variable ({"t": "undefined"} if it is not defined)."""
    value = encode_guarded(ns[name], timeout) if name in ns else {"t": "undefined"}
    return {"k": "name", "name": name, "value": value}


class _ExerciseState:
    """Around one exercise's calls: afterwards the notebook's top-level names and torch's global modes
    (grad mode, default dtype, anomaly detection, deterministic algorithms, CPU autocast and its dtype) are as they
    were, so that what
    one exercise's calls leave behind reaches neither later cells nor the next exercise. The notebook's
    self-check and the grader both observe through this, so they see the same state."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.ns = ns

    def __enter__(self) -> None:
        import torch

        self.names = dict.copy(self.ns)
        self.modes = (torch.is_grad_enabled(), torch.get_default_dtype(), torch.is_anomaly_enabled(),
                      torch.is_anomaly_check_nan_enabled(), torch.are_deterministic_algorithms_enabled())
        self.autocast = (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"))

    def __exit__(self, *exc: object) -> None:
        import torch

        grad, dtype, anomaly, check_nan, deterministic = self.modes
        try:
            torch.set_grad_enabled(grad)
            torch.set_default_dtype(dtype)
            torch.autograd.set_detect_anomaly(anomaly, check_nan)
            torch.set_autocast_enabled("cpu", self.autocast[0])   # an autocast region entered and never left
            torch.set_autocast_dtype("cpu", self.autocast[1])
            if torch.are_deterministic_algorithms_enabled() != deterministic:   # the setter's first call imports
                torch.use_deterministic_algorithms(deterministic)                # for about 1 s: only when needed
        except Exception:   # a torch patched by the submission: its own problem, not the observation's
            pass
        for name in [k for k in list(dict.keys(self.ns)) if k not in self.names]:
            dict.pop(self.ns, name, None)
        for name, value in self.names.items():
            if dict.get(self.ns, name, _MISSING) is not value:
                dict.__setitem__(self.ns, name, value)


_MISSING = object()


def observe_exercise(ns: dict[str, Any], entry: dict[str, Any], timeout: float,
                     before_each: Callable[[], None] = lambda: None,
                     beat: Callable[[float], None] = lambda seconds: None) -> Iterator[dict[str, Any]]:
    """Observe one exercise in the notebook state `ns` holds now: yield a "name" record for each of its
    prediction variables, then a "call" record for each call of its functions at each point (see
    `observe_calls`), with the state restored afterwards (`_ExerciseState`). `entry`: {"exercise",
    "names", "calls"} (see `plan.observation`)."""
    for name in entry["names"]:
        before_each()
        beat(timeout)
        yield observe_name(ns, name, timeout)
    with _ExerciseState(ns):
        yield from observe_calls(ns, entry["calls"], timeout, before_each, beat)


def _run_cell(shell: Any, i: int, source: str, timeout: float) -> dict[str, Any]:
    """Run one code cell under its alarm and return its "cell" record; the exception's text, the
    submission's code too, is read under an alarm of its own."""
    rec: dict[str, Any] = {"k": "cell", "i": i, "status": "ok"}
    err: BaseException | None = None
    try:
        with _Deadline(timeout):
            result = shell.run_cell(source, store_history=False, silent=True)
        err = result.error_before_exec or result.error_in_exec
    except ProbeTimeout:
        rec.update(status="timeout")
    except BaseException as e:  # SystemExit from the student's code, raised through IPython
        err = e
    if isinstance(err, ProbeTimeout):
        rec.update(status="timeout")
    elif err is not None:
        try:
            with _Deadline(timeout):
                evalue = wire.clip(_safe_str(err), 500)
        except BaseException:
            evalue = "<the message could not be read in time>"
        rec.update(status="error", ename=type(err).__name__, evalue=evalue)
    return rec


_WARMED: set[str] = set()   # the warm-ups this process has done (see warm_up)


def _warm_dynamo() -> None:
    import torch
    from torch.utils.checkpoint import checkpoint

    w = torch.zeros(2, requires_grad=True)
    for opt in (torch.optim.SGD([w], lr=0.1, momentum=0.9), torch.optim.Adam([w])):
        (w * w).sum().backward()
        opt.step()
        opt.zero_grad()
    x, cube = torch.ones(3), (lambda v: v ** 3)
    torch.func.jacrev(cube)(x), torch.func.vjp(cube, x)[1](x)
    torch.func.vmap(torch.func.grad(lambda v: cube(v).sum()))(torch.ones(2, 3))
    checkpoint(lambda v: v ** 2, torch.ones(2, requires_grad=True), use_reentrant=False).sum().backward()


def _warm_forward() -> None:
    import torch

    x, cube = torch.ones(3), (lambda v: v ** 3)
    torch.func.jvp(cube, (x,), (x,)), torch.func.jacfwd(cube)(x), torch.func.hessian(lambda v: cube(v).sum())(x)


def _warm_gradcheck() -> None:
    import torch

    d = torch.ones(2, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(lambda v: v ** 2, d), torch.autograd.gradgradcheck(lambda v: v ** 3, d)


# name -> what it pays for. Measured on torch 2.13.0 (an idle 2-core machine), in a fresh process: an optimizer's
# first step, torch.func's jacrev, grad, vmap and hessian, and checkpoint import torch._dynamo (about 800 modules,
# 1.3-1.5 s); jvp and jacfwd set forward mode up (0.25 s); gradcheck 0.4 s. Several seconds on a busy machine:
# inside a produce call, whose limit is 5 s, that is a timeout that is not the learner's.
WARM_UPS: dict[str, Callable[[], None]] = {"dynamo": _warm_dynamo, "forward": _warm_forward,
                                           "gradcheck": _warm_gradcheck}


def warm_up(names: Any) -> bool:
    """Pay, once per process, torch's first-use costs that `names` (WARM_UPS keys; see plan.warm_ups) stand
    for. Single-threaded, on tensors of its own, warnings silenced; changes no global mode. The sandbox's warm
    worker runs it before it forks a run whose cells need it (every later run inherits it), the notebook's
    self-check before its first observation. Unknown names are ignored. Returns whether it did anything."""
    todo = [n for n in names if n in WARM_UPS and n not in _WARMED]
    if not todo:
        return False
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in todo:
            WARM_UPS[name]()
            _WARMED.add(name)
    return True


def prepare() -> Any:
    """Import torch and IPython and make the (still empty) IPython shell, once, in the sandbox's warm
    worker, before any submission runs; each child forked from the worker gets a pristine copy.
    One intra-op torch thread. (torch's heavier first-use costs are paid when a run needs them: `warm_up`.)
    Returns the shell."""
    import torch
    torch.set_num_threads(1)
    import torch.autograd.functional  # noqa: F401  (what exercises use, imported once for every child)
    import torch.func  # noqa: F401
    import torch.nn  # noqa: F401
    import torch.optim  # noqa: F401
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    x = torch.tensor(1.0, requires_grad=True)   # first backward, grad and tensor repr pay their set-up here
    (x * x).backward()
    torch.autograd.grad(x * x, x)
    repr(x)
    repr(torch.tensor([[1.0, 2.0]], dtype=torch.float64))
    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"
    # A cell's error is read from the exception itself (_run_cell); the traceback IPython prints is never read, so it
    # is printed in one line: its full form took 0.4-2.3 s of a run for an endless recursion's 1,000 frames (and more
    # than the cell's 20 s on a busy CI machine).
    config.InteractiveShell.xmode = "Minimal"
    shell = InteractiveShell.instance(config=config)
    manager = shell.input_transformer_manager
    manager.transform_cell = _without_idle_token_pass(manager)
    shell.should_run_async = _without_idle_async_check(shell.should_run_async)
    shell.register_magic_function(_matplotlib, "line", "matplotlib")
    shell.run_cell("pass", store_history=False, silent=True)
    return shell


def _matplotlib(line: str = "") -> None:
    """`%matplotlib [inline|widget|qt|...]` in the grader: matplotlib's non-interactive backend, Agg, whatever was
    asked (no figure is shown while grading). IPython's own magic asks the shell to enable a GUI event loop, which a
    plain InteractiveShell cannot ("Implement enable_gui in a subclass"), so a cell that starts with the line pasted
    from countless tutorials would raise here and run in Jupyter. Without matplotlib installed it raises what
    Jupyter's does."""
    import matplotlib

    matplotlib.use("agg", force=True)


def _without_idle_async_check(full: Callable[..., bool]) -> Callable[..., bool]:
    """IPython's InteractiveShell.should_run_async, less its check where it can only say no: it compiles the
    whole cell once more to see whether it awaits at the top level, which a cell without the words `await` and
    `async` never does (a compile of every cell, a third of what IPython adds to running one)."""
    def should_run_async(raw_cell: str, *, transformed_cell: Any = None, preprocessing_exc_tuple: Any = None) -> bool:
        if isinstance(transformed_cell, str) and "await" not in transformed_cell and "async" not in transformed_cell:
            return False
        return full(raw_cell, transformed_cell=transformed_cell, preprocessing_exc_tuple=preprocessing_exc_tuple)
    return should_run_async


# What IPython's token transforms look for (IPython.core.inputtransformer2: MagicAssign `= %`, SystemAssign `= !`,
# EscapedCommand `%` `!` `?` `,` `;` `/` at the start of a line, HelpEnd `?` at its end).
_TOKEN_TRIGGERS = re.compile(r"[%!?]|^[ \t]*[,;/]", re.M)


def _without_idle_token_pass(manager: Any) -> Callable[[str], str]:
    """IPython's TransformerManager.transform_cell, less its token pass where that pass can change nothing: a
    cell with none of the token transforms' triggers, before or after IPython's clean-up (which strips
    `>>> ` and `In [1]: ` prompts, leading blank lines and form feeds). The pass tokenizes the whole cell in Python (about
    0.1-0.2 ms a cell, most of what IPython adds to running a short cell); the cleanup and line transforms
    still run. The same text comes out, by construction (tests check it on every example cell)."""
    full = manager.transform_cell

    def transform_cell(cell: str) -> str:
        if _TOKEN_TRIGGERS.search(cell):
            return full(cell)
        lines = (cell if cell.endswith("\n") else cell + "\n").splitlines(keepends=True)
        for transform in manager.cleanup_transforms:
            lines = transform(lines)
        if _TOKEN_TRIGGERS.search("".join(lines)):   # the clean-up uncovered one (a prompt, a form feed stripped)
            return full(cell)
        for transform in manager.line_transforms:
            lines = transform(lines)
        return "".join(lines)
    transform_cell.full = full
    return transform_cell


def _guard(*namespaces: dict[str, Any]) -> Callable[[], None]:
    """Snapshot module namespaces (the probe's, wire's) before the submission runs; the returned
    function puts back anything the submission replaced through sys.modules. (A submission can still
    reach the probe's objects in other ways: it never holds an expected value, so it can only claim
    values it computed itself; see docs/security.md.)"""
    saved = [(ns, dict(ns)) for ns in namespaces]

    def restore() -> None:
        for ns, items in saved:
            # Untouched (the same keys and values, the same objects in the same order: nothing of the submission's
            # is called to find out) is the common case, and costs a few µs; else each name is put back.
            if len(ns) == len(items) and all(map(_is, ns, items)) and all(map(_is, ns.values(), items.values())):
                continue
            for k, v in items.items():
                if ns.get(k) is not v:
                    ns[k] = v
    return restore


def run(request: dict[str, Any], out_fd: int, shell: Any, beat_fd: int = -1) -> None:
    """Run `request` (see `plan.probe_request`) in `shell` and write records to the pipe `out_fd`: hello;
    then, in notebook order, one per code cell ("skipped" for a cell the request says not to run) and,
    after the cell each exercise is observed at, that exercise's records (`observe_exercise`); done. A
    request without "observe" (version 1) observes its "names" and "calls" after the last cell. Before
    each cell and call it writes the step's alarm limit to the worker's pipe `beat_fd`. Ends the process."""
    import torch

    start = _monotonic()
    out = os.fdopen(out_fd, "wb", buffering=0)
    me = _getpid()
    restore = _guard(globals(), vars(wire))

    def emit(rec: dict[str, Any]) -> None:
        if _getpid() != me:   # a process the submission forked has come back into the probe: it says nothing
            _exit(0)
        out.write(_dumps(rec, allow_nan=False).encode() + b"\n")

    def beat(seconds: float) -> None:
        if beat_fd >= 0:
            try:
                _write(beat_fd, b"%.3f\n" % seconds)
            except OSError:
                pass

    cells = request["cells"]
    observe = request.get("observe")
    if observe is None:
        observe = [{"exercise": "", "after": len(cells) - 1, "names": request.get("names", []),
                    "calls": request.get("calls", [])}]
    skip = request.get("skip", {})
    cell_timeout, call_timeout = float(request["cell_timeout"]), float(request["call_timeout"])
    emit({"k": "hello", "schema": wire.SCHEMA, "v": wire.VERSION, "torch": torch.__version__.split("+")[0],
          "python": sys.version.split()[0], "cells": len(cells), "cuda": cuda_available(),
          "installed": installed_facts(observe, request.get("generated"))})   # held by no frame while it runs
    os.environ["AUTOGRAD_LAB_PROBE"] = "1"
    os.environ["AUTOGRAD_LAB_PARAMETERS"] = _dumps(request.get("parameters", {}))
    torch.default_generator.manual_seed(0)   # the same random numbers in every run of a submission (the
    random.seed(0)                           # worker's seed is drawn when it starts)
    ns = shell.user_ns
    timing = None
    if "profile" in request:   # benchmarks/batch.py --profile: what an empty cell costs IPython, then every step
        t = _process_time()
        shell.run_cell("pass", store_history=False, silent=True)
        timing = {"probe_start": start, "cells": 0.0, "observe": 0.0, "calls": 0.0, "cells_cpu": 0.0,
                  "empty_cell_cpu": _process_time() - t, "cells_run": 0}
    for i in range(-1, len(cells)):
        if i >= 0:
            if str(i) in skip:
                emit({"k": "cell", "i": i, "status": "skipped", "evalue": wire.clip(str(skip[str(i)]), 500)})
            else:
                beat(cell_timeout)
                t, cpu = _monotonic(), _process_time()
                rec = _run_cell(shell, i, cells[i], cell_timeout)
                if timing is not None:
                    timing["cells"] += _monotonic() - t
                    timing["cells_cpu"] += _process_time() - cpu
                    timing["cells_run"] += 1
                emit(rec)
        for entry in observe:
            if entry["after"] == i:
                restore()
                t = _monotonic()
                for rec in observe_exercise(ns, entry, call_timeout, restore, beat):
                    if timing is not None and rec["k"] == "call":
                        timing["calls"] += rec.get("seconds", 0.0)
                    emit(rec)
                if timing is not None:
                    timing["observe"] += _monotonic() - t
    if timing is not None:   # for benchmarks/batch.py --profile only; measured by the submission's own process
        timing.update(request["profile"], probe_end=_monotonic(), calls_cpu=_CALL_CPU[0])
        emit({"k": "done", "timing": timing})
    else:
        emit({"k": "done"})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
