"""Do odd answers and abrupt exits in a submission become check outcomes, never a crash or a lost run?"""
import nbformat
import pytest

from autograder.grading.grade import grade_notebook

from conftest import EXAMPLES


def variant(tmp_path, edits, extra_cells=()):
    """ada's correct notebook with some cells replaced (by nbgrader grade_id) and cells appended; its outputs
    (and so its commit records) cleared: these tests are about code."""
    nb = nbformat.read(EXAMPLES / "ada.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in edits:
            cell.source = edits[gid]
    nb.cells += [nbformat.v4.new_code_cell(src) for src in extra_cells]
    path = tmp_path / "ada.ipynb"
    nbformat.write(nb, path)
    return path


def statuses(report):
    return {o.check_id: o.status for o in report.outcomes}


@pytest.mark.parametrize("literal, phrase", [
    ("10**400", "reading this value raised OverflowError"),
    ("type('Liar', (), {'__repr__': lambda s: s.__repr__()})()", "Liar"),
])
def test_an_unreadable_prediction_fails_only_its_own_check(key, tmp_path, literal, phrase, worker):
    path = variant(tmp_path, {"ex1-predict": f"p1_returns = None\np1_grad = {literal}"})
    r = grade_notebook(path, key, "ada", exercises=["1", "2"], worker=worker)
    s = statuses(r)
    assert s.pop("1.predict.grad") == "failed" and set(s.values()) == {"passed"}
    o = next(o for o in r.outcomes if o.check_id == "1.predict.grad")
    assert phrase in o.observed


def test_a_repr_that_never_ends_is_stopped_by_the_call_limit(key, tmp_path, worker):
    forever = "class Forever:\n    def __repr__(self):\n        while True:\n            pass\n"
    path = variant(tmp_path, {"ex1-predict": forever + "p1_returns = None\np1_grad = Forever()"})
    r = grade_notebook(path, key, "ada", exercises=["1", "5"], worker=worker)
    s = statuses(r)
    assert s.pop("1.predict.grad") == "failed" and set(s.values()) == {"passed"}
    assert "longer than 5 s" in next(o.observed for o in r.outcomes if o.check_id == "1.predict.grad")


def test_a_tensor_subclass_that_raises_put_into_grad_is_a_failed_check(key, tmp_path, worker):
    evil = ("class Evil(torch.Tensor):\n    @classmethod\n    def __torch_function__(cls, *a, **k):\n"
            "        raise RuntimeError('no')\n\n"
            "def ex1(x):\n    (x * x).backward()\n    x.grad = torch.zeros(()).as_subclass(Evil)\n")
    path = variant(tmp_path, {"ex1-produce": evil})
    r = grade_notebook(path, key, "ada", exercises=["1", "2"], worker=worker)
    s = statuses(r)
    assert s["1.produce.grad"] in ("failed", "error") and s["2.produce.returns"] == "passed"


def test_an_exit_at_top_level_costs_only_what_it_prevents_and_names_the_cell(key, tmp_path, worker):
    path = variant(tmp_path, {"ex3-check": "import os\nos._exit(0)"})
    r = grade_notebook(path, key, "ada", worker=worker)
    assert r.status == "graded" and set(statuses(r).values()) == {"passed"}, statuses(r)
    assert any(n.startswith("the run ended during cell 18 ('ex3-check'): the process ended, exit code 0") for n in
               r.notes), r.notes
    assert any(n.startswith('exercise 3: the notebook has no lab.check("3") cell, so it was judged after cell')
               for n in r.notes), r.notes


def test_a_sigkill_in_a_produce_cell_costs_that_exercises_functions_only(key, tmp_path, worker):
    import json

    produce = json.loads((EXAMPLES / "ada.ipynb").read_text())
    source = next("".join(c["source"]) for c in produce["cells"]
                  if c["metadata"].get("nbgrader", {}).get("grade_id") == "ex3-produce")
    path = variant(tmp_path, {"ex3-produce": source + "\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)"})
    r = grade_notebook(path, key, "ada", worker=worker)
    s = statuses(r)
    bad = {k: v for k, v in s.items() if v != "passed"}
    assert bad == {"3.produce.derivative": "error", "3.produce.grad": "error"}, bad
    o = next(o for o in r.outcomes if o.check_id == "3.produce.derivative")
    assert o.message.startswith("ex3 is not defined: cell ") and "('ex3-produce'), which defines it, ended the run " \
        "(the process ended, exit code -9)" in o.message, o.message
    assert any("the run ended during cell" in n and "run again without it" in n for n in r.notes), r.notes


def test_many_failing_cells_keep_the_report_small(key, tmp_path, worker):
    path = variant(tmp_path, {}, [f"raise ValueError('{i}' * 150)" for i in range(60)])
    r = grade_notebook(path, key, "ada", exercises=["1"], worker=worker)
    assert set(statuses(r).values()) == {"passed"}
    assert len(r.notes) == 21 and r.notes[-1] == "… and 41 more notes"   # 60 cells, and no commit record


FORGE = '''import json, os, stat
def is_pipe(fd):
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:   # the listing's own fd, closed by now
        return False
pipes = [int(n) for n in os.listdir("/proc/self/fd") if int(n) > 2 and is_pipe(int(n))]
assert pipes   # the results channel is one of them
for fd in pipes:
    for p in range(3):
        os.write(fd, (json.dumps({"k": "call", "call": "ex1", "point": p, "status": "returned",
                                  "returned": {"t": "none"}}) + "\\n").encode())
    os.write(fd, b"garbage that is not a record\\n")
'''


def test_records_forged_into_the_results_channel_are_not_trusted(key, tmp_path, worker):
    path = variant(tmp_path, {"ex1-produce": "def ex1(x):\n    return 123"}, [FORGE])
    r = grade_notebook(path, key, "ada", exercises=["1", "2"], worker=worker)
    s = statuses(r)
    assert s["1.produce.returns"] == "error" and s["1.produce.grad"] == "error"   # reported twice: tampered
    assert s["2.produce.returns"] == "passed"
    assert any("1 line(s) in the results channel were not written by the grader's probe" in n for n in r.notes)
    assert "twice" in next(o.message for o in r.outcomes if o.check_id == "1.produce.returns")


def test_the_run_folder_cannot_be_changed_by_the_submission(key, tmp_path, worker):
    attack = ("import os\nroot = os.path.dirname(os.getcwd())\n"
              "def attempt(f):\n    try:\n        f()\n        return 'done'\n    except OSError as e:\n        return type(e).__name__\n"
              "fifo = attempt(lambda: os.mkfifo(root + '/output2.txt'))\n"
              "unlink = attempt(lambda: os.unlink(root + '/output.txt'))\n")
    path = variant(tmp_path, {}, [attack])
    r = grade_notebook(path, key, "ada", exercises=["1"], worker=worker)
    assert r.status == "graded" and r.score == 4


def test_an_exception_raised_by_hand_is_not_torch_raising_it(key, tmp_path, worker):
    by_hand = ("def ex6_strict(x, u):\n    raise RuntimeError('One of the differentiated Tensors appears to not have "
               "been used in the graph. Set allow_unused=True if this is the desired behavior.')\n"
               "def ex6_allow_unused(x, u):\n    return torch.autograd.grad(x ** 3, [x, u], allow_unused=True)\n"
               "def ex6_materialize(x, u):\n    return torch.autograd.grad(x ** 3, [x, u], materialize_grads=True)\n")
    path = variant(tmp_path, {"ex6-produce": by_hand})
    r = grade_notebook(path, key, "ada", exercises=["6"], worker=worker)
    o = next(o for o in r.outcomes if o.check_id == "6.produce.strict")
    assert o.status == "failed" and "raised by your own code" in o.message
    assert statuses(r)["6.produce.allow_unused"] == "passed"


def test_an_exception_whose_message_never_ends_costs_only_its_own_checks(key, tmp_path, worker):
    looping = ("class Stuck(Exception):\n    def __str__(self):\n        while True:\n            pass\n\n"
               "def ex1(x):\n    raise Stuck()\n")
    path = variant(tmp_path, {"ex1-produce": looping})
    r = grade_notebook(path, key, "ada", exercises=["1", "2"], worker=worker)
    s = statuses(r)
    assert s["1.produce.returns"] == "error" and s["2.produce.returns"] == "passed"
    assert "could not be read in time" in next(o.message for o in r.outcomes if o.check_id == "1.produce.returns")


def test_terminal_escapes_from_a_submission_are_shown_not_obeyed(key, tmp_path, worker):
    from autograder.render.terminal import render

    path = variant(tmp_path, {"ex1-produce": "def ex1(x):\n    raise ValueError('\\x1b[2J score 26 / 26')\n"})
    text = render(grade_notebook(path, key, "ada", exercises=["1"], worker=worker))
    assert "\x1b" not in text and "\\x1b[2J score 26 / 26" in text


def test_a_process_that_ends_inside_a_produce_function_costs_only_that_functions_checks(key, tmp_path, worker):
    path = variant(tmp_path, {"ex2-produce": "import os\n\ndef ex2(x):\n    os._exit(0)"})
    r = grade_notebook(path, key, "ada", exercises=["1", "2", "3"], worker=worker)
    s = statuses(r)
    assert s.pop("2.produce.returns") == s.pop("2.produce.grad") == "error" and set(s.values()) == {"passed"}
    o = next(o for o in r.outcomes if o.check_id == "2.produce.returns")
    assert "process ended (exit code 0) while ex2(x) was running at x=" in o.message and "(your point)" in o.message
    assert any("the run ended while ex2 was running (your point): the process ended, exit code 0; the notebook was "
               "run again" in n for n in r.notes), r.notes


def test_a_call_still_running_at_the_time_limit_is_named_as_the_one_that_ran_out(key, tmp_path, worker):
    blocked = "import signal, time\n\ndef ex3(x):\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    time.sleep(600)\n"
    path = variant(tmp_path, {"ex3-produce": blocked})
    small = key.with_limits({"submission_timeout": 8})   # below the watchdog's 1.5 * 5 + 2 s for the call
    r = grade_notebook(path, small, "ada", exercises=["2", "3"], worker=worker)
    s = statuses(r)
    assert s.pop("3.produce.derivative") == s.pop("3.produce.grad") == "timeout" and set(s.values()) == {"passed"}
    o = next(o for o in r.outcomes if o.check_id == "3.produce.derivative")
    assert "ex3(x) was still running at x=" in o.message and "when the submission's 8 s limit was reached" in o.message


def test_a_tensor_method_replaced_by_a_loop_is_stopped_by_the_call_limit_as_a_failed_read(key, tmp_path, worker):
    """Reading a returned tensor calls methods looked up on torch.Tensor, which a submission can replace: the
    read stays under the call's alarm, so the check fails at once with what happened (not a timeout of the
    call, which did return, nor a run killed by the worker)."""
    patched = ("def ex2(x):\n    return torch.autograd.grad(x**2 * torch.sin(x), x)\n\n\n"
               "def _loop(self, *a, **k):\n    while True:\n        pass\n\n\ntorch.Tensor.tolist = _loop\n")
    path = variant(tmp_path, {"ex2-produce": patched})
    r = grade_notebook(path, key, "ada", exercises=["2"], worker=worker)
    s = statuses(r)
    assert s["2.produce.returns"] == "failed", (s, [o.observed for o in r.outcomes])
    assert "longer than 5 s" in next(o.observed for o in r.outcomes if o.check_id == "2.produce.returns")
    assert not any("again" in n or "killed" in n for n in r.notes), r.notes
