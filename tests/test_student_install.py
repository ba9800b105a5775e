"""Issue 29: a learner's install has the few packages a self-check needs (no JupyterLab, nbgrader or Dask), and
`autograder check` works in it. Installs into a fresh virtual environment: torch 2.13.0 (CPU) first, as
scripts/setup.sh does, then the project without extras."""
import os
import shutil
import subprocess
import sys

from conftest import ROOT


def _run(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=900, **kw)


def test_a_learner_install_is_light_and_self_checks(tmp_path):
    venv = tmp_path / "venv"
    assert _run(sys.executable, "-m", "venv", str(venv)).returncode == 0
    py = str(venv / "bin" / "python")
    pip = [py, "-m", "pip", "--disable-pip-version-check", "install", "-q"]
    p = _run(*pip, "torch==2.13.0")
    assert p.returncode == 0, p.stderr[-2000:]
    src = tmp_path / "src"   # a copy, so that the build leaves nothing in the checkout
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "build", "out", "*.egg-info",
                                                              "__pycache__", "examples", "tests"))
    p = _run(*pip, str(src))
    assert p.returncode == 0, p.stderr[-2000:]
    names = {line.split("==")[0].split(" @ ")[0].lower() for line in _run(py, "-m", "pip", "freeze").stdout.splitlines()}
    assert {"torch", "sympy", "nbformat", "ipython", "jinja2", "css-inline", "autograd-lab"} <= names, names
    assert not names & {"jupyterlab", "jupyter-server", "nbgrader", "distributed", "tqdm", "notebook"}, names
    work = tmp_path / "my-work"
    shutil.copytree(ROOT / "assignments" / "01-backward-vs-grad", work / "01-backward-vs-grad")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    p = _run(str(venv / "bin" / "autograder"), "check", "01-backward-vs-grad/backward-vs-grad.ipynb", "--student",
             "s1", cwd=work, env=env)
    assert p.returncode == 1 and "score 0 / 26 · 26 missing" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]
