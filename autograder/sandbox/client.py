"""sandbox.client: the grader-side client of the sandbox, the only place the grader starts sandboxed processes.

A Worker is one warm process (`autograder.sandbox.inside.worker`, the inside) that has imported torch, IPython and the
probe once; each submission runs in a fresh fork of it (never reused across students), in fresh private
folders, with a scrubbed environment, resource limits and a wall-clock timeout that kills everything the
run started. Where bubblewrap (`bwrap`) works and the grader is root, the worker runs inside bwrap (its
own PID namespace, so it cannot see or signal the grader; a read-only allowlist of the file system), and
each run also gets its own mount, network, IPC and UTS namespaces, its own small tmpfs folders and its own
unprivileged uid with no capabilities (the policy: `autograder.sandbox.policy`). Results come back through a
pipe of each run's own.

May import: stdlib, autograder.model, autograder.sandbox.policy, autograder.sandbox.cgroup, autograder.wire,
autograder.profile.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from autograder import profile, wire
from autograder.sandbox import cgroup, policy
from autograder.model import Limits

OUTPUT_TAIL_BYTES = 8_000


@dataclass(frozen=True)
class ProbeRun:
    """What one sandboxed probe run left behind.

    `results` is the raw JSON-lines stream (at most wire.MAX_RESULT_BYTES); `output_tail` is the
    last OUTPUT_TAIL_BYTES of what the submission printed (stdout and stderr together, decoded
    with replacement); `exit_code` is the process's code or -signal; `seconds` is wall time. The worker
    stopped the run when `timed_out` (its wall limit), `stalled` (a step outlasted its alarm) or
    `over_memory` (all its processes together held more than its memory budget).
    """

    results: bytes
    output_tail: str
    exit_code: int
    timed_out: bool
    seconds: float
    results_cut: bool = False   # the stream was longer than wire.MAX_RESULT_BYTES
    isolation: str = ""
    stalled: bool = False
    over_memory: bool = False
    worker_huge_bytes: int = 0   # the warm worker's memory in huge pages when the run ended (0: none, or not yet)


@lru_cache(maxsize=1)
def bwrap_status() -> tuple[str | None, str]:
    """(path of a working bwrap, "") or (None, why not). Tried once per process."""
    path = shutil.which("bwrap")
    if path is None:
        return None, "bwrap is not installed"
    try:
        done = subprocess.run([path, "--ro-bind", "/", "/", *policy.BWRAP_FLAGS, "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"bwrap did not start ({e})"
    if done.returncode != 0:
        return None, f"bwrap does not work here: {done.stderr.decode('utf-8', 'replace').strip()[:200]}"
    return path, ""


class _Reader(threading.Thread):
    """Reads the probe's results pipe while it runs (keeps at most `limit` bytes: wire.MAX_RESULT_BYTES)."""

    def __init__(self, fd: int, limit: int = wire.MAX_RESULT_BYTES) -> None:
        super().__init__(daemon=True)
        self.fd, self.chunks, self.size, self.stop, self.limit = fd, [], 0, threading.Event(), limit

    def run(self) -> None:
        import select

        while not self.stop.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if not ready:
                continue
            data = os.read(self.fd, 1 << 16)
            if not data:
                return
            if self.size < self.limit:
                self.chunks.append(data)
            self.size += len(data)

    def result(self) -> tuple[bytes, bool]:
        return b"".join(self.chunks)[: self.limit], self.size > self.limit


class Worker:
    """A warm sandboxed worker: one process (inside bwrap where it works) that has imported torch,
    IPython and the probe once. Each `run` forks a fresh child from it for one submission (never a
    process reused across students), which gets its own private folders, namespaces, uid and limits.

    Thread-safe: `grade --jobs N` runs N submissions at once through one worker. Use as a context
    manager, or call `close()`.

    Args:
        conceal: folders every run must not see (besides the current working folder): keys,
            solutions, submissions, the output folder (with bwrap, each is replaced by an empty one
            where it lies inside what the sandbox shows).
        cgroups: give each run a cgroup of its own where the machine lets the grader make one (sandbox.cgroup);
            False: the worker's own measures only, as on a machine without (each report's sandbox line says which).
    Raises:
        OSError: the worker did not start (a grader fault, never the student's).
    """

    START_TIMEOUT = 120.0   # seconds for the worker to import torch and IPython

    def __init__(self, conceal: list[str] | None = None, cgroups: bool = True) -> None:
        self.conceal = [os.getcwd(), *(conceal or [])]
        self.cgroups = cgroups
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._tree = cgroup.NONE   # the worker's cgroup folders (sandbox.cgroup), removed when it stops
        self.isolation = ""
        self.huge_pages = ""   # "yes" where the worker's memory goes into huge pages, else why not (in words)
        self._start()

    def _start(self) -> None:
        runs = policy.runs_dir()
        bwrap, why_not = bwrap_status()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._tree = tree = cgroup.prepare() if self.cgroups else cgroup.Tree(why_not="cgroups turned off")
        argv = [sys.executable, "-I", "-m", "autograder.sandbox.inside.worker", "--worker", str(child.fileno()), runs,
                "sandboxed" if bwrap and os.geteuid() == 0 else "plain", tree.to_json()]
        if bwrap:
            argv = policy.bwrap_command(bwrap, runs, self.conceal, argv, writable=tree.folders())
        self._isolation = policy.isolation(bool(bwrap), os.geteuid() == 0, why_not)
        self._log = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
                                          cwd=runs, env=policy.environment(os.path.join(runs, "home")),
                                          start_new_session=True, pass_fds=(child.fileno(),))
        finally:
            child.close()
        parent.settimeout(self.START_TIMEOUT)
        try:
            ready = parent.recv(1024)
        except (socket.timeout, OSError):
            ready = b""
        try:
            said = json.loads(ready[5:]) if ready.startswith(b"ready") else None
        except ValueError:
            said = None
        if not isinstance(said, dict):
            self._proc.kill()
            self._proc.wait()
            cgroup.remove(tree)
            self._log.seek(0)
            log = self._log.read()[-2000:].decode("utf-8", "replace").rstrip()
            if "No module named 'autograder'" in log:   # python -I finds only what the venv has installed
                log += (f" (the sandbox imports the package as {sys.executable} -I finds it: installed into that "
                         f"venv, not from the folder you run in; the package this grader runs, "
                         f"{os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}, is not the one it has "
                         f"installed: run `pip install -e .` in this folder with that venv)")
            raise OSError(f"the sandbox worker did not start: {log}")
        parent.settimeout(None)
        self._sock = parent
        self.huge_pages = str(said.get("huge_pages", ""))
        self._no_filter = "" if said.get("syscall_filter") == "yes" else str(said.get("syscall_filter", "no filter"))
        self.isolation = self.isolation_of("")

    def isolation_of(self, no_cgroup: str) -> str:
        """The isolation line of a run: how it was separated (bwrap or not), how its resources were held (its own
        cgroup, or `no_cgroup` says why not, which the worker reports per run) and the warm worker's pages."""
        tree = self._tree
        kill = bool(tree.unified) and not no_cgroup
        return (self._isolation + policy.limits_line(kill, kill and bool(tree.memory), no_cgroup or tree.why_not,
                                                     self._no_filter)
                + policy.memory_line(self.huge_pages))

    def cpu_seconds(self) -> float | None:
        """CPU seconds (user and system) the warm worker and every run it has made have used so far, from its cgroup's
        cpu.stat (cgroup v2); None without one (no cgroups, or the worker not started). For benchmarks: what sandboxed
        work costs whatever else the machine runs."""
        unified = self._tree.unified
        if not unified:
            return None
        try:
            with open(os.path.join(unified, "cpu.stat"), encoding="ascii") as f:
                for line in f:
                    if line.startswith("usage_usec "):
                        return int(line.split()[1]) / 1e6
        except (OSError, ValueError):
            pass
        return None

    def run(self, request: dict[str, Any], limits: Limits = Limits(),
            max_results: int = wire.MAX_RESULT_BYTES) -> ProbeRun:
        """Run the probe on `request` in a fresh child of the worker.

        Args:
            request: a probe request (`plan.probe_request`); JSON-native, no expected values.
            limits: wall/CPU seconds and memory/file/output bytes for this run.
            max_results: bytes of the results stream kept (more sets `results_cut`); larger than
                wire.MAX_RESULT_BYTES only for release's sweep of the instructor's solution (authoring.sweep).
        Returns:
            ProbeRun. A timeout kills the run's processes and sets `timed_out`; the records
            written before are kept. Results come through a pipe of their own, so the submission
            can add to them but not erase what the probe already sent.
        Raises:
            OSError: the worker stopped and could not be restarted (a grader fault).
        """
        try:
            return self._run(request, limits, max_results)
        except _WorkerGone:
            with self._lock:   # one restart: the next submission must not pay for this one
                if self._proc is not None:
                    if self._proc.poll() is None:   # alive but not answering: replaced, never waited for again
                        self._proc.kill()
                    self._close_locked()
                    self._start()
            raise OSError("the sandbox worker stopped during this run") from None

    def _run(self, request: dict[str, Any], limits: Limits, max_results: int = wire.MAX_RESULT_BYTES) -> ProbeRun:
        req = tempfile.TemporaryFile()
        out = tempfile.TemporaryFile()
        results_r, results_w = os.pipe()
        status_r, status_w = os.pipe()
        dirs = None
        root = None
        try:
            req.write(json.dumps(request).encode())
            req.flush()
            if not self.isolation.startswith("bwrap"):   # a plain worker: real folders made here
                root = tempfile.mkdtemp(prefix="run-", dir=policy.runs_dir())
                dirs = [os.path.join(root, "work"), os.path.join(root, "home")]
                for d in dirs:
                    os.mkdir(d)
            sent = time.monotonic()
            header = json.dumps({"wall": limits.wall_seconds, "limits": asdict(limits), "dirs": dirs,
                                 "warm": [str(w) for w in request.get("warm", [])], "sent": sent}).encode()
            reader = _Reader(results_r, max_results)
            reader.start()
            try:
                with self._lock:
                    if self._sock is None:
                        raise _WorkerGone()
                    socket.send_fds(self._sock, [header], [req.fileno(), results_w, out.fileno(), status_w])
            except OSError:
                raise _WorkerGone() from None
            finally:
                os.close(results_w)
                os.close(status_w)
                results_w = status_w = -1
            status = read_bounded(status_r, limits.wall_seconds + 60)
            profile.add("sandbox: status", time.monotonic() - sent)
            with profile.stage("sandbox: results pipe"):
                reader.join(timeout=2.0)   # EOF comes when every holder of the pipe is gone
                reader.stop.set()
                reader.join()
            if not status:
                raise _WorkerGone()
            st = json.loads(status)
            profile.add("cpu: the run's process", float(st.get("cpu", 0.0)))
            profile.add("worker cpu so far", float(st.get("worker_cpu", 0.0)))
            profile.add("page faults of the run's process (a count)", float(st.get("faults", 0)))
            results, cut = reader.result()
            size = out.seek(0, os.SEEK_END)
            out.seek(max(0, size - OUTPUT_TAIL_BYTES))
            tail = out.read(OUTPUT_TAIL_BYTES).decode("utf-8", "replace")
            return ProbeRun(results, tail, int(st["exit"]), bool(st["timed_out"]), float(st["seconds"]), cut,
                            self.isolation_of(str(st.get("cgroup", ""))), bool(st.get("stalled")),
                            bool(st.get("over_memory")),
                            int(st.get("worker_huge", 0)))
        finally:
            for fd in (results_r, results_w, status_r, status_w):
                if fd >= 0:
                    os.close(fd)
            req.close()
            out.close()
            if root:
                shutil.rmtree(root, ignore_errors=True)

    def _close_locked(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        cgroup.remove(self._tree)
        self._tree = cgroup.NONE

    def close(self) -> None:
        """Stop the worker (its running children are killed with it)."""
        with self._lock:
            self._close_locked()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _WorkerGone(Exception):
    pass


def read_bounded(fd: int, timeout: float, line: bool = False) -> bytes:
    """What is written to `fd` until EOF, or with `line`, until a chunk ends a line (returned without
    its newline; the writer sends nothing after it until asked again). b"" after `timeout` seconds,
    and, with `line`, at EOF."""
    import select

    chunks, deadline = [], time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return b""
        data = os.read(fd, 1 << 16)
        if not data:
            return b"" if line else b"".join(chunks)
        chunks.append(data)
        if line and data.endswith(b"\n"):
            return b"".join(chunks)[:-1]


class WorkerStart:
    """A Worker being started in a thread of its own (its torch import takes seconds), so that the caller can
    read notebooks and keys meanwhile; `get()` waits for it. Use as a context manager (or `close()`): the
    worker is closed at the end, also if it was never asked for.

    Args:
        conceal: as for Worker.
    """

    def __init__(self, conceal: list[str] | None = None) -> None:
        self.conceal = list(conceal or [])   # what it was asked to conceal (a folder that did not exist is not)
        self._worker: Worker | None = None
        self._error: BaseException | None = None
        self._started, self._done = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._start, args=(conceal,), daemon=True)
        self._thread.start()

    def _start(self, conceal: list[str] | None) -> None:
        try:
            self._worker = Worker(conceal)
        except BaseException as e:   # given to whoever asks for the worker
            self._error = e
        self._started.set()
        # bwrap dies with the thread that started it (--die-with-parent is PR_SET_PDEATHSIG, which follows the
        # parent thread): this thread stays until the worker is closed.
        self._done.wait()

    def conceals(self, paths: list[str]) -> bool:
        """Was each of `paths` (folders) inside one this worker was asked to conceal?"""
        mine = [os.path.realpath(c) for c in self.conceal]
        return all(any(r == c or r.startswith(c.rstrip(os.sep) + os.sep) for c in mine)
                   for r in map(os.path.realpath, paths))

    def get(self) -> Worker:
        """The started worker. Raises OSError as Worker does."""
        self._started.wait()
        if self._error is not None:
            raise self._error
        assert self._worker is not None
        return self._worker

    def close(self) -> None:
        """Wait for the start to end, then stop the worker."""
        self._started.wait()
        if self._worker is not None:
            self._worker.close()
        self._done.set()
        self._thread.join()

    def __enter__(self) -> WorkerStart:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_probe(request: dict[str, Any], limits: Limits = Limits(), conceal: list[str] | None = None,
              worker: Worker | None = None) -> ProbeRun:
    """Run the probe on `request` in a fresh sandboxed process: a child of `worker`, or of a worker
    started (and stopped) for this one run. See `Worker.run`; `conceal` is used only without a worker.
    Raises OSError when no worker can be started (a grader fault)."""
    if worker is not None:
        return worker.run(request, limits)
    with Worker(conceal) as w:
        return w.run(request, limits)
