"""Do the notebooks run in a real Jupyter kernel, with the in-notebook self-check showing the report?"""
import nbformat
from nbclient import NotebookClient

from conftest import SOLUTION


def _outputs(nb, grade_id):
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs)


def test_the_solution_runs_top_to_bottom_and_every_self_check_passes(released):
    out, _ = released
    nb = nbformat.read(SOLUTION / "backward-vs-grad.ipynb", as_version=4)
    NotebookClient(nb, timeout=120, startup_timeout=300, kernel_name="python3", resources={"metadata": {"path": str(out)}}).execute()
    assert "(tensor(6.),)" in _outputs(nb, "worked-example")
    assert "Your parameters: x0 = " in _outputs(nb, "setup")
    for ex in "123456":
        text = _outputs(nb, f"ex{ex}-check")
        assert f"Exercise {ex}" in text and "FAILED" not in text and "missing" not in text, text
        assert "from its own folder" not in text, text   # torch.classes' __file__ is "_classes.py", relative
        assert " ok " in text


def test_the_blank_copy_self_check_shows_missing_and_a_wrong_answer_shows_why(released, tmp_path):
    import shutil

    out = tmp_path   # a folder of its own: commit records of other runs in the released folder stay there
    shutil.copy(released[0] / "public_key.json", out)
    nb = nbformat.read(released[0] / "backward-vs-grad.ipynb", as_version=4)
    next(c for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == "student-id").source = 'STUDENT_ID = "s1"'
    cell = next(c for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == "ex2-produce")
    cell.source = "def ex2(x):\n    (x**2 * torch.sin(x)).backward()\n    return x.grad"
    cell = next(c for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == "ex2-predict")
    cell.source = "p2_returns = (1.0,)\np2_grad = None"   # predictions filled in: committed, so answers are shown
    NotebookClient(nb, timeout=120, startup_timeout=300, kernel_name="python3", resources={"metadata": {"path": str(out)}}).execute()
    one = _outputs(nb, "ex1-check")
    assert one.count("missing") >= 4 and "p1_grad is still ..." in one
    assert "sandbox: none: a self-check observes your code in your own notebook kernel" in one
    two = _outputs(nb, "ex2-check")
    assert "2.produce.returns" in two and "FAILED" in two and "expected a tuple of 1 item" in two
    assert "why it matters" in two
    cell = next(c for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == "ex2-check")
    html = "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)   # what Jupyter shows
    assert html.startswith('<div class="agl-report" style="') and "<table style=" in html   # styled inline
    assert ">2.<wbr>produce.<wbr>returns</code>" in html and ">FAILED</span>" in html


def test_a_slow_check_says_it_is_at_work_and_a_check_cell_shows_only_its_exercises_parameters(released, tmp_path):
    """Issue 46: 12's exercise 8 took about 5 s with no word of progress, and every report of 12 listed its 27
    parameters."""
    import re
    import shutil

    shutil.copy(released[0] / "public_key.json", tmp_path)
    nb = nbformat.read(released[0] / "backward-vs-grad.ipynb", as_version=4)
    next(c for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == "student-id").source = 'STUDENT_ID = "s2"'
    next(c for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == "ex1-produce").source = (
        "import time\n\n\ndef ex1(x):\n    time.sleep(1.0)   # three calls: about 3 s\n    return (x * x).backward()")
    NotebookClient(nb, timeout=120, startup_timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    one, two = _outputs(nb, "ex1-check"), _outputs(nb, "ex2-check")
    assert "checking exercise 1: still at work after 2 s (its calls run your code at several points" in one, one
    assert "still at work" not in two
    assert re.search(r"parameters: x0 = -?[0-9.]+\n", one) and "y0" not in one.split("Exercise 1")[0], one[:600]

