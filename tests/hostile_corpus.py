"""A corpus of hostile or broken submissions of 01-backward-vs-grad, each with the outcome a fair grader
must give. tests/test_hostile_corpus.py grades every case with `grade_notebook`.

A Case makes one submission file (usually ada's fully correct notebook with some cells replaced, by
nbgrader grade_id, or appended; or raw bytes) and states its expected outcome:

- `status`: "graded", or "not_gradable" (score None and a reason, never a silent 0);
- `checks`: the status of each check the submission spoils, as "status" or ("status", phrase);
  every other check of the key must still be "passed";
- `phrase`: text the reason (not gradable) or each spoiled check's message must contain (a check's
  own phrase replaces it); `note`: text one of the report's notes must contain;
- `grading`: smaller limits for a case whose point is a timeout (the key's "grading" values);
- `extra`: more assertions on the report (e.g. that the key could not be read); `max_memory_mb`: a
  bound on the grader's own peak memory while grading.

The student's fault is a check outcome (failed / error / missing / timeout); the grader's limits only
bound what a submission costs. A case whose correct outcome the grader does not give yet, because of
a bug, carried a strict xfail that named it until it was fixed (none is left).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pytest

from conftest import ASSIGNMENT, EXAMPLES, ROOT

ADA = EXAMPLES / "ada.ipynb"
ALL_CHECKS: tuple[str, ...] = tuple(json.loads((EXAMPLES / "ada.expected.json").read_text())["checks"])
PRODUCE = {   # the checks that observe each produce function
    "ex1": ("1.produce.returns", "1.produce.grad"),
    "ex2": ("2.produce.returns", "2.produce.grad"),
    "ex3": ("3.produce.derivative", "3.produce.grad"),
    "ex4_accumulate": ("4.produce.after_k",),
    "ex4_reset": ("4.produce.after_reset",),
    "ex5": ("5.produce.x_grad", "5.produce.y_grad"),
    "ex6_strict": ("6.produce.strict",),
    "ex6_allow_unused": ("6.produce.allow_unused",),
    "ex6_materialize": ("6.produce.materialize",),
}
# Small limits for cases whose point is a timeout (the key's defaults are 120 s, 5 s and 20 s).
FAST = {"submission_timeout": 30, "call_timeout": 2, "cell_timeout": 2}
# For cases the worker's step limit stops (2 s alarms, so 5 s a step): the whole run has time for a run again.
STEP = {"submission_timeout": 90, "call_timeout": 2, "cell_timeout": 2}
# What a submission sees when it tries to reach something it must not.
DENIED = {"empty", "FileNotFoundError", "PermissionError", "NotADirectoryError", "OSError", "IsADirectoryError",
          "ConnectionRefusedError", "TimeoutError", "gaierror", "ConnectionResetError"}
# ada's correct sources, for cases that change one function of a cell and keep the others.
ADA_EX4 = ("def ex4_accumulate(x, k):\n    for _ in range(k):\n        (x ** 3).backward()\n\n\n"
           "def ex4_reset(x, k):\n    ex4_accumulate(x, k)\n    x.grad = None\n    (x ** 3).backward()\n")
ADA_EX6 = {
    "ex6_strict": "def ex6_strict(x, u):\n    return torch.autograd.grad(x ** 3, [x, u])\n",
    "ex6_allow_unused": "def ex6_allow_unused(x, u):\n    return torch.autograd.grad(x ** 3, [x, u], allow_unused=True)\n",
    "ex6_materialize": ("def ex6_materialize(x, u):\n"
                        "    return torch.autograd.grad(x ** 3, [x, u], materialize_grads=True)\n"),
}


def ex6_with(**replaced: str) -> str:
    """The ex6-produce cell with some of its three functions replaced."""
    return "\n\n".join({**ADA_EX6, **replaced}.values())


@dataclass
class Context:
    """Where a case's submission lives and what it may try to reach. `fill` puts @TOKEN@ (a unique
    name for files the submission tries to create) and @PORT@ (a host port a case listens on) into
    sources; `cleanup` runs after the case, `state` holds what its extra assertions need."""

    folder: Path          # the submission's own folder
    key_path: Path        # the full key it is graded with
    token: str
    port: int = 0
    cleanup: list[Callable[[], None]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)

    def fill(self, source: str) -> str:
        return source.replace("@TOKEN@", self.token).replace("@PORT@", str(self.port))


Make = Callable[[Context], Path]
Expected = str | tuple[str, str]


@dataclass(frozen=True)
class Case:
    name: str
    make: Make
    checks: Mapping[str, Expected] = field(default_factory=dict)
    phrase: str = ""
    status: str = "graded"
    note: str | tuple[str, ...] = ""   # a phrase one of the notes holds (or one of these phrases)
    grading: Mapping[str, float] = field(default_factory=dict)
    student: str | None = "ada"
    extra: Callable[[Any, Context], None] | None = None
    marks: tuple[Any, ...] = ()
    max_memory_mb: float | None = None   # the grader's own peak (Python allocations) while grading


def ada_notebook() -> dict[str, Any]:
    """ada's notebook without its outputs (so without commit records: these cases are about code, and each
    prediction is graded as its cell stands)."""
    nb = json.loads(ADA.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = []
    return nb


def notebook(edits: Mapping[str, str] | None = None, append: Sequence[str] = (),
             change: Callable[[dict[str, Any]], None] | None = None, name: str = "ada.ipynb",
             before: Mapping[str, Sequence[str]] | None = None) -> Make:
    """ada's notebook with the sources of some cells replaced (by grade_id), code cells inserted `before`
    the cell of a grade_id (each exercise is observed where its check cell stands: code that should act
    before an observation goes before it), code cells appended, and then `change` applied to the JSON;
    sources may hold Context placeholders."""
    def make(ctx: Context) -> Path:
        nb = ada_notebook()
        for gid, sources in (before or {}).items():
            at = next(i for i, c in enumerate(nb["cells"]) if c["metadata"].get("nbgrader", {}).get("grade_id") == gid)
            nb["cells"][at:at] = [{"cell_type": "code", "id": f"before-{gid}-{i}", "metadata": {},
                                   "execution_count": None, "outputs": [], "source": src} for i, src in enumerate(sources)]
        for cell in nb["cells"]:
            gid = cell["metadata"].get("nbgrader", {}).get("grade_id")
            if cell["id"].startswith("before-"):
                cell["source"] = ctx.fill(cell["source"])
            if edits and gid in edits:
                cell["source"] = ctx.fill(edits[gid])
        for i, source in enumerate(append):
            nb["cells"].append({"cell_type": "code", "id": f"hostile-{i}", "metadata": {}, "execution_count": None,
                                "outputs": [], "source": ctx.fill(source)})
        if change:
            change(nb)
        path = ctx.folder / name
        path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
        return path
    return make


def raw(data: bytes | Callable[[], bytes], name: str = "ada.ipynb") -> Make:
    def make(ctx: Context) -> Path:
        path = ctx.folder / name
        path.write_bytes(data() if callable(data) else data)
        return path
    return make


def spoiled(status: str, *functions: str) -> dict[str, str]:
    """Every check of these produce functions has `status`."""
    return {c: status for f in functions for c in PRODUCE[f]}


ALL_ERROR = {c: "error" for c in ALL_CHECKS}


def _cell(nb: dict[str, Any], gid: str) -> dict[str, Any]:
    return next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == gid)


def _index(nb: dict[str, Any], gid: str) -> int:
    return nb["cells"].index(_cell(nb, gid))


# ---------------------------------------------------------------- helpers for the extra assertions

def _outcome(report: Any, check_id: str) -> Any:
    return next(o for o in report.outcomes if o.check_id == check_id)


def _reported_attempts(report: Any) -> dict[str, str]:
    """What a submission stored in p1_returns as "what=result|what=result", read off the report."""
    observed = _outcome(report, "1.predict.returns").observed or ""
    text = observed.strip("'\"")
    return dict(part.split("=", 1) for part in text.split("|") if "=" in part)


def _all_denied(report: Any, ctx: Context) -> None:
    got = _reported_attempts(report)
    assert got and set(ctx.state["attempts"]) <= set(got), got
    assert all(v in DENIED for v in got.values()), f"the submission reached something it must not: {got}"
    text = json.dumps(report.to_dict())
    assert '"secret"' not in text and "BEGIN SOLUTION" not in text and "[[exercise" not in text


ATTEMPT = '''def _attempt(what, f):
    try:
        got = f()
        return f"{what}=" + ("empty" if got in ([], b"") else "reached")
    except BaseException as e:
        return f"{what}={type(e).__name__}"
'''


def _reader(attempts: Mapping[str, str]) -> str:
    """A cell that tries to read each path and stores what happened in p1_returns."""
    lines = [ATTEMPT, "import os", "_found = []"]
    for what, path in attempts.items():
        read = "os.listdir" if what.endswith("folder") else "(lambda p: open(p, 'rb').read())"
        lines.append(f"_found.append(_attempt({what!r}, lambda: {read}({path!r})))")
    lines.append("p1_returns = '|'.join(_found)")
    return "\n".join(lines)


def read_key_and_solutions(ctx: Context) -> Path:
    """Try the full key used, its folder and project, this project's solutions and build, and the
    main checkout's key."""
    solution = ROOT / "solutions" / ASSIGNMENT
    attempts = {
        "key": str(ctx.key_path), "key_folder": str(ctx.key_path.parent),
        "project_folder": str(ctx.key_path.parents[2]),
        "spec": str(solution / "spec.toml"), "solution": str(solution / "backward-vs-grad.ipynb"),
        "solutions_folder": str(ROOT / "solutions"), "build_key": str(ROOT / "build" / ASSIGNMENT / "key.json"),
        "main_key": f"/work/main/build/{ASSIGNMENT}/key.json",
    }
    ctx.state["attempts"] = attempts
    return notebook(before={"ex1-check": [_reader(attempts)]})(ctx)


def read_another_copy(ctx: Context) -> Path:
    """A world-readable copy of the solution's spec elsewhere on the machine, and the main checkout's
    solutions when this is another checkout."""
    folder = tempfile.mkdtemp(prefix="autograd-lab-copy-")
    ctx.cleanup.append(lambda: shutil.rmtree(folder, ignore_errors=True))
    os.chmod(folder, 0o755)
    copy = Path(folder, "spec.toml")
    shutil.copy(ROOT / "solutions" / ASSIGNMENT / "spec.toml", copy)
    os.chmod(copy, 0o644)
    attempts = {"copy": str(copy)}
    main = Path("/work/main")
    if main.is_dir() and main.resolve() != ROOT.resolve():
        attempts["main_spec"] = str(main / "solutions" / ASSIGNMENT / "spec.toml")
    ctx.state["attempts"] = attempts
    return notebook(before={"ex1-check": [_reader(attempts)]})(ctx)


def write_targets(ctx: Context) -> list[Path]:
    return [Path(tempfile.gettempdir()) / f"{ctx.token}.txt", Path.home() / f"{ctx.token}.txt",
            ROOT / f"{ctx.token}.txt", ctx.folder / f"{ctx.token}.txt", ctx.key_path.parent / f"{ctx.token}.txt",
            Path("/work/main") / f"{ctx.token}.txt", Path(tempfile.gettempdir()) / f"{ctx.token}-shell.txt"]


def write_outside(ctx: Context) -> Path:
    targets = write_targets(ctx)
    for t in targets:
        ctx.cleanup.append(lambda t=t: t.unlink(missing_ok=True))
    source = (f"_targets = {[str(t) for t in targets[:-1]]!r}\n"
              "for _t in _targets:\n    try:\n        with open(_t, 'w') as _f:\n            _f.write('pwned')\n"
              "    except OSError:\n        pass\n"
              "try:\n    with open(os.path.join(os.path.dirname(os.getcwd()), '@TOKEN@.txt'), 'w') as _f:\n"
              "        _f.write('pwned')\nexcept OSError:\n    pass\n"
              f"get_ipython().system('echo pwned > {targets[-1]} 2>/dev/null')\n")
    return notebook(append=["import os\n" + source])(ctx)


def nothing_written(report: Any, ctx: Context) -> None:
    assert [str(t) for t in write_targets(ctx) if t.exists()] == []


def open_sockets(ctx: Context) -> Path:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.setblocking(False)
    ctx.cleanup.append(listener.close)
    ctx.port = listener.getsockname()[1]
    ctx.state["listener"] = listener
    ctx.state["attempts"] = {"cloudflare_dns": "", "host_port": ""}
    source = (ATTEMPT + "import socket\n"
              "_found = [_attempt('cloudflare_dns', lambda: socket.create_connection(('1.1.1.1', 53), timeout=3)),\n"
              "          _attempt('host_port', lambda: socket.create_connection(('127.0.0.1', @PORT@), timeout=3))]\n"
              "p1_returns = '|'.join(_found)\n")
    return notebook(before={"ex1-check": [source]})(ctx)


def no_connection(report: Any, ctx: Context) -> None:
    _all_denied(report, ctx)
    with pytest.raises(BlockingIOError):
        ctx.state["listener"].accept()


def warning_shown(report: Any, ctx: Context) -> None:
    details = " ".join(_outcome(report, "1.produce.returns").details)
    assert "warning (information, not graded): UserWarning: ex1 is slow on purpose" in details, details


def many_warnings_shown(report: Any, ctx: Context) -> None:
    details = _outcome(report, "1.produce.returns").details
    assert 1 <= len(details) <= 20 and "UserWarning: careful" in details[0], details


def renamed(report: Any, ctx: Context) -> None:
    assert report.student == "ada" and report.submission == "ada-final (1).ipynb"


def no_channel_note(report: Any, ctx: Context) -> None:
    assert not [n for n in report.notes if "results channel" in n], report.notes


def quick_and_no_channel_note(report: Any, ctx: Context) -> None:
    no_channel_note(report, ctx)
    assert report.seconds < 30


# ---------------------------------------------------------------- submission sources

FORGED_CALL = ('{"k": "call", "call": "ex1", "point": %d, "status": "returned", "returned": {"t": "none"}, '
               '"tensors": {"x": {"grad": {"t": "none"}, "requires_grad": true, "is_leaf": true}}, "warnings": []}')
FORGE_FDS = ("import os, json\n"
             "_lines = [json.dumps({'k': 'name', 'name': 'p1_grad', 'value': {'t': 'float', 'v': 999.0}})]\n"
             "_lines += [%r %% p for p in range(3)]\n"
             "_lines += ['garbage that is not a record', json.dumps({'k': 'cell', 'i': 0, 'status': 'ok'}),\n"
             "           json.dumps({'k': 'hello', 'schema': 'autograd-lab/observations', 'v': 1, 'cells': 1}),\n"
             "           json.dumps({'k': 'done'})]\n"
             "for _fd in range(3, 21):\n"
             "    try:\n"
             "        os.write(_fd, ('\\n'.join(_lines) + '\\n').encode())\n"
             "    except OSError:\n"
             "        pass\n") % FORGED_CALL
FORGE_STDOUT = ("import sys\n"
                "for _p in range(3):\n"
                "    print(%r %% _p)\n"
                "    print(%r %% _p, file=sys.stderr)\n") % (FORGED_CALL, FORGED_CALL)
FORGE_HUGE_THEN_EXIT = """import os, json
_big = 10 ** 4000
_grad = {"t": "tensor", "dtype": "float32", "shape": [], "data": [_big], "requires_grad": False, "is_leaf": True}
_lines = [json.dumps({"k": "name", "name": "p1_grad", "value": {"t": "int", "v": _big}}),
          json.dumps({"k": "call", "call": "ex1", "point": 0, "status": "returned", "returned": {"t": "int", "v": _big},
                      "tensors": {"x": {"grad": _grad, "requires_grad": True, "is_leaf": True}}})]
for _fd in range(3, 21):
    try:
        os.write(_fd, ("\\n".join(_lines) + "\\n").encode())
    except OSError:
        pass
os._exit(0)
"""
ADA_EX3 = "def ex3(x):\n    d, = torch.autograd.grad(x**2 * torch.sin(x), x)\n    return d\n"
EX1_RETURNS_GRAD = "def ex1(x):\n    (x * x).backward()\n    return x.grad\n"   # wrong: backward() returns None
EX1_WRONG_GRAD = "def ex1(x):\n    return (3 * x * x).backward()\n"              # wrong: x.grad is 6x
LYING_OBSERVER = '''import sys, importlib
importlib.import_module("autograder.sandbox.inside.probe")
for _m in list(sys.modules.values()):
    try:
        _found = callable(getattr(_m, "observe_calls", None)) and callable(getattr(_m, "encode_guarded", None))
    except Exception:
        _found = False
    if _found:
        def _lying(ns, calls, timeout, _real=_m.observe_calls):
            for rec in _real(ns, calls, timeout):
                if rec.get("call") == "ex1" and rec.get("status") == "returned":
                    rec["returned"] = {"t": "none"}
                yield rec
        _m.observe_calls = _lying
'''
LIARS = '''class Liar:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    def __float__(self):
        return -2.36
    def __bool__(self):
        return True
    def __repr__(self):
        return "-2.36"
    __hash__ = object.__hash__

class LyingFloat(float):
    def __eq__(self, other):
        return True
    def __float__(self):
        return 2.712
    def __repr__(self):
        return "2.712"
    __hash__ = float.__hash__

class LyingTensor(torch.Tensor):
    def __eq__(self, other):
        return True
    __hash__ = torch.Tensor.__hash__

p1_returns = None
p1_grad = Liar()
'''
BACKGROUND_CHILD = '''import os, time, json
if os.fork() == 0:
    time.sleep(3)
    _line = (%r %% 0 + "\\n").encode()
    for _fd in range(3, 21):
        try:
            os.write(_fd, _line)
        except OSError:
            pass
    os._exit(0)
''' % FORGED_CALL


def _v3() -> bytes:
    import nbformat

    nb = nbformat.reads(ADA.read_text(encoding="utf-8"), as_version=4)
    return nbformat.writes(nbformat.convert(nb, 3), version=3).encode()


def _drop(*gids: str) -> Callable[[dict[str, Any]], None]:
    def change(nb: dict[str, Any]) -> None:
        nb["cells"] = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") not in gids]
    return change


def _duplicate_exercise_2(nb: dict[str, Any]) -> None:
    start, end = _index(nb, "ex2"), _index(nb, "ex2-check")
    nb["cells"][end + 1:end + 1] = json.loads(json.dumps(nb["cells"][start:end + 1]))   # same ids


def _later_wrong_prediction(nb: dict[str, Any]) -> None:
    copy = json.loads(json.dumps(_cell(nb, "ex1-predict")))
    copy["source"] = "p1_returns = None\np1_grad = 5.0"
    nb["cells"].insert(_index(nb, "ex1-produce"), copy)   # same id; Run All runs it after the first


def _to_markdown(nb: dict[str, Any]) -> None:
    cell = _cell(nb, "ex2-produce")
    cell["cell_type"] = "markdown"
    for k in ("outputs", "execution_count"):
        cell.pop(k, None)


def _to_markdown_bare(nb: dict[str, Any]) -> None:
    _to_markdown(nb)
    _cell(nb, "ex2-produce")["metadata"].pop("nbgrader")   # nothing says it was released as code


def _markdown_released_as_code_without_source(nb: dict[str, Any]) -> None:
    nb["cells"].append({"cell_type": "markdown", "metadata": {"nbgrader": {"cell_type": "code", "grade_id": "x"}}})


def _edit_metadata(nb: dict[str, Any]) -> None:
    for cell in nb["cells"]:
        meta = cell["metadata"].get("nbgrader")
        if not meta:
            continue
        meta["grade_id"] = "renamed-" + meta["grade_id"]
        meta["locked"] = not meta["locked"]
        meta["solution"] = not meta["solution"]
        meta["grade"] = True
        meta["points"] = 1000
    del nb["cells"][8]["metadata"]["nbgrader"]   # ex1-produce
    nb["metadata"]["autograd_lab"] = {"assignment": "99-something-else", "key_digest": "0" * 16}


def _metadata_not_a_dict(nb: dict[str, Any]) -> None:
    one, two, three = (_cell(nb, f"ex{i}-produce") for i in "123")
    one["metadata"]["nbgrader"] = "garbage"
    two["metadata"]["nbgrader"] = {"grade_id": 42}
    three["metadata"]["nbgrader"] = ["a", "list"]


def _code_cell_without_source(nb):
    del next(c for c in nb["cells"] if c["cell_type"] == "code")["source"]


def _source_not_text(nb: dict[str, Any]) -> None:
    _cell(nb, "ex1-produce")["source"] = 42


def _big_image(nb: dict[str, Any]) -> None:
    png = "iVBORw0KGgo" + "A" * (50 * 2**20)
    _cell(nb, "ex1-produce")["outputs"] = [{"output_type": "display_data", "data": {"image/png": png, "text/plain": "<Figure>"},
                                            "metadata": {}}]


def _ada_bytes() -> bytes:
    return ADA.read_bytes()


def _script() -> bytes:
    nb = ada_notebook()
    return "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code").encode()


EXIT_CODE_NOTE = "the run ended during cell 32: the process ended"

CASES: list[Case] = [
    # ------------------------------------------------------------ runaway code
    Case("infinite-loop-in-a-cell", notebook({"ex3-check": "while True:\n    pass"}),
         note="cell 18 ('ex3-check') ran past 2 s and was stopped", grading=FAST),
    Case("infinite-loop-in-a-produce-function", notebook({"ex2-produce": "def ex2(x):\n    while True:\n        pass"}),
         spoiled("timeout", "ex2"), phrase="ex2(x) did not return within 2 s", grading=FAST),
    Case("endless-recursion-in-a-produce-function", notebook({"ex3-produce": "def ex3(x):\n    return ex3(x) + 1"}),
         spoiled("error", "ex3"), phrase="raised RecursionError"),
    Case("endless-recursion-in-a-cell", notebook(append=["def f(n):\n    return f(n + 1)\n\nf(0)"]),
         note="cell 32 raised RecursionError"),
    Case("memory-bomb-in-a-cell", notebook(append=["hog = bytearray(50 * 2**30)"]), note="cell 32 raised MemoryError"),
    Case("memory-bomb-in-a-produce-function",
         notebook({"ex5-produce": "def ex5(x, y):\n    hog = torch.empty(50 * 2**30 // 4)\n"
                                  "    (x * y).backward(inputs=[x])\n"}),
         spoiled("error", "ex5"), phrase="ex5(x, y) raised RuntimeError"),
    # Stopped by the process limit (the bomb's own fork raises), or on a busy machine, where its 127 copies
    # starve it, by the time limit: either way only the cell it is in is lost.
    Case("fork-bomb", notebook(append=["import os\nwhile True:\n    os.fork()"]),
         note=("cell 32 raised BlockingIOError", "the 15 s limit was reached during cell 32"),
         grading={"submission_timeout": 15}),
    Case("sleep-past-the-cell-limit", notebook(append=["import time\ntime.sleep(600)"]),
         note="cell 32 ran past 2 s and was stopped", grading=FAST),
    Case("sleep-past-the-call-limit",
         notebook({"ex4-produce": ADA_EX4.replace("    ex4_accumulate(x, k)\n",
                                                  "    import time\n    time.sleep(600)\n    ex4_accumulate(x, k)\n")}),
         {"4.produce.after_reset": "timeout"}, phrase="ex4_reset(x, k) did not return within 2 s", grading=FAST),
    Case("sleep-with-the-alarm-ignored",
         notebook({"ex6-produce": "import signal, time\n\n" + ex6_with(ex6_materialize=(
             "def ex6_materialize(x, u):\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    time.sleep(600)\n"))}),
         {"6.produce.materialize": "timeout"},
         phrase="ex6_materialize(x, u) did not return within 2 s at x=-1.18, u=2.8 (your point) and did not stop at "
                "its alarm, so the run was stopped",
         grading={"submission_timeout": 12, "call_timeout": 2, "cell_timeout": 5}),

    # ------------------------------------------------------------ alarms delayed or swallowed: the worker's step limit
    # Each defines ex3, then holds its cell past the cell limit in a way the probe's alarm cannot stop: the
    # worker stops the run, and the notebook is run again without that cell; only exercise 3's functions,
    # which the cell defines, are lost.
    *[Case(name, notebook({"ex3-produce": ADA_EX3 + "\nimport signal, time\n" + code}),
           spoiled("timeout", "ex3"), phrase="which defines it, ran past its 2 s limit and did not stop at its alarm",
           note="the run ended during cell 17 ('ex3-produce')", grading=STEP)
      for name, code in [
          ("alarm-ignored-in-a-cell", "signal.signal(signal.SIGALRM, signal.SIG_IGN)\ntime.sleep(600)"),
          ("alarm-blocked-in-a-cell", "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\ntime.sleep(600)"),
          ("alarm-rearmed-far-away-in-a-cell", "def _later(*a):\n    signal.setitimer(signal.ITIMER_REAL, 3600)\n"
           "signal.signal(signal.SIGALRM, lambda *a: signal.setitimer(signal.ITIMER_REAL, 3600))\n"
           "while True:\n    time.sleep(1)"),
          ("alarm-swallowed-in-a-loop", "while True:\n    try:\n        time.sleep(1)\n    except BaseException:\n"
           "        pass"),
          ("c-loop-holding-the-interpreter", "sum(range(10 ** 13))"),
          ("alarm-handler-replaced-by-a-thread", "import threading\ndef _keep():\n    while True:\n"
           "        signal.setitimer(signal.ITIMER_REAL, 0)\n        time.sleep(0.01)\n"
           "threading.Thread(target=_keep, daemon=True).start()\ntime.sleep(600)"),
      ]],
    Case("setitimer-replaced-then-a-loop", notebook(before={"ex1-predict": ["import signal\nsignal.setitimer = "
                                                                           "lambda *a, **k: (0.0, 0.0)"]},
                                                    append=["while True:\n    pass"]),
         note="ran past 2 s and was stopped", grading=FAST),   # the probe keeps its own setitimer
    Case("exception-message-never-ends-in-a-cell",
         notebook({"ex3-produce": ADA_EX3 + "\nclass Loud(Exception):\n    def __str__(self):\n        while True:\n"
                                           "            pass\n\nraise Loud()"}),
         note="cell 17 ('ex3-produce') ran past 2 s and was stopped", grading=FAST),
    Case("four-children-over-the-runs-memory-budget",
         notebook({"ex4-produce": ADA_EX4 + "\nimport os, time\n_kids = []\nfor _ in range(4):\n"
                                           "    _pid = os.fork()\n    if _pid == 0:\n"
                                           "        _hog = b'x' * (300 * 2**20)\n        time.sleep(60)\n"
                                           "        os._exit(0)\n    _kids.append(_pid)\n"
                                           "for _pid in _kids:\n    os.waitpid(_pid, 0)"}),
         spoiled("error", "ex4_accumulate", "ex4_reset"),
         phrase="more than its 600 MB of memory, so the run was stopped",
         grading={"run_memory_mb": 600, "cell_timeout": 60, "submission_timeout": 120}),
    Case("predict-cell-raises-before-its-assignments",
         notebook({"ex1-predict": "p1_returns = input('your guess? ')\np1_grad = 2 * P.x0"}),
         {"1.predict.returns": ("error", "p1_returns is not defined: cell 8 ('ex1-predict') raised EOFError"),
          "1.predict.grad": ("error", "p1_grad is not defined: cell 8 ('ex1-predict') raised EOFError")}),
    Case("leftover-raise-below-written-code",
         notebook({"ex1-produce": "def ex1(x):\n    y = (x * x).backward()\n    raise NotImplementedError('write ex1')"}),
         spoiled("error", "ex1"), phrase="ex1 raises NotImplementedError at its last line"),

    # ------------------------------------------------------------ exits, at top level and in a produce function
    Case("sys-exit-at-top-level", notebook(append=["import sys\nsys.exit(0)"]), note="cell 32 raised SystemExit"),
    Case("os-exit-at-top-level", notebook(append=["import os\nos._exit(0)"]), note=EXIT_CODE_NOTE),
    Case("raise-systemexit-at-top-level", notebook(append=["raise SystemExit(3)"]), note="cell 32 raised SystemExit"),
    Case("raise-keyboardinterrupt-at-top-level", notebook(append=["raise KeyboardInterrupt"]),
         note="cell 32 raised KeyboardInterrupt"),
    Case("sigkill-itself-at-top-level", notebook(append=["import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"]),
         note=EXIT_CODE_NOTE),
    Case("os-exit-in-a-produce-cell",
         notebook({"ex2-produce": "import os\n\ndef ex2(x):\n    return torch.autograd.grad(x**2 * torch.sin(x), x)\n\n"
                                  "os._exit(1)"}),
         spoiled("error", "ex2"), phrase="('ex2-produce'), which defines it, ended the run (the process ended, exit "
                                         "code 1)"),
    Case("sys-exit-in-a-produce-function", notebook({"ex1-produce": "import sys\n\ndef ex1(x):\n    sys.exit(0)"}),
         spoiled("error", "ex1"), phrase="ex1(x) raised SystemExit"),
    Case("os-exit-in-a-produce-function", notebook({"ex2-produce": "import os\n\ndef ex2(x):\n    os._exit(0)"}),
         spoiled("error", "ex2"), phrase="process ended (exit code 0) while ex2(x) was running"),
    Case("raise-systemexit-in-a-produce-function", notebook({"ex5-produce": "def ex5(x, y):\n    raise SystemExit(3)"}),
         spoiled("error", "ex5"), phrase="ex5(x, y) raised SystemExit"),
    Case("raise-keyboardinterrupt-in-a-produce-function",
         notebook({"ex3-produce": "def ex3(x):\n    raise KeyboardInterrupt"}),
         spoiled("error", "ex3"), phrase="ex3(x) raised KeyboardInterrupt"),
    Case("sigkill-itself-in-a-produce-function",
         notebook({"ex4-produce": "import os, signal\n\n" + ADA_EX4.replace(
             "    for _ in range(k):", "    os.kill(os.getpid(), signal.SIGKILL)\n    for _ in range(k):")}),
         spoiled("error", "ex4_accumulate", "ex4_reset"), phrase="was running at x="),
    Case("os-exit-at-a-fresh-point-only",
         notebook({"ex6-produce": "import os\n\n" + ex6_with(ex6_strict=(
             "def ex6_strict(x, u):\n    if abs(float(x) - P.x0) > 1e-6:\n        os._exit(0)\n"
             "    return torch.autograd.grad(x ** 3, [x, u])\n"))}),
         {"6.produce.strict": "error"}, phrase="(fresh point 1)"),

    # ------------------------------------------------------------ tampering
    Case("patched-torch-autograd-grad",
         notebook(before={"ex1-predict": ["torch.autograd.grad = lambda *args, **kwargs: (torch.tensor(0.0),)"]}),
         {"2.produce.returns": ("failed", "0.0 instead of"), "3.produce.derivative": ("failed", "0.0 instead of"),
          "6.produce.strict": ("failed", "nothing was raised"),
          "6.produce.allow_unused": ("failed", "expected a tuple of 2 items, got a tuple of 1 item"),
          "6.produce.materialize": ("failed", "expected a tuple of 2 items, got a tuple of 1 item")}),
    Case("patched-allclose-and-friends-with-a-wrong-answer",
         notebook({"ex1-produce": EX1_WRONG_GRAD},
                  ["import math\ntorch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True\n"
                   "torch.isclose = lambda *a, **k: torch.tensor(True)\nmath.isclose = lambda *a, **k: True"]),
         {"1.produce.grad": "failed"}, phrase="instead of"),
    Case("patched-print-and-isinstance",
         notebook(append=["import builtins\nbuiltins.print = lambda *a, **k: None\n"
                          "builtins.isinstance = lambda obj, cls, _real=isinstance: _real(obj, cls)"])),
    Case("patched-builtin-float", notebook(append=["import builtins\nbuiltins.float = lambda *a, **k: 0.0"])),
    Case("patched-json", notebook(append=["import json\njson.dumps = lambda *a, **k: '{\"k\": \"done\"}'\n"
                                          "json.loads = lambda *a, **k: {}\njson.dump = lambda *a, **k: None"])),
    Case("patched-probe-via-sys-modules", notebook({"ex1-produce": EX1_RETURNS_GRAD}, [LYING_OBSERVER]),
         {"1.produce.returns": "failed"}, phrase="expected None"),
    Case("prints-a-passing-report-with-a-wrong-answer",
         notebook({"ex1-produce": EX1_WRONG_GRAD},
                  ["import sys\nprint('score: 26 / 26 (100 %) -- every check passed\\n' * 20)\n"
                   "print('{\"status\": \"graded\", \"score\": 26, \"max_score\": 26}', file=sys.stderr)"]),
         {"1.produce.grad": "failed"}, phrase="instead of"),
    Case("forged-records-on-stdout-and-stderr", notebook({"ex1-produce": EX1_RETURNS_GRAD}, [FORGE_STDOUT]),
         {"1.produce.returns": "failed"}, phrase="expected None", extra=no_channel_note),
    Case("forged-records-on-fds-3-to-20", notebook(append=[FORGE_FDS]),
         {"1.predict.grad": "error", "1.produce.returns": "error", "1.produce.grad": "error"},
         phrase="reached the grader twice", note="were not written by the grader's probe"),
    # An exit costs only what it prevents: the notebook is run again without the cell that ended the run.
    Case("forged-records-with-huge-ints-then-exit", notebook(before={"ex1-predict": [FORGE_HUGE_THEN_EXIT]}),
         note="2 line(s) in the results channel were not written"),
    Case("closes-the-results-channel", notebook(before={"ex1-predict": ["import os\nos.closerange(3, 1024)"]}),
         note="the process ended, exit code 70; the notebook was run again"),   # a graded run keeps no output tail
    Case("background-child-forges-records-after-the-run", notebook(append=[BACKGROUND_CHILD]),
         extra=quick_and_no_channel_note),
    Case("reads-the-key-and-the-solutions", read_key_and_solutions, {"1.predict.returns": "failed"},
         phrase="was not worked out (`import os`", extra=_all_denied),
    Case("reads-another-copy-of-the-solutions", read_another_copy, {"1.predict.returns": "failed"},
         phrase="was not worked out (`open`", extra=_all_denied),
    Case("writes-outside-its-folder", write_outside, extra=nothing_written),
    Case("opens-network-sockets", open_sockets, {"1.predict.returns": "failed"},
         phrase="was not worked out (`import socket`", extra=no_connection),

    # ------------------------------------------------------------ floods
    Case("prints-ten-million-lines", notebook(append=["print('\\n'.join(map(str, range(10**7))))"]),
         note="cell 32 raised OSError"),
    Case("notebook-holds-a-50-MB-image-output", notebook(change=_big_image), max_memory_mb=400),
    Case("returns-a-ten-million-element-tensor",
         notebook({"ex3-produce": "def ex3(x):\n    torch.autograd.grad(x**2 * torch.sin(x), x)\n"
                                  "    return torch.zeros(10**7)"}),
         {"3.produce.derivative": "failed"}, phrase="shape (10000000,) instead of ()"),
    Case("raises-a-10-MB-message", notebook({"ex2-produce": "def ex2(x):\n    raise ValueError('x' * 10**7)"}),
         spoiled("error", "ex2"), phrase="ex2(x) raised ValueError"),
    Case("floods-the-results-channel",
         notebook(before={"ex1-predict": ["import os\n_junk = b'not a record ' * 80 + b'\\n'\nfor _fd in range(3, 21):\n"
                                          "    try:\n        for _ in range(3000):\n            os.write(_fd, _junk)\n"
                                          "    except OSError:\n        pass"]}),
         ALL_ERROR, phrase="wrote more than 2 MB of results"),
    Case("ten-thousand-warnings",
         notebook({"ex1-produce": "import warnings\n\ndef ex1(x):\n    for i in range(10**4):\n"
                                  "        warnings.warn(f'careful {i}')\n    return (x * x).backward()"}),
         extra=many_warnings_shown),

    # ------------------------------------------------------------ broken notebooks
    Case("truncated-json", raw(lambda: _ada_bytes()[: len(_ada_bytes()) // 2]), status="not_gradable",
         phrase="is not valid JSON"),
    Case("empty-file", raw(b""), status="not_gradable", phrase="is empty"),
    Case("whitespace-only-file", raw(b"\n   \n\t\n"), status="not_gradable", phrase="is empty"),
    Case("json-that-is-not-a-notebook", raw(b'{"name": "ada", "answers": [1, 2, 3]}'), status="not_gradable",
         phrase="not a Jupyter notebook"),
    Case("json-array", raw(b"[1, 2, 3]"), status="not_gradable", phrase="not a Jupyter notebook"),
    Case("cells-is-not-a-list", notebook(change=lambda nb: nb.update(cells=5)), status="not_gradable",
         phrase="not a readable notebook"),
    Case("cell-source-is-not-text", notebook(change=_source_not_text), status="not_gradable",
         phrase="not a readable notebook"),
    Case("code-cell-without-source", notebook(change=_code_cell_without_source), status="not_gradable",
         phrase="has no source; re-save it from Jupyter"),
    Case("nbformat-3-notebook", raw(_v3)),
    Case("unsupported-nbformat-5", notebook(change=lambda nb: nb.update(nbformat=5)), status="not_gradable",
         phrase="not a readable notebook"),
    Case("deleted-exercise-cells", notebook(change=_drop("ex3-predict", "ex3-produce")),
         {"3.predict.derivative": "missing", "3.predict.grad": "missing", **spoiled("missing", "ex3")},
         phrase="is not defined"),
    Case("duplicated-cells-with-duplicate-ids", notebook(change=_duplicate_exercise_2)),
    Case("duplicated-cell-with-a-later-wrong-answer", notebook(change=_later_wrong_prediction),
         {"1.predict.grad": "failed"}, phrase="5.0 instead of"),
    Case("code-cell-turned-into-markdown", notebook(change=_to_markdown),   # graded as released, as nbgrader does
         note="('ex2-produce') is a markdown cell in this notebook, but it was released as a code cell, so it was "
              "graded as code"),
    Case("code-cell-turned-into-markdown-without-its-metadata", notebook(change=_to_markdown_bare),
         spoiled("missing", "ex2"), phrase="(a Markdown or Raw cell never runs: its cell must be Code)"),
    Case("edited-nbgrader-metadata", notebook(change=_edit_metadata)),
    Case("markdown-cell-released-as-code-without-a-source", notebook(change=_markdown_released_as_code_without_source)),
    Case("nbgrader-metadata-that-is-not-a-dict", notebook(change=_metadata_not_a_dict)),
    Case("renamed-file", notebook(name="ada-final (1).ipynb"), student=None, extra=renamed),
    Case("utf-16-bytes", raw(lambda: ADA.read_text(encoding="utf-8").encode("utf-16")), status="not_gradable",
         phrase="is UTF-16 text (an editor saved it as \"Unicode\"); a notebook is UTF-8"),
    Case("binary-bytes", raw(bytes(range(256)) * 64), status="not_gradable", phrase="is not UTF-8"),
    Case("utf-8-with-a-byte-order-mark", raw(lambda: b"\xef\xbb\xbf" + _ada_bytes())),
    Case("python-script-instead-of-a-notebook", raw(_script, name="ada.py"), status="not_gradable",
         phrase="not a Jupyter notebook"),

    # ------------------------------------------------------------ odd answers
    Case("nan-answers",
         notebook({"ex1-predict": "p1_returns = None\np1_grad = float('nan')",
                   "ex3-produce": "def ex3(x):\n    return torch.tensor(float('nan'))"}),
         {"1.predict.grad": "failed", "3.produce.derivative": "failed"}, phrase="nan instead of"),
    Case("infinite-answers",
         notebook({"ex3-predict": "p3_derivative = 2.712\np3_grad = float('inf')",
                   "ex2-produce": "def ex2(x):\n    return (torch.tensor(float('-inf')),)"}),
         {"3.predict.grad": ("failed", "inf instead of"), "2.produce.returns": ("failed", "-inf instead of")}),
    Case("complex-answers",
         notebook({"ex1-predict": "p1_returns = None\np1_grad = -2.36 + 0j",
                   "ex3-produce": ("def ex3(x):\n    d, = torch.autograd.grad(x**2 * torch.sin(x), x)\n"
                                   "    return d.to(torch.complex64)")}),
         {"1.predict.grad": ("failed", "expected a number"),
          "3.produce.derivative": ("failed", "dtype complex64 instead of float32")}),
    Case("string-answers",
         notebook({"ex1-predict": "p1_returns = 'None'\np1_grad = '-2.36'",
                   "ex1-produce": "def ex1(x):\n    (x * x).backward()\n    return 'None'"}),
         {"1.predict.returns": ("failed", "write None without quotes"),
          "1.predict.grad": ("failed", "write the number without quotes"),
          "1.produce.returns": ("failed", "expected None, got a string")}),
    Case("numpy-answers",
         notebook({"ex1-predict": "import numpy as np\np1_returns = None\np1_grad = np.array(-2.36)",
                   "ex3-predict": "p3_derivative = np.float32(2.712)\np3_grad = np.array([17.7])",
                   "ex3-produce": ("def ex3(x):\n    d, = torch.autograd.grad(x**2 * torch.sin(x), x)\n"
                                   "    return d.numpy()")}),
         {"3.produce.derivative": "failed"}, phrase="got a numpy array"),
    Case("list-answers",
         notebook({"ex2-predict": "p2_returns = [2.712]\np2_grad = None",
                   "ex6-predict": "p6_strict = 'RuntimeError'\np6_allow_unused = [4.177, None]\n"
                                  "p6_materialize = (4.177, 0.0)",
                   "ex2-produce": "def ex2(x):\n    return list(torch.autograd.grad(x**2 * torch.sin(x), x))"}),
         # a one-item tuple (torch's own container) stays the lesson; a pair written as a list passes (issue 44)
         {"2.predict.returns": "failed", "6.predict.allow_unused": ("passed", "p6_allow_unused = [4.177, None]"),
          "2.produce.returns": "failed"},
         phrase="got a list"),
    Case("tensors-that-require-grad",
         notebook({"ex1-predict": "p1_returns = None\np1_grad = torch.tensor(-2.36, requires_grad=True)",
                   "ex1-produce": "def ex1(x):\n    return (x * x).backward(create_graph=True)",
                   "ex3-produce": ("def ex3(x):\n    d, = torch.autograd.grad(x**2 * torch.sin(x), x, create_graph=True)\n"
                                   "    return d")}),
         {"1.predict.grad": ("failed", "was not worked out (`requires_grad=`")}),
    Case("float64-and-float16-tensors",
         notebook({"ex1-predict": "p1_returns = None\np1_grad = torch.tensor(-2.36, dtype=torch.float16)",
                   "ex3-predict": "p3_derivative = torch.tensor(2.712, dtype=torch.float64)\np3_grad = 17.7",
                   "ex2-produce": ("def ex2(x):\n"
                                   "    return tuple(g.half() for g in torch.autograd.grad(x**2 * torch.sin(x), x))"),
                   "ex3-produce": ("def ex3(x):\n    d, = torch.autograd.grad(x**2 * torch.sin(x), x)\n"
                                   "    return d.double()")}),
         {"2.produce.returns": ("failed", "dtype float16 instead of float32"),
          "3.produce.derivative": ("failed", "dtype float64 instead of float32")}),
    Case("wrong-shapes",
         notebook({"ex4-predict": "p4_after_k = [12.53, 12.53]\np4_after_reset = 4.177",
                   "ex6-predict": "p6_strict = 'RuntimeError'\np6_allow_unused = (4.177, None, 0.0)\n"
                                  "p6_materialize = (4.177, 0.0)",
                   "ex3-produce": ("def ex3(x):\n    d, = torch.autograd.grad(x**2 * torch.sin(x), x)\n"
                                   "    return d.reshape(1)"),
                   "ex6-produce": ex6_with(ex6_materialize=(
                       "def ex6_materialize(x, u):\n"
                       "    return torch.autograd.grad(x ** 3, [x, u], materialize_grads=True) + (torch.zeros(()),)\n"))}),
         {"4.predict.after_k": ("failed", "expected a number"),
          "6.predict.allow_unused": ("failed", "got a tuple of 3 items"),
          "3.produce.derivative": ("failed", "shape (1,) instead of ()"),
          "6.produce.materialize": ("failed", "got a tuple of 3 items")}),
    Case("a-tuple-of-a-thousand-items-and-a-meta-tensor",
         notebook({"ex2-predict": "p2_returns = tuple(range(1000))\np2_grad = None",
                   "ex3-produce": ("def ex3(x):\n    torch.autograd.grad(x**2 * torch.sin(x), x)\n"
                                   "    return torch.empty((), device='meta')")}),
         {"2.predict.returns": ("failed", "got a tuple of more than 64 items"),
          "3.produce.derivative": ("failed", "could not be read")}),
    Case("objects-whose-eq-and-float-lie",
         notebook({"ex1-predict": LIARS,
                   "ex3-predict": "p3_derivative = LyingFloat(999.0)\np3_grad = 17.7",
                   "ex1-produce": "def ex1(x):\n    (x * x).backward()\n    return Liar()",
                   "ex3-produce": ("def ex3(x):\n    torch.autograd.grad(x**2 * torch.sin(x), x)\n"
                                   "    return torch.tensor(999.0).as_subclass(LyingTensor)")}),
         {"1.predict.grad": ("failed", "was not worked out (`object.__hash__`"),
          "3.predict.derivative": ("failed", "was not worked out"),
          "1.produce.returns": ("failed", "expected None"), "3.produce.derivative": ("failed", "999.0 instead of")}),
    Case("classes-functions-and-modules-as-answers",
         notebook({"ex1-predict": "p1_returns = print\np1_grad = -2.36",
                   "ex2-predict": "p2_returns = (2.712,)\np2_grad = torch",
                   "ex6-predict": "p6_strict = RuntimeError\np6_allow_unused = (4.177, None)\n"
                                  "p6_materialize = (4.177, 0.0)"}),
         {"1.predict.returns": "failed", "2.predict.grad": "failed"}, phrase="expected None, got"),
    Case("lone-surrogates-in-texts-and-the-file-name",
         notebook({"ex1-produce": ("import warnings\n\ndef ex1(x):\n    warnings.warn('odd \\udcff warning')\n"
                                   "    return (x * x).backward()"),
                   "ex2-produce": "def ex2(x):\n    raise ValueError('bad \\ud800 message')"},
                  ["raise RuntimeError('cell \\udcff')"], name="ada-\udcff.ipynb"),
         spoiled("error", "ex2"), phrase="bad \\ud800 message", note="cell 32 raised RuntimeError: cell \\udcff"),
    Case("correct-answer-that-warns-on-stderr",
         notebook({"ex1-produce": ("import sys, warnings\n\ndef ex1(x):\n    print('debug: computing', file=sys.stderr)\n"
                                   "    warnings.warn('ex1 is slow on purpose')\n"
                                   "    warnings.warn('this API is old', DeprecationWarning)\n"
                                   "    return (x * x).backward()")}),
         extra=warning_shown),
]
