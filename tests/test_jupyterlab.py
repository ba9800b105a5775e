"""Issue 29, "The learner's day in real JupyterLab": JupyterLab started on 127.0.0.1 on a learner's own folder,
driven in headless Chromium through selenium as a learner would (typing into the cells' editors, Shift+Enter,
the command palette): set STUDENT_ID, check before the predictions are filled in (nothing revealed), fill them
in and write the PRODUCE function, check (committed, then revealed), revise, restart and run all; then the saved
notebook reopened in a JupyterLab with a fresh data folder, where it is untrusted. Asserts what is visible:
badge colours, text alignment, the expected values only after the commit, the commit and revision lines.
Screenshots go to the test's temporary folder."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


from conftest import ROOT

TOKEN = "learner-day"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A JupyterLab server of its own (config, data, runtime, settings and workspace folders under `home`) on the
    folder `root`: a fresh data folder holds no notebook signatures, so what it opens is untrusted."""

    def __init__(self, root: Path, home: Path) -> None:
        self.port = _free_port()
        env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_DATA_DIR": str(home / "data"),
               "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
               "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"), "IPYTHONDIR": str(home / "ipython")}
        news = home / "settings" / "@jupyterlab" / "apputils-extension"
        news.mkdir(parents=True)
        (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
        self.log = home / "jupyterlab.log"
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(
                [str(Path(sys.executable).with_name("jupyter")), "lab", "--no-browser", "--allow-root",
                 "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", f"--ServerApp.token={TOKEN}",
                 f"--ServerApp.root_dir={root}"], env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        end = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/status?token={TOKEN}", timeout=5)
                return
            except OSError:
                assert self.proc.poll() is None and time.monotonic() < end, self.log.read_text()[-3000:]
                time.sleep(0.2)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/lab/tree/{path}?token={TOKEN}"

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


class Learner:
    """What a learner does in the open notebook, through the browser only."""

    def __init__(self, driver, shots: Path) -> None:
        from selenium.webdriver.support.ui import WebDriverWait

        self.d, self.shots = driver, shots
        self.wait = WebDriverWait(driver, 120, poll_frequency=0.2)

    def open(self, url: str) -> None:
        from selenium.webdriver.common.by import By

        self.d.get(url)
        self.wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell")) > 20)
        self.idle()

    def cells(self):
        from selenium.webdriver.common.by import By

        return self.d.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell")

    def cell(self, starts: str):
        """The first cell whose editor text starts with `starts`."""
        from selenium.webdriver.common.by import By

        for c in self.cells():
            self.d.execute_script("arguments[0].scrollIntoView({block: 'center'})", c)
            editor = c.find_elements(By.CSS_SELECTOR, ".cm-content")
            if editor and editor[0].text.startswith(starts):
                return c
        self.shot("no-such-cell")
        texts = [e.text[:60] for c in self.cells() for e in c.find_elements(By.CSS_SELECTOR, ".cm-content")][:4]
        raise AssertionError(f"no cell starts with {starts!r}; the first are {texts}")

    def idle(self) -> None:
        from selenium.webdriver.common.by import By

        time.sleep(0.3)   # the indicator turns busy a moment after a cell is sent
        self.wait.until(lambda d: d.find_element(By.CSS_SELECTOR, ".jp-Notebook-ExecutionIndicator")
                        .get_attribute("data-status") == "idle")

    def type_into(self, starts: str, lines: list[str]) -> None:
        """Replace the cell's text: click into its editor, select all, type each line (the editor indents after a
        `def` line itself, so lines are typed without their indentation), as a learner types."""
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys

        editor = self.cell(starts).find_element(By.CSS_SELECTOR, ".cm-content")
        editor.click()
        ActionChains(self.d).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).send_keys(Keys.DELETE).perform()
        for i, line in enumerate(lines):
            if i:
                ActionChains(self.d).send_keys(Keys.ENTER).perform()
            ActionChains(self.d).send_keys(line.lstrip()).perform()

    def run(self, starts: str) -> None:
        """Click into the cell and press Shift+Enter; wait until its prompt shows a new execution count (not the
        one before, not [*]: on a busy machine the kernel may start the cell late), then until the kernel is idle."""
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys

        cell = self.cell(starts)
        prompt = cell.find_element(By.CSS_SELECTOR, ".jp-InputPrompt")
        before = prompt.text
        cell.find_element(By.CSS_SELECTOR, ".cm-content").click()
        ActionChains(self.d).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()
        self.wait.until(lambda d: prompt.text not in (before, "[*]:") and "*" not in prompt.text)
        self.idle()

    def command(self, label: str) -> None:
        """Run a command from the command palette (Ctrl+Shift+C), by its label."""
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys

        ActionChains(self.d).send_keys(Keys.ESCAPE).perform()
        ActionChains(self.d).key_down(Keys.CONTROL).key_down(Keys.SHIFT).send_keys("c").key_up(Keys.SHIFT) \
            .key_up(Keys.CONTROL).perform()
        time.sleep(0.5)
        ActionChains(self.d).send_keys(label).perform()
        time.sleep(0.5)
        ActionChains(self.d).send_keys(Keys.ENTER).perform()

    def report(self, exercise: str):
        """The report under the cell `lab.check("<exercise>")`."""
        from selenium.webdriver.common.by import By

        cell = self.cell(f'lab.check("{exercise}")')
        self.wait.until(lambda d: cell.find_elements(By.CSS_SELECTOR, ".agl-report"))
        return cell.find_element(By.CSS_SELECTOR, ".agl-report")

    def style(self, element, prop: str) -> str:
        return self.d.execute_script(f"return getComputedStyle(arguments[0])[{json.dumps(prop)}]", element)

    def shot(self, name: str, element=None) -> None:
        if element is not None:
            self.d.execute_script("arguments[0].scrollIntoView({block: 'start'})", element)
        self.d.save_screenshot(str(self.shots / f"{name}.png"))


def _looks_right(learner: Learner, report) -> None:
    """The report as report.css draws it, trusted or not: a tinted, bordered badge per status, left-aligned cells
    (JupyterLab right-aligns td), the padded report box."""
    from selenium.webdriver.common.by import By

    passed = report.find_element(By.CSS_SELECTOR, ".agl-st-passed")
    assert learner.style(passed, "backgroundColor") == "rgb(218, 251, 225)", learner.style(passed, "backgroundColor")
    assert learner.style(passed, "color") == "rgb(17, 99, 41)"
    assert learner.style(passed, "borderTopStyle") == "solid"
    title = report.find_element(By.CSS_SELECTOR, "tr.agl-check td:nth-child(2)")
    assert learner.style(title, "textAlign") == "left"
    assert learner.style(report, "paddingTop") == "16px" and learner.style(report, "backgroundColor") == "rgb(255, 255, 255)"


def test_a_learners_day_in_jupyterlab_and_the_notebook_reopened_untrusted(tmp_path, browser):
    from selenium.webdriver.common.by import By

    work = tmp_path / "my-work"
    shutil.copytree(ROOT / "assignments" / "01-backward-vs-grad", work / "01-backward-vs-grad")
    shots = tmp_path / "screenshots"
    shots.mkdir()
    browser.set_window_size(1400, 1000)
    lab = Lab(work, tmp_path / "jupyter-a")
    try:
        me = Learner(browser, shots)
        me.open(lab.url("01-backward-vs-grad/backward-vs-grad.ipynb"))
        files = browser.find_element(By.CSS_SELECTOR, ".jp-DirListing-content").text
        assert "backward-vs-grad.ipynb" in files and "solutions" not in files   # the learner's own folder

        me.run('STUDENT_ID = "your-student-id"')   # a learner who runs the cells before setting the id
        me.run("import math")
        me.run("# PREDICT 1")
        me.run('lab.check("1")')
        warned = me.report("1").find_element(By.CSS_SELECTOR, "header .agl-idnote")   # at the top, above the checks
        assert warned.text.startswith("Warning: STUDENT_ID is still 'your-student-id'"), warned.text
        me.type_into('STUDENT_ID = "your-student-id"', ['STUDENT_ID = "s1234567"'])
        me.run('STUDENT_ID = "s1234567"')
        me.run("import math")
        setup = me.cell("import math").find_element(By.CSS_SELECTOR, ".jp-OutputArea").text
        assert "Your parameters: x0 = " in setup and "your-student-id" not in setup, setup
        me.run("# PREDICT 1")   # the placeholders, as released
        me.run('lab.check("1")')   # nothing filled in yet: nothing is revealed
        first = me.report("1")
        assert not first.find_elements(By.CSS_SELECTOR, ".agl-idnote")
        assert "p1_returns is still ..." in first.text and "expected" not in first.text.split("score")[1], first.text
        me.shot("1-before-predicting", first)

        me.type_into("# PREDICT 1", ["# PREDICT 1", "p1_returns = None", "p1_grad = 3 * P.x0"])   # p1_grad is wrong
        me.run("# PREDICT 1")
        me.type_into("def ex1(x):", ["def ex1(x):", "return (x * x).backward()"])
        me.run("def ex1(x):")
        me.run('lab.check("1")')
        report = me.report("1")
        text = report.text
        assert "1.predict.grad" in text and "FAILED" in text and "committed" in text, text
        assert "expected" in text and "why it matters" in text   # committed, so revealed
        assert "misconception" not in text or "name" in text
        _looks_right(me, report)
        failed = report.find_element(By.CSS_SELECTOR, ".agl-st-failed")
        assert me.style(failed, "color") == "rgb(164, 14, 38)", me.style(failed, "color")
        me.shot("2-committed-and-revealed", report)

        me.type_into("# PREDICT 1", ["# PREDICT 1", "p1_returns = None", "p1_grad = 2 * P.x0"])   # revised
        me.run("# PREDICT 1")
        me.run('lab.check("1")')
        text = me.report("1").text
        assert "revised after the answer was shown" in text and "the revised value would pass" in text, text
        me.shot("3-revised", me.report("1"))

        me.command("Restart Kernel and Run All Cells")
        accept = me.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".jp-Dialog .jp-mod-accept"))
        accept[0].click()
        me.wait.until(lambda d: "committed" in me.report("1").text and "Exercise 6" in me.report("6").text)
        me.idle()
        text = me.report("1").text
        assert "revised after the answer was shown" in text and "committed" in text   # the first commit holds
        me.command("Save Notebook")
        time.sleep(1.5)
    finally:
        lab.close()

    path = work / "01-backward-vs-grad" / "backward-vs-grad.ipynb"
    saved = json.loads(path.read_text())
    assert any("agl-report" in "".join(o.get("data", {}).get("text/html", "")) for c in saved["cells"]
               for o in c.get("outputs", []))
    # a witness that the reopened notebook is untrusted: a <style> block in an output, which the sanitizer drops
    witness = '<style>.agl-witness { color: rgb(1, 2, 3); }</style><span class="agl-witness">witness</span>'
    saved["cells"][0 if saved["cells"][0]["cell_type"] == "code" else 1]["outputs"] = [
        {"output_type": "display_data", "data": {"text/html": witness}, "metadata": {}}]
    path.write_text(json.dumps(saved))
    other = Lab(work, tmp_path / "jupyter-b")   # a fresh data folder: no signature, so the notebook is untrusted
    try:
        me.open(other.url("01-backward-vs-grad/backward-vs-grad.ipynb"))
        report = me.report("1")
        span = browser.find_element(By.CSS_SELECTOR, ".agl-witness")
        assert me.style(span, "color") != "rgb(1, 2, 3)"   # untrusted: the <style> block was dropped
        _looks_right(me, report)
        assert "revised after the answer was shown" in report.text
        me.shot("4-reopened-untrusted", report)
    finally:
        other.close()


def _output(learner: Learner, starts: str) -> str:
    from selenium.webdriver.common.by import By

    return "\n".join(e.text for e in learner.cell(starts).find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output"))


def test_a_course_day_in_jupyterlab_check_seal_commit_hand_in_grade_release_and_read_the_feedback(
        tmp_path, browser, released, monkeypatch):
    """Issue 46, "a course day, start to finish", in real JupyterLab on a course's copy of 01 (a course service of its
    own): the notebook says how the course works; a check before the predictions is sealed, the first full check
    commits and reveals; the learner saves and hands in from the notebook; a later check says the hand-in that counts
    is older; staff grade the hand-ins and release the feedback; the learner reads it in the notebook."""
    from selenium.webdriver.common.by import By

    from autograder.service.commands import publish
    from conftest import ASSIGNMENT, run_cli
    from servers.course import Service

    assignments, key_path = released
    svc = Service(tmp_path / "service")
    try:
        staff = svc.add("prof", staff=True)["prof"]
        token = svc.add("amy")["amy"]
        publish(key_path, svc.url, tmp_path / "course", "token", assignments / "backward-vs-grad.ipynb", token=staff)
        work = tmp_path / "my-work"
        shutil.copytree(tmp_path / "course", work / "01")   # amy copies the course's folder
        monkeypatch.setenv("AUTOGRAD_LAB_TOKEN", token)   # her token (autograder login saves it; the env works too)
        shots = tmp_path / "screenshots"
        shots.mkdir()
        browser.set_window_size(1400, 1000)
        lab = Lab(work, tmp_path / "jupyter")
        try:
            me = Learner(browser, shots)
            me.open(lab.url("01/backward-vs-grad.ipynb"))
            intro = " ".join(e.text for e in browser.find_elements(By.CSS_SELECTOR, ".jp-MarkdownOutput"))
            assert "In this course" in intro and "keeps the record of your work" in intro and "sealed" in intro

            me.type_into('STUDENT_ID = "your-student-id"', ['STUDENT_ID = "amy"'])
            me.run('STUDENT_ID = "amy"')
            me.run("import math")
            me.run("# PREDICT 1")
            me.run('lab.check("1")')   # nothing filled in: sealed, nothing revealed
            first = me.report("1").text
            assert "p1_returns is still ..." in first and "expected" not in first.split("score")[1], first

            me.type_into("# PREDICT 1", ["# PREDICT 1", "p1_returns = None", "p1_grad = 3 * P.x0"])   # p1_grad wrong
            me.run("# PREDICT 1")
            me.type_into("def ex1(x):", ["def ex1(x):", "return (x * x).backward()"])
            me.run("def ex1(x):")
            me.run('lab.check("1")')   # committed by the service, then revealed
            text = me.report("1").text
            assert "committed" in text and "FAILED" in text and "expected" in text, text
            me.shot("1-committed", me.report("1"))

            me.command("Save Notebook")
            time.sleep(1.5)
            me.run("lab.submit()")
            receipt = _output(me, "lab.submit()")
            assert receipt.startswith("handed in 01-backward-vs-grad as amy at ") and \
                "It is the hand-in that counts now." in receipt, receipt
            me.run('lab.check("1")')   # after the hand-in: the hand-in that counts is older than this check
            again = me.report("1").text
            assert "your hand-in that counts is of " in again
            assert "a copied cell" not in again, again   # the same check cell run a third time: one cell (its cellId)

            env = {"AUTOGRAD_LAB_TOKEN": staff}
            r = run_cli("grade", "--service", svc.url, "--assignment", ASSIGNMENT, "--key", str(key_path), "--out",
                        str(tmp_path / "out"), env=env)
            assert r.returncode == 0 and "reports: 1 new sent to the course service" in r.stderr, r.stderr
            r = run_cli("course", "release-feedback", ASSIGNMENT, "--service", svc.url, env=env)
            assert r.returncode == 0 and f"feedback of {ASSIGNMENT} released at " in r.stdout, r.stdout + r.stderr
            me.run("lab.feedback()")
            shown = _output(me, "lab.feedback()")
            # the report as Jupyter shows it (HTML), the hand-in's line among its notes: 1 + 2 of exercise 1's 4 points
            assert "note: graded hand-in of " in shown and ": no deadline; score 3 / 26" in shown, shown
            assert "1.predict.grad" in shown and "FAILED" in shown   # the graded report, as handed in
            me.shot("2-feedback")
        finally:
            lab.close()
    finally:
        svc.stop()
