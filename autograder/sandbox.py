"""sandbox: the only place that starts processes, and the sandbox policy.

A Worker is one warm process that has imported torch, IPython and the probe once; each submission
runs in a fresh fork of it (never reused across students), in fresh private folders, with a
scrubbed environment, resource limits (CPU seconds, address space, processes, open files, file and
output bytes) and a wall-clock timeout that kills everything the run started. Where bubblewrap
(`bwrap`) works and the grader is root, the worker runs inside bwrap (its own PID namespace, so it
cannot see or signal the grader; a read-only view of the file system with the grader's folder,
keys, solutions and submissions replaced by empty ones; only the Python environment and the
package shown back), and each run also gets its own mount, network, IPC and UTS namespaces (no
network at all), its own small tmpfs folders and its own unprivileged uid with no capabilities.
Results come back through a pipe of each run's own. Imports stdlib only (the worker imports the
probe lazily).
"""
from __future__ import annotations

import json
import os
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from autograder import wire

OUTPUT_TAIL_BYTES = 8_000


@dataclass(frozen=True)
class Limits:
    """Per-submission limits. Seconds are wall-clock unless named cpu; sizes are bytes."""

    wall_seconds: float = 120.0
    cpu_seconds: int = 180
    address_space: int = 4 * 2**30
    file_size: int = 64 * 2**20         # any one file, the captured printed output included
    work_bytes: int = 256 * 2**20       # the private writable folder (with bwrap)
    processes: int = 128                # processes and threads of the run's uid (with bwrap as root)
    open_files: int = 1024


@dataclass(frozen=True)
class ProbeRun:
    """What one sandboxed probe run left behind.

    `results` is the raw JSON-lines stream (at most wire.MAX_RESULT_BYTES); `output_tail` is the
    last OUTPUT_TAIL_BYTES of what the submission printed (stdout and stderr together, decoded
    with replacement); `exit_code` is the process's code or -signal; `seconds` is wall time.
    """

    results: bytes
    output_tail: str
    exit_code: int
    timed_out: bool
    seconds: float
    results_cut: bool = False   # the stream was longer than wire.MAX_RESULT_BYTES
    isolation: str = ""


def _limit(limits: Limits) -> None:
    # Runs in the run's child before any submission code. RLIMIT_NPROC binds once the probe is not root.
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))   # 128 x 1024 << fs.file-max
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_AS, (limits.address_space, limits.address_space))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size, limits.file_size))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a write past the limit fails instead of killing


def _environment(home: str) -> dict[str, str]:
    # Nothing of the grader's environment passes through (no tokens, no PYTHONPATH); the working
    # directory stays empty (IPython's files go to `home`).
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
        "IPYTHONDIR": os.path.join(home, ".ipython"), "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0",
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(home, ".torchinductor"),
        "PYTHONWARNINGS": "default",
    }


# When the grader runs as root, the probe drops to an unprivileged uid of its own inside bwrap: one per
# run from this range (no /etc/passwd entry needed), so that RLIMIT_NPROC, which counts per uid,
# limits each run alone and runs cannot touch each other's processes.
# The range sits far above the uids that systems hand out (system, login and systemd DynamicUser ones).
UID_BASE, UID_SPAN = 2_000_000_000, 1_000_000
_random = random.SystemRandom()
# No user namespace: as root, the probe then really becomes its run uid (inside one, only uid 0 is mapped).
BWRAP_FLAGS = ("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
               "--die-with-parent", "--new-session", "--dev", "/dev", "--proc", "/proc")


@lru_cache(maxsize=1)
def bwrap_status() -> tuple[str | None, str]:
    """(path of a working bwrap, "") or (None, why not). Tried once per process."""
    path = shutil.which("bwrap")
    if path is None:
        return None, "bwrap is not installed"
    try:
        done = subprocess.run([path, "--ro-bind", "/", "/", *BWRAP_FLAGS, "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"bwrap did not start ({e})"
    if done.returncode != 0:
        return None, f"bwrap does not work here: {done.stderr.decode('utf-8', 'replace').strip()[:200]}"
    return path, ""


def _runs_dir() -> str:
    """The folder that holds every run's temporary folder (hidden from each run but its own)."""
    path = os.path.join(tempfile.gettempdir(), f"autograd-lab-runs-{os.geteuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def _shown_back() -> list[str]:
    """What the probe needs to run: the interpreter's prefixes and the autograder package."""
    package = str(Path(__file__).resolve().parent)
    return sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, package)} |
                  {sys.prefix, sys.base_prefix, package})


# What the sandbox sees of the machine (read-only): the system's programs, libraries and settings.
# Everything else (/home, /root, /work, /srv, /var, /opt, /mnt, ...) is absent, except the Python
# environment and the package, shown back read-only: an allowlist, so a copy of a key or of the
# solutions anywhere else on the machine stays out of reach.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")


def _bwrap_command(bwrap: str, runs: str, hidden: list[str], argv: list[str]) -> list[str]:
    """The bwrap command line of a worker: the SYSTEM_PATHS and the Python environment and package
    (`_shown_back`) read-only, an empty /tmp, `runs` an empty tmpfs (each run mounts its own private
    folders there), and any `hidden` folder that lies inside what is shown replaced by an empty one."""
    cmd = [bwrap, *BWRAP_FLAGS, "--tmpfs", "/tmp", "--tmpfs", runs]   # first: what is shown may lie under /tmp
    shown: list[str] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):   # merged /usr: /bin -> usr/bin
            cmd += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            cmd += ["--ro-bind", path, path]
            shown.append(path)
    made: set[str] = set()
    for path in sorted(p for p in _shown_back() if os.path.exists(p)):
        if not any(path == d or path.startswith(d.rstrip("/") + "/") for d in shown):
            for i in range(2, len(Path(path).parts)):   # the folders above it, enterable by the run's uid
                folder = str(Path(*Path(path).parts[:i]))
                if folder not in made:
                    made.add(folder)
                    cmd += ["--perms", "0755", "--dir", folder]
            cmd += ["--ro-bind", path, path]
            shown.append(path)
    inside = lambda path: any(path == d or path.startswith(d.rstrip("/") + "/") for d in shown)
    for path in sorted({os.path.realpath(h) for h in hidden if h}):
        if os.path.isdir(path) and inside(path) and path not in shown:
            cmd += ["--tmpfs", path]
    return cmd + ["--chdir", runs, "--", *argv]


class _Reader(threading.Thread):
    """Reads the probe's results pipe while it runs (keeps at most wire.MAX_RESULT_BYTES)."""

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.fd, self.chunks, self.size, self.stop = fd, [], 0, threading.Event()

    def run(self) -> None:
        import select

        while not self.stop.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if not ready:
                continue
            data = os.read(self.fd, 1 << 16)
            if not data:
                return
            if self.size < wire.MAX_RESULT_BYTES:
                self.chunks.append(data)
            self.size += len(data)

    def result(self) -> tuple[bytes, bool]:
        return b"".join(self.chunks)[: wire.MAX_RESULT_BYTES], self.size > wire.MAX_RESULT_BYTES


ISOLATION_BWRAP = ("bwrap: forked from a warm worker; unprivileged uid, no network, own mount, network and IPC "
                   "namespaces, read-only files except a small private folder; the grader's folder, keys and "
                   "solutions hidden")

# Linux constants (linux/sched.h, linux/mount.h) for the run's own namespaces and folders.
_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC, _CLONE_NEWNET = 0x00020000, 0x04000000, 0x08000000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000


class Worker:
    """A warm sandboxed worker: one process (inside bwrap where it works) that has imported torch,
    IPython and the probe once. Each `run` forks a fresh child from it for one submission (never a
    process reused across students), which gets its own private folders, namespaces, uid and limits.

    Thread-safe: `grade --jobs N` runs N submissions at once through one worker. Use as a context
    manager, or call `close()`.

    Args:
        hidden: folders every run must not see (besides the current working folder): keys,
            solutions, submissions, the output folder.
    Raises:
        OSError: the worker did not start (a grader fault, never the student's).
    """

    START_TIMEOUT = 120.0   # seconds for the worker to import torch and IPython

    def __init__(self, hidden: list[str] | None = None) -> None:
        self.hidden = [os.getcwd(), *(hidden or [])]
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self.isolation = ""
        self._start()

    def _start(self) -> None:
        runs = _runs_dir()
        bwrap, why_not = bwrap_status()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [sys.executable, "-I", "-m", "autograder.sandbox", "--worker", str(child.fileno()), runs,
                "sandboxed" if bwrap and os.geteuid() == 0 else "plain"]
        if bwrap:
            argv = _bwrap_command(bwrap, runs, self.hidden, argv)
            self.isolation = ISOLATION_BWRAP if os.geteuid() == 0 else ISOLATION_BWRAP.replace("unprivileged uid, ", "")
        else:
            self.isolation = f"own process only ({why_not}): files and network are not isolated"
        self._log = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
                                          cwd=runs, env=_environment(os.path.join(runs, "home")),
                                          start_new_session=True, pass_fds=(child.fileno(),))
        finally:
            child.close()
        parent.settimeout(self.START_TIMEOUT)
        try:
            ready = parent.recv(64)
        except (socket.timeout, OSError):
            ready = b""
        if ready != b"ready":
            self._proc.kill()
            self._proc.wait()
            self._log.seek(0)
            raise OSError(f"the sandbox worker did not start: {self._log.read()[-2000:].decode('utf-8', 'replace')}")
        parent.settimeout(None)
        self._sock = parent

    def run(self, request: dict[str, Any], limits: Limits = Limits()) -> ProbeRun:
        """Run the probe on `request` in a fresh child of the worker.

        Args:
            request: a probe request (`plan.probe_request`); JSON-native, no expected values.
            limits: wall/CPU seconds and memory/file/output bytes for this run.
        Returns:
            ProbeRun. A timeout kills the run's processes and sets `timed_out`; the records
            written before are kept. Results come through a pipe of their own, so the submission
            can add to them but not erase what the probe already sent.
        Raises:
            OSError: the worker stopped and could not be restarted (a grader fault).
        """
        try:
            return self._run(request, limits)
        except _WorkerGone:
            with self._lock:   # one restart: the next submission must not pay for this one
                if self._proc is not None:
                    if self._proc.poll() is None:   # alive but not answering: replaced, never waited for again
                        self._proc.kill()
                    self._close_locked()
                    self._start()
            raise OSError("the sandbox worker stopped during this run") from None

    def _run(self, request: dict[str, Any], limits: Limits) -> ProbeRun:
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
                root = tempfile.mkdtemp(prefix="run-", dir=_runs_dir())
                dirs = [os.path.join(root, "work"), os.path.join(root, "home")]
                for d in dirs:
                    os.mkdir(d)
            header = json.dumps({"wall": limits.wall_seconds, "limits": asdict(limits), "dirs": dirs}).encode()
            reader = _Reader(results_r)
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
            status = _read(status_r, limits.wall_seconds + 60)
            reader.join(timeout=2.0)   # EOF comes when every holder of the pipe is gone
            reader.stop.set()
            reader.join()
            if not status:
                raise _WorkerGone()
            st = json.loads(status)
            results, cut = reader.result()
            size = out.seek(0, os.SEEK_END)
            out.seek(max(0, size - OUTPUT_TAIL_BYTES))
            tail = out.read(OUTPUT_TAIL_BYTES).decode("utf-8", "replace")
            return ProbeRun(results, tail, int(st["exit"]), bool(st["timed_out"]), float(st["seconds"]), cut,
                            self.isolation)
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


def _read(fd: int, timeout: float, line: bool = False) -> bytes:
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


def run_probe(request: dict[str, Any], limits: Limits = Limits(), hidden: list[str] | None = None,
              worker: Worker | None = None) -> ProbeRun:
    """Run the probe on `request` in a fresh sandboxed process: a child of `worker`, or of a worker
    started (and stopped) for this one run. See `Worker.run`; `hidden` is used only without a worker.
    Raises OSError when no worker can be started (a grader fault)."""
    if worker is not None:
        return worker.run(request, limits)
    with Worker(hidden) as w:
        return w.run(request, limits)


class ToolServer:
    """A trusted autograder helper kept running (`python -m autograder _selfcheck --serve`): the
    in-notebook self-check sends it observations and gets a report back, so that the key and the
    comparison stay out of the student's kernel, and only the first check pays for starting Python
    and importing sympy. Restarted when it has stopped. Thread-safe."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def ask(self, header: dict[str, Any], body: bytes, timeout: float = 120.0) -> bytes:
        """Send one request (a JSON header line, then `body`) and return the one-line answer.
        Raises RuntimeError with the helper's stderr when it fails or does not answer in time."""
        with self._lock:
            for attempt in (1, 2):
                if self._proc is None or self._proc.poll() is not None:
                    self._err = tempfile.TemporaryFile()
                    self._proc = subprocess.Popen([sys.executable, "-m", "autograder", "_selfcheck", "--serve"],
                                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err)
                proc = self._proc
                try:
                    proc.stdin.write(json.dumps({**header, "size": len(body)}).encode() + b"\n" + body)
                    proc.stdin.flush()
                    line = _read(proc.stdout.fileno(), timeout, line=True)
                except OSError:
                    line = b""
                if line:
                    return line
                proc.kill()
                proc.wait()
                self._proc = None
                self._err.seek(0)
                err = self._err.read()[-2000:].decode("utf-8", "replace")
                if attempt == 2 or err:
                    raise RuntimeError(f"the self-check helper failed: {err or 'no answer in time'}")
        raise AssertionError("unreachable")


# ----------------------------------------------------------------------------- inside the worker

def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _worker_main(sock_fd: int, runs: str, sandboxed: bool) -> None:
    """The worker's loop: import torch, IPython and the probe once, then fork one child per job and
    report each child's end (exit code, timeout, seconds) on the job's status pipe. Ends when the
    grader closes its socket (its children are killed then)."""
    from autograder import probe

    for d in ("work", "home"):
        os.makedirs(os.path.join(runs, d), mode=0o1777, exist_ok=True)
    shell = probe.prepare()
    sock = socket.socket(fileno=sock_fd)
    sock.sendall(b"ready")
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    jobs: dict[int, dict[str, Any]] = {}   # pidfd -> job
    import select

    while True:
        now = time.monotonic()
        deadlines = [j["deadline"] for j in jobs.values() if not j["killed"]]
        timeout = max(0.0, min(deadlines) - now) if deadlines else None
        ready = select.select([sock, *jobs], [], [], timeout)[0]
        if sock in ready:
            try:
                msg, fds, _, _ = socket.recv_fds(sock, 1 << 16, 8)
            except OSError:
                msg, fds = b"", []
            if not msg:   # the grader is gone: so are its runs
                for job in jobs.values():
                    _kill_run(job, sandboxed)
                os._exit(0)
            job = _start_child(json.loads(msg), fds, sock, jobs, runs, sandboxed, shell)
            jobs[job["pidfd"]] = job
        for pidfd in [fd for fd in ready if fd in jobs]:
            job = jobs.pop(pidfd)
            _kill_run(job, sandboxed)   # what it left running goes too (before the reap: no pid reuse)
            _, status = os.waitpid(job["pid"], 0)
            os.close(pidfd)
            code = os.waitstatus_to_exitcode(status)
            try:
                os.write(job["status"], json.dumps({"exit": code, "timed_out": job["killed"],
                                                    "seconds": round(time.monotonic() - job["start"], 6)}).encode())
            except OSError:
                pass
            os.close(job["status"])
        now = time.monotonic()
        for job in jobs.values():
            if not job["killed"] and now >= job["deadline"]:
                job["killed"] = True
                _kill_run(job, sandboxed)


def _start_child(header: dict[str, Any], fds: list[int], sock: socket.socket, jobs: dict[int, dict[str, Any]],
                 runs: str, sandboxed: bool, shell: Any) -> dict[str, Any]:
    req_fd, results_fd, output_fd, status_fd = fds
    uid = UID_BASE + _random.randrange(UID_SPAN) if sandboxed else None
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:   # the child: never returns
        try:
            keep = {req_fd, results_fd, output_fd}
            for name in os.listdir("/proc/self/fd"):   # nothing of the worker or of other runs
                fd = int(name)
                if fd > 2 and fd not in keep:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            _child(header, req_fd, results_fd, output_fd, uid, runs, sandboxed, shell)
        except BaseException:
            try:
                traceback.print_exc()
            finally:
                os._exit(70)
        os._exit(0)
    for fd in (req_fd, results_fd, output_fd):
        os.close(fd)
    return {"pid": pid, "pidfd": os.pidfd_open(pid), "uid": uid, "status": status_fd, "start": start,
            "deadline": start + float(header["wall"]), "killed": False}


def _child(header: dict[str, Any], req_fd: int, results_fd: int, output_fd: int, uid: int | None, runs: str,
           sandboxed: bool, shell: Any) -> None:
    """One run, in a fresh fork of the worker: private folders and namespaces, limits, then the
    probe as an unprivileged uid. Order matters: root is given up before any submission code runs."""
    from autograder import probe

    os.setsid()
    limits = Limits(**header["limits"])
    if sandboxed:
        libc = _libc()
        _check(libc.unshare(_CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWIPC | _CLONE_NEWUTS), "unshare")
        _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate /")
        work, home = os.path.join(runs, "work"), os.path.join(runs, "home")
        for path, size in ((work, limits.work_bytes), (home, 64 * 2**20)):   # the only writable places
            opts = f"size={size},mode=1777".encode()
            _check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, opts),
                   f"mount {path}")
    else:
        work, home = header["dirs"]
    os.chdir(work)
    os.environ.clear()
    os.environ.update(_environment(home))
    tempfile.tempdir = None   # the worker's choice was made before this run's folders existed
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    for fd in (devnull, output_fd):
        os.close(fd)
    request = json.loads(os.pread(req_fd, 1 << 31, 0))
    os.close(req_fd)
    _limit(limits)
    if uid is not None:   # no root, no capabilities for the submission's code
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    probe.run(request, results_fd, shell)


def _kill_run(job: dict[str, Any], sandboxed: bool) -> None:
    """Kill a run and everything it started: its session, and, where runs have a uid of their own,
    every process of that uid. The worker (root) signals each one through a pidfd, after checking
    its uid through that pidfd's process, so nothing the run does can stop the sweep or redirect
    it (a helper process of the run's uid could itself be stopped by the run)."""
    try:
        os.killpg(job["pid"], signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if not sandboxed or job["uid"] is None:
        return
    for _ in range(100):   # a run may still be forking while it is swept; at most `processes` at a time
        pids = _uid_processes(job["uid"])
        if not pids:
            return
        for pid in pids:
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                if os.stat(f"/proc/{pid}").st_uid == job["uid"]:   # still that process (pinned by the pidfd)
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
            except OSError:
                pass
            finally:
                os.close(fd)


def _uid_processes(uid: int) -> list[int]:
    """The pids of `uid`'s processes that are alive (zombies aside)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    with open(f"/proc/{name}/stat", "rb") as f:
                        if f.read().rsplit(b")", 1)[-1].split()[0] != b"Z":
                            out.append(int(name))
            except OSError:
                pass
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        _worker_main(int(sys.argv[2]), sys.argv[3], sys.argv[4] == "sandboxed")
