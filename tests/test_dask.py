"""Batch grading on a Dask cluster (`grade --scheduler`): a real LocalCluster of worker processes on this
machine gives the same reports as a local batch, loses nothing when a worker is killed mid-batch, reports a
submission that keeps killing workers as not graded, resumes, and refuses an unreachable scheduler."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import nbformat
import pytest

from conftest import EXAMPLES, ROOT, run_cli

distributed = pytest.importorskip("distributed", reason="pip install 'autograd-lab[dask]'")

SLEEP = 8   # seconds the slow submission's last cell sleeps: long enough to kill its worker meanwhile


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster of 2 worker processes (1 thread each) whose scheduler gives a task up after its
    second worker death (allowed-failures 1), and a client to watch and kill its workers."""
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        lc = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = distributed.Client(lc)
    yield lc, client
    client.close()
    lc.close()


def _both_workers(lc, client) -> None:
    """Wait until the cluster has its 2 workers again. A nanny whose worker was killed while it restarted
    may close for good (distributed closes it, seen once on a busy machine): then start a new one."""
    try:
        client.wait_for_workers(2, timeout=60)
        return
    except TimeoutError:
        pass
    for name, nanny in list(lc.workers.items()):
        if nanny.status.name in ("closing", "closed", "failed"):
            del lc.workers[name]
    lc.sync(lc._correct_state)
    client.wait_for_workers(2, timeout=120)


@pytest.fixture
def scheduler(cluster):
    """The cluster's address, with both workers up (a test before may have killed some)."""
    lc, client = cluster
    _both_workers(lc, client)
    return lc.scheduler_address


def _reports(out):
    return {p.name: json.loads(p.read_text()) for p in sorted((out / "reports").glob("*.json"))}


def _slow_copy(folder, name="slow"):
    """ada's work as `folder`/ada/`name`/ada.ipynb (submission name "ada/<name>/ada.ipynb", graded as ada: her
    folder and her file agree), with a last cell that sleeps SLEEP seconds."""
    nb = nbformat.read(EXAMPLES / "ada.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(f"import time\ntime.sleep({SLEEP})"))
    (folder / "ada" / name).mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / "ada" / name / "ada.ipynb")


def _kill_worker_running(client, task_prefix, deadline):
    """SIGKILL the Dask worker process on which a task whose key starts with `task_prefix` runs, once it has
    run for a second there; returns the worker's address (None if none ran it before `deadline`)."""
    while time.monotonic() < deadline:
        for address, keys in client.processing().items():
            if any(str(k).startswith(task_prefix) for k in keys):
                time.sleep(1.0)
                pid = client.run(os.getpid, workers=[address]).get(address)
                if pid:
                    os.kill(pid, signal.SIGKILL)
                    while address in client.scheduler_info(n_workers=-1)["workers"] and time.monotonic() < deadline:
                        time.sleep(0.05)   # until the scheduler knows: its task is then elsewhere or failed
                    return address
        time.sleep(0.05)
    return None


def test_a_batch_on_the_cluster_gives_the_local_batchs_reports(released, scheduler, tmp_path):
    _, key_path = released
    local = run_cli("grade", str(EXAMPLES), "--out", str(tmp_path / "local"), "--key", str(key_path))
    assert local.returncode == 0, local.stderr
    p = run_cli("grade", str(EXAMPLES), "--out", str(tmp_path / "dask"), "--key", str(key_path),
                "--scheduler", scheduler, "--feedback", "--gradescope", str(tmp_path / "gs"))
    assert p.returncode == 0, p.stderr
    assert f"grading on the Dask cluster at {scheduler}: 2 worker(s)" in p.stderr
    ours, theirs = _reports(tmp_path / "dask"), _reports(tmp_path / "local")
    assert sorted(ours) == sorted(theirs) and len(ours) == len(list(EXAMPLES.glob("*.ipynb")))
    for name, report in ours.items():
        same = theirs[name]
        assert (report["status"], report["score"]) == (same["status"], same["score"])
        differ = [k for k in report if report[k] != same[k]]   # outcomes, notes, commits, isolation: the same
        assert set(differ) <= {"seconds", "graded_by"}, (name, differ)
        assert same["graded_by"] == ""
        assert report["graded_by"].startswith("Dask worker ") and " at tcp://127.0.0.1:" in report["graded_by"]
    assert ours["ada.json"]["score"] == 26 and ours["ivan.json"]["status"] == "not_gradable"
    gradebook = (tmp_path / "dask" / "gradebook.csv").read_text()
    assert gradebook == (tmp_path / "local" / "gradebook.csv").read_text()
    assert (tmp_path / "dask" / "feedback" / "ada.html").is_file() and (tmp_path / "gs" / "ada.json").is_file()
    again = run_cli("grade", str(EXAMPLES), "--out", str(tmp_path / "dask"), "--key", str(key_path),
                    "--scheduler", scheduler)
    n = len(ours)
    assert again.returncode == 0 and f"({n} unchanged since the last run, kept" in again.stdout, again.stdout


def test_a_worker_killed_mid_batch_loses_nothing(released, cluster, scheduler, tmp_path):
    _, key_path = released
    subs = tmp_path / "subs"
    _slow_copy(subs)
    for student in ("ben", "cleo", "dev"):
        shutil.copy(EXAMPLES / f"{student}.ipynb", subs)
    done: dict = {}
    grading = threading.Thread(target=lambda: done.update(p=run_cli(
        "grade", str(subs), "--out", str(tmp_path / "out"), "--key", str(key_path), "--scheduler", scheduler)))
    grading.start()
    killed = _kill_worker_running(cluster[1], "grade-ada/slow/", time.monotonic() + 120)
    grading.join()
    assert killed, "the slow submission never ran"
    assert done["p"].returncode == 0, done["p"].stderr
    reports = _reports(tmp_path / "out")
    assert {n: (r["status"], r["score"]) for n, r in reports.items()} == {
        "ada__slow__ada.json": ("graded", 26), "ben.json": ("graded", 20), "cleo.json": ("graded", 24), "dev.json": ("graded", 21)}
    assert killed not in reports["ada__slow__ada.json"]["graded_by"]   # graded again by a worker that lived


def test_a_submission_whose_workers_keep_dying_is_not_graded_and_the_next_run_grades_it(released, cluster,
                                                                                          scheduler, tmp_path):
    _, key_path = released
    subs = tmp_path / "subs"
    _slow_copy(subs)
    shutil.copy(EXAMPLES / "ben.ipynb", subs)
    done: dict = {}
    grading = threading.Thread(target=lambda: done.update(p=run_cli(
        "grade", str(subs), "--out", str(tmp_path / "out"), "--key", str(key_path), "--scheduler", scheduler)))
    grading.start()
    deadline = time.monotonic() + 180
    first = _kill_worker_running(cluster[1], "grade-ada/slow/", deadline)
    second = _kill_worker_running(cluster[1], "grade-ada/slow/", deadline)
    grading.join()
    assert first and second
    assert done["p"].returncode == 0, done["p"].stderr
    slow = _reports(tmp_path / "out")["ada__slow__ada.json"]
    assert (slow["status"], slow["score"]) == ("not_gradable", None)
    assert slow["reason"].startswith("not graded: every Dask worker that ran it died"), slow["reason"]
    assert "the next run grades it again" in slow["reason"]
    assert _reports(tmp_path / "out")["ben.json"]["score"] == 20
    _both_workers(*cluster)
    again = run_cli("grade", str(subs), "--out", str(tmp_path / "out"), "--key", str(key_path), "--scheduler", scheduler)
    assert again.returncode == 0, again.stderr
    assert "(1 unchanged since the last run, kept" in again.stdout
    assert (_reports(tmp_path / "out")["ada__slow__ada.json"]["status"], _reports(tmp_path / "out")["ada__slow__ada.json"]["score"]) == \
           ("graded", 26)


def test_a_client_killed_mid_batch_finishes_the_rest_when_run_again(released, scheduler, tmp_path):
    _, key_path = released
    subs = tmp_path / "subs"
    shutil.copytree(EXAMPLES, subs)
    for i in range(3):
        _slow_copy(subs, f"slow{i}")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out), "--key", str(key_path),
           "--scheduler", scheduler]
    client = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and len(list((out / "reports").glob("*.json"))) < 3:
        time.sleep(0.05)
    client.send_signal(signal.SIGKILL)
    client.wait()
    written = len(list((out / "reports").glob("*.json")))
    total = len(list(subs.rglob("*.ipynb")))
    assert 3 <= written < total
    p = run_cli("grade", str(subs), "--out", str(out), "--key", str(key_path), "--scheduler", scheduler)
    assert p.returncode == 0, p.stderr
    reports = _reports(out)
    assert len(reports) == total and not list((out / "reports").glob(".*.tmp"))
    assert f"({written} unchanged since the last run, kept" in p.stdout
    assert all(reports[f"ada__slow{i}__ada.json"]["score"] == 26 for i in range(3))


def test_local_n_starts_a_cluster_for_the_batch(released, tmp_path):
    _, key_path = released
    p = run_cli("grade", str(EXAMPLES / "ada.ipynb"), str(EXAMPLES / "ben.ipynb"), "--out", str(tmp_path / "out"),
                "--key", str(key_path), "--scheduler", "local:2")
    assert p.returncode == 0, p.stderr
    assert "grading on a local Dask cluster (local:2): 2 worker(s)" in p.stderr
    reports = _reports(tmp_path / "out")
    assert (reports["ada.json"]["score"], reports["ben.json"]["score"]) == (26, 20)
    assert all(r["graded_by"].startswith("Dask worker ") and " at tls://127.0.0.1:" in r["graded_by"]
               for r in reports.values())   # the local cluster talks TLS: no other account can join it


@pytest.mark.parametrize("address, says", [
    ("tcp://127.0.0.1:9", "cannot reach a Dask scheduler at tcp://127.0.0.1:9"),
    ("local:0", "--scheduler local:N needs a number of workers from 1 to 256, not '0'"),
    ("nonsense://x", "cannot reach a Dask scheduler at nonsense://x"),
])
def test_a_scheduler_that_cannot_be_used_is_an_error_before_anything_is_graded(released, tmp_path, address, says):
    _, key_path = released
    p = run_cli("grade", str(EXAMPLES / "ada.ipynb"), "--out", str(tmp_path / "out"), "--key", str(key_path),
                "--scheduler", address)
    assert p.returncode == 2
    assert says in p.stderr, p.stderr
    assert not (tmp_path / "out").exists()


def test_without_a_scheduler_dask_is_never_imported(released, tmp_path):
    _, key_path = released
    code = ("import sys\nfrom autograder.cli import main\n"
            f"rc = main(['grade', {str(EXAMPLES / 'ada.ipynb')!r}, '--out', {str(tmp_path / 'out')!r}, "
            f"'--key', {str(key_path)!r}])\n"
            "print(rc, sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.stdout.strip().splitlines()[-1] == "0 []", p.stdout + p.stderr


def test_a_cluster_with_a_worker_that_cannot_grade_grades_nothing(key, scheduler, monkeypatch):
    from autograder.integrations import dask as cluster
    from autograder.grading.batch import find_submissions

    [sub] = find_submissions([str(EXAMPLES / "ada.ipynb")], key)
    monkeypatch.setattr(cluster, "__version__", "0.0.0")   # this client ships another version than its workers run
    with cluster.Grid(scheduler) as grid, pytest.raises(cluster.ClusterError) as caught:
        list(grid.grade([sub], key))
    assert str(caught.value).startswith("2 Dask worker(s) cannot grade, so nothing was graded: Dask worker ")
    assert f"has autograd-lab 0.1.0+{cluster.CODE}, the client 0.0.0+{cluster.CODE}: install the same version (the " \
           "same code) on every worker" in str(caught.value)


def test_the_key_leaves_the_cluster_when_the_client_that_shipped_it_is_killed(released, cluster, scheduler, tmp_path):
    _, key_path = released
    subs = tmp_path / "subs"
    _slow_copy(subs)
    client = cluster[1]
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(tmp_path / "out"), "--key",
           str(key_path), "--scheduler", scheduler]
    grading = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120

    def keys_on_workers():
        return {a: sorted(n for n in names if n.startswith("autograd-lab-key-"))
                for a, names in client.run(lambda dask_worker: list(dask_worker.plugins)).items()}
    while time.monotonic() < deadline and not any(keys_on_workers().values()):
        time.sleep(0.1)
    assert any(keys_on_workers().values()), "the key never reached the workers"
    grading.send_signal(signal.SIGKILL)
    grading.wait()
    while time.monotonic() < deadline and any(keys_on_workers().values()):
        time.sleep(0.1)
    assert keys_on_workers() and not any(keys_on_workers().values())
    assert not [n for n in client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.worker_plugins))
                if n.startswith("autograd-lab-")]


@pytest.mark.parametrize("server, says", [
    ("silent", "(nothing answered as a Dask scheduler within 15 s (a dashboard's or another server's port?))"),
    ("talks", "(what answers there does not speak Dask's protocol (MemoryError: "),
    ("worker", "speaks Dask's protocol but is not a scheduler"),
])
def test_an_address_where_no_scheduler_answers_is_an_error_within_seconds(released, cluster, scheduler, tmp_path,
                                                                           server, says):
    import socket

    _, key_path = released
    if server == "worker":
        address = next(iter(cluster[1].scheduler_info()["workers"]))
    else:
        listener = socket.create_server(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{listener.getsockname()[1]}"
        kept = []

        def serve():
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                kept.append(conn)
                if server == "talks":   # an SSH-like banner, then bytes Dask reads as a frame length
                    conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n" + b"\xff" * 64)
        threading.Thread(target=serve, daemon=True).start()
    start = time.monotonic()
    p = run_cli("grade", str(EXAMPLES / "ada.ipynb"), "--out", str(tmp_path / "out"), "--key", str(key_path),
                "--scheduler", address)
    assert p.returncode == 2 and says in p.stderr, p.stderr
    assert time.monotonic() - start < 60 and not (tmp_path / "out").exists()
    if server != "worker":
        listener.close()


def test_a_batch_whose_cluster_loses_every_worker_ends_with_not_graded_reports(released, tmp_path):
    _, key_path = released
    subs = tmp_path / "subs"
    _slow_copy(subs)
    shutil.copy(EXAMPLES / "ben.ipynb", subs)
    scheduler, address = _scheduler_process()
    try:
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--no-nanny",
                                   "--nthreads", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = distributed.Client(address)
        client.wait_for_workers(1, timeout=120)
        done: dict = {}
        grading = threading.Thread(target=lambda: done.update(p=run_cli(
            "grade", str(subs), "--out", str(tmp_path / "out"), "--key", str(key_path), "--scheduler", address,
            env={"AUTOGRAD_LAB_WORKERS_TIMEOUT": "5"})))
        grading.start()
        assert _kill_worker_running(client, "grade-ada/slow/", time.monotonic() + 120)
        worker.wait()
        grading.join()
        client.close()
    finally:
        scheduler.kill()
        scheduler.wait()
    p = done["p"]
    assert p.returncode == 0, p.stderr
    assert "the Dask cluster has no workers left: waiting up to 5 s for one" in p.stderr
    slow = _reports(tmp_path / "out")["ada__slow__ada.json"]
    assert (slow["status"], slow["score"]) == ("not_gradable", None)
    assert slow["reason"].startswith("not graded: the Dask cluster lost all its workers and none joined within 5 s")


def _scheduler_process():
    """A `dask scheduler` of its own on 127.0.0.1: (process, address)."""
    proc = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port",
                             "0", "--dashboard-address", ":0"], stderr=subprocess.PIPE, text=True)
    address = ""
    while not address:
        line = proc.stderr.readline()
        assert line, "the scheduler did not start"
        if "Scheduler at:" in line:
            address = line.split("Scheduler at:")[1].strip()
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return proc, address


def test_a_worker_that_cannot_isolate_submissions_is_refused_before_anything_is_graded(released, tmp_path):
    _, key_path = released
    scheduler, address = _scheduler_process()
    env = {**os.environ, "PATH": str(ROOT / ".venv" / "bin")}   # no bwrap on this worker's PATH
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = distributed.Client(address)
        client.wait_for_workers(1, timeout=120)
        client.close()
        p = run_cli("grade", str(EXAMPLES / "ada.ipynb"), "--out", str(tmp_path / "out"), "--key", str(key_path),
                    "--scheduler", address)
    finally:
        worker.kill()
        scheduler.kill()
        worker.wait()
        scheduler.wait()
    assert p.returncode == 2, p.stderr
    assert "1 Dask worker(s) cannot grade, so nothing was graded: Dask worker" in p.stderr
    assert "cannot isolate submissions (own process only (bwrap is not installed)" in p.stderr, p.stderr
    assert "a submission could reach the scheduler and every worker: install bubblewrap there" in p.stderr
    assert not list((tmp_path / "out" / "reports").glob("*.json"))


def test_odd_file_names_travel_to_the_workers(released, scheduler, tmp_path):
    _, key_path = released
    subs = tmp_path / "subs"
    (subs / os.fsdecode(b"d\xe9v")).mkdir(parents=True)
    shutil.copy(EXAMPLES / "ada.ipynb", subs / os.fsdecode(b"b\xe9n-\xff.ipynb"))   # not UTF-8
    shutil.copy(EXAMPLES / "dev.ipynb", subs / os.fsdecode(b"d\xe9v") / "backward-vs-grad.ipynb")
    shutil.copy(EXAMPLES / "ada.ipynb", subs / ("a" * 240 + ".ipynb"))
    shutil.copy(EXAMPLES / "ada.ipynb", subs)
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out), "--key",
                        str(key_path), "--scheduler", scheduler], cwd=ROOT, capture_output=True, text=True,
                       errors="replace")
    assert p.returncode == 0, p.stderr
    reports = list((out / "reports").glob("*.json"))
    assert len(reports) == 4
    by_status = sorted((json.loads(r.read_text())["status"], json.loads(r.read_text())["graded_by"] != "")
                       for r in reports)
    assert by_status == [("graded", True), ("not_gradable", True), ("not_gradable", True), ("not_gradable", True)]


def test_a_worker_that_cannot_grade_and_joins_mid_batch_takes_no_submission_away(released, cluster, scheduler,
                                                                                  tmp_path):
    _, key_path = released
    subs = tmp_path / "subs"
    for i in range(6):
        _slow_copy(subs, f"slow{i}")
    done: dict = {}
    grading = threading.Thread(target=lambda: done.update(p=run_cli(
        "grade", str(subs), "--out", str(tmp_path / "out"), "--key", str(key_path), "--scheduler", scheduler)))
    grading.start()
    while not any(str(k).startswith("grade-") for ks in cluster[1].processing().values() for k in ks):
        assert grading.is_alive(), done["p"].stderr[-3000:]   # a batch that ended (or failed) before any grading
        time.sleep(0.05)
    env = {**os.environ, "PATH": str(ROOT / ".venv" / "bin")}   # no bwrap: it cannot isolate a run
    late = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", scheduler, "--nthreads", "1",
                             "--name", "late"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        grading.join()
    finally:
        late.kill()
        late.wait()
    assert done["p"].returncode == 0, done["p"].stderr
    reports = _reports(tmp_path / "out")
    assert len(reports) == 6
    assert {(r["status"], r["score"]) for r in reports.values()} == {("graded", 26)}
    assert not any("late" in r["graded_by"] for r in reports.values())


def test_a_course_batch_on_the_cluster_grades_with_the_services_commits(course, scheduler, tmp_path):
    """grade --service with no paths and --scheduler: the hand-ins graded on the cluster, with the commits the
    service holds (they travel with the key), the same reports as on this machine, sent back once."""
    from servers.course import call
    from test_course import _body, _cell

    api = course.svc.url + "/api/v1"
    status, answer = call(api + "/predictions", course.tokens["amy"], "POST", _body("amy", 1.25))
    assert status == 200 and answer["kind"] == "commit"
    for who in ("amy", "ben"):
        nb = nbformat.read(EXAMPLES / "ada.ipynb", as_version=4)
        _cell(nb, "student-id").source = f'STUDENT_ID = "{who}"'
        status, answer = call(api + "/assignments/01-backward-vs-grad/handins", course.tokens[who], "POST",
                              raw=nbformat.writes(nb).encode())
        assert status == 201, answer
    env = {"AUTOGRAD_LAB_TOKEN": course.staff}
    args = ("grade", "--service", course.svc.url, "--assignment", "01-backward-vs-grad", "--key", str(course.key_path))
    local = run_cli(*args, "--out", str(tmp_path / "local"), env=env)
    assert local.returncode == 0, local.stderr
    p = run_cli(*args, "--out", str(tmp_path / "dask"), "--scheduler", scheduler, env=env)
    assert p.returncode == 0, p.stderr
    assert f"grading on the Dask cluster at {scheduler}" in p.stderr and "reports: 0 new sent" in p.stderr
    ours, theirs = _reports(tmp_path / "dask"), _reports(tmp_path / "local")
    assert sorted(ours) == ["amy.json", "ben.json"]
    for name, report in ours.items():
        differ = [k for k in report if report[k] != theirs[name][k]]
        assert set(differ) <= {"seconds", "graded_by"}, (name, differ)
        assert report["graded_by"].startswith("Dask worker ")
    grad = {o["check_id"]: o for o in ours["amy.json"]["outcomes"]}["1.predict.grad"]
    assert grad["observed"] == "1.25"   # the service's commit, not the notebook's -2.36
    ben = {o["check_id"]: o for o in ours["ben.json"]["outcomes"]}["1.predict.grad"]
    assert ben["score"] == 0 and "not committed on the course service" in ben["message"]
