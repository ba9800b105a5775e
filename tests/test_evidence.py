"""A misconception is named only where its own evidence holds (issue "Right grades ... round two"): for a produce
check, what the code observably did (it ran backward(), a warning it emitted, another gradient it left), not the
value alone. Real submissions, graded in the sandbox."""
from __future__ import annotations

import pytest

from autograder.grading.grade import grade_notebook

from conftest import ROOT, edited_notebook, release_once


def _outcome(assignment, tmp_path_factory, worker, check_id, edits):
    _, key = release_once(assignment, tmp_path_factory, worker)
    report = grade_notebook("ada.ipynb", key, "ada", data=edited_notebook(ROOT / "examples" / "submissions" / assignment / "ada.ipynb",
                                                                edits).encode(), worker=worker)
    return next(o for o in report.outcomes if o.check_id == check_id)


@pytest.mark.parametrize("body, named", [
    ("    return None", "backward-never-called"),                                   # no backward() at all
    ("    out = (x * x).backward()\n    x.grad = None\n    return out", "backward-stores-nothing"),
])
def test_x_grad_none_is_named_by_whether_ex1_ran_backward(body, named, tmp_path_factory, worker):
    o = _outcome("01-backward-vs-grad", tmp_path_factory, worker, "1.produce.grad",
                 {"def ex1(x):\n    return (x * x).backward()": "def ex1(x):\n" + body})
    assert o.status == "failed" and o.misconception is not None and o.misconception.id == named


@pytest.mark.parametrize("returned, named", [
    ("return grad_b, grad_a", "gradients-swapped"),
    ("return grad_a, grad_output * e", "forgot-the-factor-a"),
])
def test_a_wrong_y_grad_of_exp_y_is_named_by_what_x_grad_shows(returned, named, tmp_path_factory, worker):
    """y.grad = e^y comes from swapped gradients (then x.grad = x e^y) or from a lost factor a (x.grad right)."""
    o = _outcome("09-forward-mode-and-functions", tmp_path_factory, worker, "5.produce.y_grad",
                 {"return grad_a, grad_b": returned})
    assert o.status == "failed" and o.misconception is not None and o.misconception.id == named


def test_scaler_without_device_is_named_only_where_the_call_made_a_scaler_without_a_device(tmp_path_factory, worker):
    scaler = 'scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** k)\n    x_bad = x.clone()'
    without_device = _outcome("10-training-loops", tmp_path_factory, worker, "4.produce.inf",
                              {scaler: "scaler = torch.amp.GradScaler(init_scale=2.0 ** k)\n    x_bad = x.clone()"})
    assert without_device.status == "failed" and without_device.misconception.id == "scaler-without-device"
    disabled = _outcome("10-training-loops", tmp_path_factory, worker, "4.produce.inf",   # "cpu", but disabled:
                        {scaler: 'scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** k, enabled=False)\n'
                                 '    x_bad = x.clone()'})                               # the same values, no warning
    assert disabled.status == "failed" and disabled.misconception is None


@pytest.mark.parametrize("assignment, check_id, edits, named", [
    ("10-training-loops", "3.produce.step",   # opt.step() where scaler.step(opt) belongs
     {"    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n    return (w.detach()":
      "    scaler.scale(loss).backward()\n    opt.step()\n    scaler.update()\n    return (w.detach()"},
     "step-without-the-scaler"),
    ("10-training-loops", "3.produce.step",   # update() before step()
     {"    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n    return (w.detach()":
      "    scaler.scale(loss).backward()\n    scaler.update()\n    scaler.step(opt)\n    return (w.detach()"},
     "step-without-the-scaler"),
    ("09-forward-mode-and-functions", "5.produce.needs", {"        ctx.save_for_backward(a, e)\n": ""},
     "nothing-saved-for-backward"),
    ("09-forward-mode-and-functions", "9.produce.gradcheck",
     {"return torch.autograd.gradcheck(Cube.apply, (w,))": "return torch.autograd.gradcheck(Cube, (w,))"},
     "gradcheck-of-the-class"),
    ("09-forward-mode-and-functions", "9.produce.float32",
     {"return torch.autograd.gradcheck(Cube.apply, (w32,))": "return torch.autograd.gradcheck(Cube, (w32,))"},
     "gradcheck-of-the-class"),
])
def test_a_mistake_that_ends_in_a_cryptic_torch_error_is_named(assignment, check_id, edits, named, tmp_path_factory,
                                                              worker):
    o = _outcome(assignment, tmp_path_factory, worker, check_id, edits)
    assert o.status in ("error", "failed") and o.misconception is not None and o.misconception.id == named, o


def test_an_exception_of_the_same_class_with_another_message_names_nothing(tmp_path_factory, worker):
    o = _outcome("10-training-loops", tmp_path_factory, worker, "3.produce.step",
                 {"    scaler.update()\n    return (w.detach().clone(), scaler.get_scale())":
                  "    scaler.update()\n    assert False, 'mine'"})
    assert o.status == "error" and o.misconception is None
