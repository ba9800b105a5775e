"""dask: batch grading on a Dask cluster (`autograder grade --scheduler ADDRESS|local:N`). The client side
(`Grid`) connects to a scheduler, ships the key once per Dask worker (a worker plugin, `KeyPlugin`), sends each
submission as bytes with where its student id comes from and the key's id, and yields each report, parsed from
JSON, as its task completes. The worker side (`KeyPlugin`, `grade_on_worker`) keeps one warm sandbox.Worker per
Dask worker process for the life of the plugin and grades every submission in a fresh sandboxed fork of it,
exactly as a local batch does. Only `autograder.grading.batch`'s caller imports this module, and only with
`--scheduler`: without it, Dask is never imported.

Faults: a task whose Dask worker died is run again on another worker by the scheduler; after the scheduler's
`distributed.scheduler.allowed-failures` deaths (Dask's default: 3) it gives up with KilledWorker, and the
submission gets a "not graded:" report that says so (graded again by the next run, never scored 0). A
scheduler plugin (`KeyReaper`) unregisters the key when the client that shipped it leaves, killed or not.

May import: stdlib, dask, distributed, autograder.version, autograder.grading.grade, autograder.grading.identity,
autograder.keyfile, autograder.model, autograder.report, autograder.sandbox.client.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import dask
from distributed import Client, KilledWorker, LocalCluster, get_worker, wait
from distributed.diagnostics.plugin import SchedulerPlugin, WorkerPlugin

from autograder.version import __version__
from autograder.grading import identity
from autograder.grading.grade import grade_notebook, not_gradable_report
from autograder.keyfile import from_json, to_json
from autograder.model import Key
from autograder.report import Report

CONNECT_TIMEOUT = 10.0    # seconds to reach a scheduler before `grade` gives up (exit 2)
# seconds to wait for a worker when the scheduler has none (at the start, or after losing them all)
def _seconds(text: str | None, default: float) -> float:
    try:
        return max(1.0, float(text)) if text else default
    except ValueError:
        return default


WORKERS_TIMEOUT = _seconds(os.environ.get("AUTOGRAD_LAB_WORKERS_TIMEOUT"), 60.0)
PLUGIN_PREFIX = "autograd-lab-key-"
REAPER_PREFIX = "autograd-lab-reaper-"


class ClusterError(Exception):
    """The cluster cannot grade, and nothing was graded: the scheduler cannot be reached or is not one, it
    has no workers, the address is not one, or a worker cannot grade (another autograder version, no
    sandbox)."""


def _code_digest() -> str:
    """sha256 (hex, 16 characters) of this autograder package's source files: workers must run the very
    code the client runs, not only the same version number."""
    root = Path(__file__).resolve().parent.parent   # the whole package: autograder/
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


CODE = _code_digest()


def key_id(key: Key) -> str:
    """The id a key is shipped under: sha256 of its JSON form as the grader holds it (limits given with
    `--limit` included), hex, first 16 characters. Two batches with the same key share it."""
    text = json.dumps(to_json(key), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class KeyPlugin(WorkerPlugin):
    """Runs in each Dask worker process: holds the key (from its JSON form) and one warm sandbox.Worker,
    started in `setup` and closed in `teardown` (when the batch unregisters the plugin or the Dask worker
    closes). A submission arrives as bytes and is graded from them (never written to a file); the plugin's
    private inbox folder, the Dask worker's own folder and its working folder are hidden from every run.

    Args:
        key_json: keyfile.to_json(key) of the grader's key (a full key: it holds the fresh-point secret).
        version: the client's autograder version and code digest ("0.1.0+<CODE>"); a worker that runs
            other code grades nothing.
        conceal: folders, as the client names them, that no run may see where they exist on the worker
            (the key's folder and project, the output and submission folders: a LocalCluster shares the
            client's disk).
    """

    def __init__(self, key_json: dict[str, Any], version: str, conceal: list[str] | None = None,
                 course_commits: dict[str, list[dict[str, Any]]] | None = None) -> None:
        self.key_json, self.version, self.conceal = key_json, version, list(conceal or [])
        self.course_commits = course_commits
        self.key: Key | None = None
        self.sandbox: Any = None
        self.problem = ""
        self.where = self.address = ""
        self.inbox = ""

    def __getstate__(self) -> dict[str, Any]:   # what the scheduler sends to each worker: the key, the version
        return {"key_json": self.key_json, "version": self.version, "conceal": self.conceal,
                "course_commits": self.course_commits}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["key_json"], state["version"], state["conceal"],  # type: ignore[misc]
                      state.get("course_commits"))

    def setup(self, worker: Any) -> None:
        named = "" if str(worker.name) == worker.address else f" {worker.name}"
        self.where = f"Dask worker{named} at {worker.address} on {socket.gethostname()}"
        self.address = worker.address
        if self.version != f"{__version__}+{CODE}":
            self.problem = (f"{self.where} has autograd-lab {__version__}+{CODE}, the client {self.version}: "
                            f"install the same version (the same code) on every worker")
            return
        self.key = from_json(self.key_json)
        # in the Dask worker's own folder, which Dask removes when a new worker finds it dead
        self.inbox = tempfile.mkdtemp(prefix="autograd-lab-inbox-", dir=worker.local_directory)
        self._start(worker.local_directory)

    def _start(self, local_directory: str = "") -> None:
        from autograder.sandbox.client import Worker

        try:
            self.sandbox = Worker([self.inbox, *([local_directory] if local_directory else []), *self.conceal])
        except OSError as e:
            self.problem = f"the sandbox could not start on {self.where} ({e})"
            return
        if not self.sandbox.isolation.startswith("bwrap"):   # a run could reach the scheduler: refuse
            self.problem = (f"{self.where} cannot isolate submissions ({self.sandbox.isolation}); on a cluster a "
                            "submission could reach the scheduler and every worker: install bubblewrap there")
            self.sandbox.close()
            self.sandbox = None
            return
        self.problem = ""

    def teardown(self, worker: Any) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None
        if self.inbox:
            shutil.rmtree(self.inbox, ignore_errors=True)

    def grade(self, data: bytes, filename: str, folder: str | None, rule: str, given: str | None) -> str:
        """Grade one submission: `data` (the notebook file's bytes, as the client's intake read them) under the
        name `filename` (a bare file name), its student id resolved by `identity` from the file name, `folder` (its student
        folder), `rule` and `given`. Returns the report's JSON text, with `graded_by` set. Raises
        CannotGrade when this worker cannot grade (other code, no sandbox, no isolation): the client sends
        the submission elsewhere, so a sandbox is never started again per task."""
        if self.problem or self.key is None:
            raise CannotGrade(self.address, self.problem or "no key on this worker")
        name = Path(filename).name
        path = Path(name if name not in ("", ".", "..") else "submission.ipynb")   # a name only: never opened
        source = identity.Source(path, folder, rule, given)  # type: ignore[arg-type]
        report = grade_notebook(path, self.key, worker=self.sandbox, source=source, data=data,
                                course_commits=self.course_commits)
        return json.dumps(replace(report, graded_by=self.where).to_dict())


class CannotGrade(RuntimeError):
    """Raised by a task on a worker that cannot grade (it joined after the batch checked its workers):
    the client sends the submission to another worker. Args: the worker's address, why."""

    def __str__(self) -> str:
        return str(self.args[-1])


def grade_on_worker(data: bytes, filename: bytes, folder: bytes | None, rule: str, given: bytes | None,
                    key_ref: str) -> str:
    """The task each submission is: grade it with the key this Dask worker holds under `key_ref`
    (see Grid._ship). Names travel as bytes (os.fsencode: a file name need not be UTF-8). Returns the
    report's JSON text. Raises CannotGrade when this worker cannot grade or does not hold the key."""
    plugin = get_worker().plugins.get(PLUGIN_PREFIX + key_ref)
    if plugin is None:
        raise CannotGrade(get_worker().address, f"{get_worker().address} holds no key {key_ref}")
    return plugin.grade(data, os.fsdecode(filename), folder and os.fsdecode(folder), rule, given and os.fsdecode(given))


class Grid:
    """A connection to a Dask cluster that grades submissions. `Grid(address)` connects to a running
    scheduler ("tcp://host:8786"); `Grid("local:N")` starts a LocalCluster of N worker processes (one
    thread each, on 127.0.0.1 over TLS with a certificate of its own) and closes it with the Grid. Use as a context manager, or
    `close()`. `say` prints a line for the person waiting (default: nothing).

    Raises:
        ClusterError: no scheduler answers at `address` within CONNECT_TIMEOUT seconds (nor anything that
            speaks Dask's protocol as a scheduler), it has no worker within WORKERS_TIMEOUT seconds, or
            `address` is not an address.
    """

    def __init__(self, address: str, say: Callable[[str], None] | None = None) -> None:
        self.address, self.cluster, self.client, self._shipped = address, None, None, set[str]()
        self._bad: set[str] = set()          # workers that said they cannot grade
        self._tries: dict[str, int] = {}     # submission name -> how often it met such a worker
        self.say = say or (lambda line: None)
        if address.startswith("local:"):
            n = address.partition(":")[2]
            if not n.isdigit() or not 1 <= int(n) <= 256:
                raise ClusterError(f"--scheduler local:N needs a number of workers from 1 to 256, not {n!r}")
            try:
                # TLS with a certificate made for this batch (no other process, no other account on this
                # machine can connect), no HTTP routes, and no Dask memory limit (each run has its own)
                with dask.config.set({"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []}):
                    self.cluster = LocalCluster(n_workers=int(n), threads_per_worker=1, processes=True,
                                                dashboard_address=None, silence_logs=logging.ERROR, security=True,
                                                memory_limit=0)
            except Exception as e:  # noqa: BLE001  (any failure to start is a usage error here, exit 2)
                raise ClusterError(f"could not start a local Dask cluster ({type(e).__name__}: {e})") from None
        self.client = self._connect(self.cluster or address)
        try:
            if self.workers() == 0:
                self.say(f"waiting up to {WORKERS_TIMEOUT:.0f} s for a Dask worker to join {address} ...")
                self.client.wait_for_workers(1, timeout=WORKERS_TIMEOUT)
        except (OSError, TimeoutError) as e:
            self.close()
            raise ClusterError(f"the Dask scheduler at {address} has no workers ({type(e).__name__}); start "
                              f"some with `dask worker {address}`") from None
        except Exception as e:  # noqa: BLE001  (a worker's or nanny's address answers, but not as a scheduler)
            self.close()
            raise ClusterError(f"the server at {address} speaks Dask's protocol but is not a scheduler "
                              f"({type(e).__name__}: {str(e)[:200]}): give the address `dask scheduler` prints, "
                              "not a worker's") from None

    def _connect(self, target: Any) -> Any:
        """A Client of `target` (an address or a LocalCluster), within CONNECT_TIMEOUT seconds whatever
        answers there (Dask's own timeout covers the connection, not a server that never speaks)."""
        box: dict[str, Any] = {}

        def connect() -> None:
            try:
                box["client"] = Client(target, timeout=CONNECT_TIMEOUT)
            except BaseException as e:  # noqa: BLE001  (reported below, with the address)
                box["error"] = e
        thread = threading.Thread(target=connect, daemon=True, name="autograd-lab-connect")
        thread.start()
        thread.join(CONNECT_TIMEOUT + 5)
        if "client" in box:
            return box["client"]
        self._close_cluster()
        e = box.get("error")
        if isinstance(e, TypeError):   # it answered Dask's handshake with a worker's or a nanny's calls
            raise ClusterError(f"the server at {self.address} speaks Dask's protocol but is not a scheduler "
                               f"({type(e).__name__}: {str(e)[:200]}): give the address `dask scheduler` prints, "
                               "not a worker's")
        if isinstance(e, (OSError, TimeoutError, ValueError)):
            why = f"{type(e).__name__}: {str(e)[:200]}"
        elif e is not None:
            why = f"what answers there does not speak Dask's protocol ({type(e).__name__}: {str(e)[:120]})"
        else:
            why = (f"nothing answered as a Dask scheduler within {CONNECT_TIMEOUT + 5:.0f} s (a dashboard's or "
                   "another server's port?)")
        raise ClusterError(f"cannot reach a Dask scheduler at {self.address} ({why}); start one (`dask scheduler`) "
                          "and its workers, or use --scheduler local:N")

    def _window(self) -> int:
        """How many submissions may be on the cluster at once: 4 per worker thread, at least 16."""
        try:
            threads = sum(w.get("nthreads", 1) for w in self.client.scheduler_info(n_workers=-1)["workers"].values())
        except Exception:  # noqa: BLE001  (a scheduler that does not answer now: the floor)
            threads = 0
        return max(16, 4 * threads)

    def workers(self) -> int:
        """How many Dask workers the scheduler knows now."""
        return len(self.client.scheduler_info(n_workers=-1).get("workers", {}))

    def _ship(self, key: Key, conceal: list[str], course_commits: dict[str, list[dict[str, Any]]] | None = None) -> str:
        """Send the key to every worker (once per batch), after a scheduler plugin that takes it back
        should this client vanish; then ask each worker whether it can grade. Raises ClusterError (nothing
        graded) when one cannot: another autograder version, or no sandbox."""
        ref = f"{key_id(key)}-{uuid.uuid4().hex[:8]}"   # this batch's own: two batches never share a plugin
        try:
            self.client.register_plugin(KeyReaper(self.client.id, PLUGIN_PREFIX + ref), name=REAPER_PREFIX + ref)
        except Exception as e:  # noqa: BLE001  (a scheduler that refuses plugins still grades)
            self.say(f"note: the scheduler did not take the plugin that removes the key if grade is killed "
                     f"({type(e).__name__}); stop a killed batch's key with a new run or by restarting the cluster")
        self._shipped.add(ref)
        try:
            self.client.register_plugin(KeyPlugin(to_json(key), f"{__version__}+{CODE}", conceal, course_commits),
                                        name=PLUGIN_PREFIX + ref)
            problems = {a: p for a, p in self.client.run(_problem, PLUGIN_PREFIX + ref).items() if p}
        except Exception as e:  # noqa: BLE001  (a worker that cannot even answer runs other code)
            raise ClusterError(f"a Dask worker could not say whether it can grade ({type(e).__name__}: "
                               f"{str(e)[:200]}): it runs other autograd-lab code; install the same version on "
                               "every worker, then grade again") from None
        if problems:
            raise ClusterError(f"{len(problems)} Dask worker(s) cannot grade, so nothing was graded: "
                              + "; ".join(sorted(problems.values())[:5]) + ". Fix or stop them, then grade again")
        return ref

    def grade(self, subs: list[Any], key: Key, conceal: list[str] | None = None,
              content: Callable[[Any], bytes | str] | None = None,
              course_commits: dict[str, list[dict[str, Any]]] | None = None) -> Iterator[tuple[Any, Report, bytes | str]]:
        """Grade `subs` (batch.Submission) on the cluster; yields (submission, report, what was graded) as each
        completes, in completion order. `content(sub)`: the submission's bytes through the intake, or why the
        intake refused it (default: batch.Submission.read); only bytes travel. `course_commits`: a course's batch
        (student -> the service's commit records), shipped with the key. `conceal`: folders no run may see
        (see KeyPlugin). A submission the intake refused, whose task failed or killed its workers, or that was
        waiting when the cluster had no worker for WORKERS_TIMEOUT seconds, gets a not-gradable report that says
        why.

        Raises:
            ClusterError: before anything is graded, when a worker cannot grade (see _ship).
        """
        if not subs:
            return
        ref = self._ship(key, list(conceal or []), course_commits)
        content = content or (lambda sub: sub.read())
        self._sent: dict[str, bytes | str] = {}
        sent = self._sent
        futures: dict[Any, Any] = {}
        queue = list(reversed(subs))
        pending: set[Any] = set()
        alone_since = None
        while queue or pending:
            window = self._window() if queue else 0
            while queue and len(pending) < window:   # bounded: the client and scheduler hold a few MB
                sub = queue.pop()
                data = sent[sub.name] = content(sub)
                if isinstance(data, str):   # refused by the intake: nothing of it leaves this machine
                    yield sub, not_gradable_report(key, sub.name, _student(sub, key), data), data
                    continue
                fut = self._submit(sub, data, ref)
                futures[fut] = sub
                pending.add(fut)
            if not pending:
                continue
            try:
                done = wait(list(pending), timeout=5, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                done = set()
            for fut in done:
                pending.discard(fut)
                again = self._elsewhere(fut, futures[fut], ref)
                if again is not None:   # its worker cannot grade: another one grades it
                    futures[again] = futures[fut]
                    pending.add(again)
                else:
                    yield futures[fut], self._result(fut, futures[fut], key), sent.pop(futures[fut].name)
                fut.release()
            if done or self.workers():   # (workers() asked only when nothing completed for 5 s)
                alone_since = None
            elif alone_since is None:
                alone_since = time.monotonic()
                self.say(f"the Dask cluster has no workers left: waiting up to {WORKERS_TIMEOUT:.0f} s for one")
            elif time.monotonic() - alone_since > WORKERS_TIMEOUT:
                lost = (f"not graded: the Dask cluster lost all its workers and none joined within "
                        f"{WORKERS_TIMEOUT:.0f} s; this is not the student's fault: the next run grades it")
                for sub in reversed(queue):
                    yield sub, not_gradable_report(key, sub.name, _student(sub, key), lost), lost
                for fut in pending:
                    fut.cancel()
                    yield futures[fut], not_gradable_report(key, futures[fut].name, _student(futures[fut], key),
                                                            lost), sent.pop(futures[fut].name, lost)
                return

    def _submit(self, sub: Any, data: bytes, ref: str, workers: list[str] | None = None) -> Any:
        src, fs = sub.source, os.fsencode
        name = sub.name.encode("ascii", "backslashreplace").decode()[:100]   # a task's key must be UTF-8
        return self.client.submit(grade_on_worker, data, fs(src.path.name), src.folder and fs(src.folder), src.rule,
                                  src.given and fs(src.given), ref, pure=False, workers=workers,
                                  allow_other_workers=False, key=f"grade-{name}-{uuid.uuid4().hex[:8]}")

    def _elsewhere(self, fut: Any, sub: Any, ref: str) -> Any:
        """A new task for `sub` on the workers not known to be unable to grade, if `fut` failed with
        CannotGrade and such workers remain (at most 3 tries per submission); else None."""
        if fut.status != "error" or not isinstance(fut.exception(), CannotGrade):
            return None
        self._bad.add(fut.exception().args[0])
        tries = self._tries[sub.name] = self._tries.get(sub.name, 0) + 1
        good = [a for a in self.client.scheduler_info(n_workers=-1)["workers"] if a not in self._bad]
        if tries > 3 or not good:
            return None
        data = self._sent.get(sub.name)
        return self._submit(sub, data, ref, workers=good) if isinstance(data, bytes) else None

    def _result(self, fut: Any, sub: Any, key: Key) -> Report:
        name = sub.name
        try:
            return Report.from_dict(json.loads(fut.result()))
        except KilledWorker:
            reason = ("not graded: every Dask worker that ran it died (the scheduler gave up after its "
                      "allowed-failures); the sandbox should stop a submission first, so this is not the "
                      "student's fault: the next run grades it again")
        except Exception as e:  # noqa: BLE001  (a task's error is the grader's fault, never a crash of the batch)
            reason = f"not graded: grading failed on the Dask cluster ({type(e).__name__}: {str(e)[:300]}); " \
                     "this is not the student's fault: the next run grades it again"
        return not_gradable_report(key, name, _student(sub, key), reason)

    def close(self) -> None:
        """Unregister the shipped keys (each worker closes its sandbox and forgets the key), disconnect, and
        close a local cluster."""
        try:
            for ref in self._shipped:
                self.client.unregister_worker_plugin(PLUGIN_PREFIX + ref)
        except Exception:  # noqa: BLE001, S110  (a cluster already gone has nothing left to close)
            pass
        self._shipped.clear()
        if self.client is not None:
            self.client.close()
        self._close_cluster()

    def _close_cluster(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    def __enter__(self) -> Grid:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _problem(name: str, dask_worker: Any = None) -> str:
    """On a worker (Client.run): why it cannot grade with the plugin `name` ("" if it can)."""
    plugin = dask_worker.plugins.get(name)
    if plugin is None:
        return f"{dask_worker.address} did not receive the key"
    return plugin.problem


class KeyReaper(SchedulerPlugin):
    """Runs in the scheduler: when the client that shipped a key leaves (closed, or killed), the key's
    worker plugin is unregistered (every worker closes its sandbox and forgets the key) and this plugin
    removes itself. Args: client_id (Client.id), plugin (the KeyPlugin's name)."""

    def __init__(self, client_id: str, plugin: str) -> None:
        self.client_id, self.plugin = client_id, plugin
        self.name = REAPER_PREFIX + plugin[len(PLUGIN_PREFIX):]

    def remove_client(self, scheduler: Any, client: str) -> None:
        if client != self.client_id:
            return
        if self.plugin in scheduler.worker_plugins:
            asyncio.ensure_future(scheduler.unregister_worker_plugin(None, self.plugin))
        scheduler.remove_plugin(name=self.name)


def _student(sub: Any, key: Key) -> str:
    """The student id of a submission that was not graded, by the identity rules without its STUDENT_ID."""
    return identity.resolve(sub.source, key.notebook, key.assignment, None).student


def describe(grid: Grid) -> str:
    """One line for the terminal: where a batch is graded."""
    where = f"a local Dask cluster ({grid.address})" if grid.cluster is not None else f"the Dask cluster at {grid.address}"
    return f"grading on {where}: {grid.workers()} worker(s); reports are written here"
