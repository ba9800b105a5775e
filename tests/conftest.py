"""Shared fixtures: the real assignment released once per session into a temporary folder."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from servers.postgres import postgres_url  # noqa: F401 (a fixture: a real PostgreSQL server, one per test process)

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "01-backward-vs-grad"
SOLUTION = ROOT / "solutions" / ASSIGNMENT
EXAMPLES = ROOT / "examples" / "submissions" / ASSIGNMENT


def run_cli(*args: str, cwd: Path = ROOT, timeout: float = 600,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run `python -m autograder ARGS` as a user would (with `env` over this process's environment); returns
    the completed process (text)."""
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **env} if env else None)


@pytest.fixture(scope="session")
def worker(tmp_path_factory):
    """One warm sandbox worker for the session (what a batch uses): each run is still a fresh fork with
    its own limits. It conceals the solutions and the session's temporary folders."""
    from autograder.sandbox.client import Worker

    with Worker([str(ROOT / "solutions"), str(tmp_path_factory.getbasetemp())]) as w:
        yield w


@pytest.fixture(scope="session")
def released(tmp_path_factory, worker):
    """Release 01 into a temporary assignments/ and build/; returns (assignments_dir, key_path)."""
    from autograder.authoring.release import release
    from autograder.authoring.sweep import QUICK   # the domain check at a few thousand points (the full one:
                                                   # benchmarks/release_domain.py)

    base = tmp_path_factory.mktemp("release")
    r = release(SOLUTION, base / "assignments", base / "build", worker=worker, domain_budget=QUICK)
    return base / "assignments" / ASSIGNMENT, Path(r.key)


@pytest.fixture(scope="session")
def key(released):
    """The full key of 01 (a model.Key)."""
    from autograder.keyfile import load_key

    return load_key(released[1])


_RELEASES: dict[str, tuple] = {}


def release_once(assignment: str, tmp_path_factory, worker) -> tuple:
    """Release `assignment` once per session into a temporary folder: (Release, its full model.Key, with a
    new random fresh-point seed each session)."""
    from autograder.authoring.release import release
    from autograder.authoring.sweep import QUICK
    from autograder.keyfile import load_key

    if assignment not in _RELEASES:
        base = tmp_path_factory.mktemp(f"release-{assignment}")
        r = release(ROOT / "solutions" / assignment, base / "assignments", base / "build", worker=worker, domain_budget=QUICK)
        _RELEASES[assignment] = (r, load_key(r.key))
    return _RELEASES[assignment]


@pytest.fixture
def solution_copy(tmp_path):
    """A writable copy of the solution folder, inside a fake project (solutions/<id>)."""
    dst = tmp_path / "solutions" / ASSIGNMENT
    shutil.copytree(SOLUTION, dst)
    return dst


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium driven by selenium. Fails (never skips) when either is missing."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        pytest.fail("the browser tests need Chromium and its driver on PATH (chromium, chromedriver): run "
                    "scripts/setup.sh as root, or apt-get install -y chromium chromium-driver", pytrace=False)
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("the browser tests need selenium: pip install -e '.[dev]'", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1200,900"):
        options.add_argument(arg)
    d = webdriver.Chrome(service=Service(driver), options=options)
    yield d
    d.quit()


# The fast tier's promise (tests/fast/, README "Tests"), checked: a run of tests/fast alone starts no sandbox
# worker, no Jupyter kernel, no browser and no Dask, so none of their client modules is ever imported here.
FAST_TIER_NEVER_IMPORTS = ("autograder.sandbox.client", "nbclient", "jupyter_client", "selenium", "distributed")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    items = getattr(session, "items", [])
    if not items or any(Path(item.path).parent.name != "fast" for item in items):
        return   # the whole suite, or other files too: the promise is about the fast tier alone
    seen = sorted(name for name in FAST_TIER_NEVER_IMPORTS if name in sys.modules)
    if seen:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print(f"\nthe fast tier imported {', '.join(seen)}: move the test that needs it out of tests/fast/",
              file=sys.stderr)


@pytest.fixture
def deep_folders():
    """make(base, n): n folders nested below `base` ("d/d/..."), made one by one (pathlib's and os's makedirs
    recurse, and so does pytest's clean-up of tmp_path: the chain is removed here, bottom up). Returns the deepest."""
    made: list[str] = []

    def make(base: Path, n: int) -> Path:
        here = str(base)
        os.makedirs(here, exist_ok=True)
        for _ in range(n):
            here = os.path.join(here, "d")
            os.mkdir(here)
            made.append(here)
        return Path(here)

    yield make
    for folder in reversed(made):
        for entry in os.scandir(folder):
            if not entry.is_dir(follow_symlinks=False):
                os.remove(entry.path)
        os.rmdir(folder)


def edited_notebook(source: Path, edits: dict[str, str]) -> str:
    """The notebook at `source` as text, each `old` of `edits` replaced by its `new` in the first code cell that
    holds it (a learner's edit of an example submission)."""
    import nbformat

    nb = nbformat.read(source, as_version=4)
    for old, new in edits.items():
        cell = next(c for c in nb.cells if c.cell_type == "code" and old in c.source)
        cell.source = cell.source.replace(old, new, 1)
    return nbformat.writes(nb)


@pytest.fixture(scope="module")
def course(tmp_path_factory, released):
    """A course service (`autograder serve`, SQLite) with staff prof and students amy, ben, cat, 01 released for it
    (`release --course`'s part: the key uploaded, the course's student folder written)."""
    from types import SimpleNamespace

    from autograder.service.commands import publish
    from servers.course import Service

    folder = tmp_path_factory.mktemp("course")
    svc = Service(folder / "service")
    staff = svc.add("prof", staff=True)["prof"]
    tokens = svc.add("amy", "ben", "cat")
    assignments, key_path = released
    course_json, digest = publish(key_path, svc.url, folder / "student", "token", assignments / "backward-vs-grad.ipynb",
                                 token=staff)
    yield SimpleNamespace(svc=svc, staff=staff, tokens=tokens, student=folder / "student", key_path=key_path,
                          digest=digest, folder=folder)
    svc.stop()


# The test files that take longest (summed durations, 2026-12-07: 440 s down to 100 s), first in the collection, so
# that `-n 3 --dist loadfile` hands them out first and the last file to start is a short one (xdist's own order, by
# number of tests, started tests/test_docs.py, 9 tests and 330 s, among the last: CI's last minutes ran it alone).
# pyproject's addopts keep xdist from reordering (--no-loadscope-reorder). The rest keep their order.
LONGEST_FIRST = ("test_agreement_07_12.py", "test_curriculum.py", "test_docs.py", "test_agreement_01_06.py",
                 "test_dask.py", "test_handin.py", "test_service_scale.py", "test_authoring.py",
                 "test_hostile_corpus.py", "test_nbgrader.py", "test_course.py", "test_batch.py")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(item.path).name, len(rank)))   # stable: within a file, as written
