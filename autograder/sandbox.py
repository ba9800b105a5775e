"""sandbox: the only place that starts processes. Runs the probe on a request in a fresh process, in a
fresh temporary directory, with a scrubbed environment, resource limits and a wall-clock timeout
that kills the whole process group. Where bubblewrap (`bwrap`) works, the process also gets no
network, its own PID namespace (it cannot see or signal the grader), a read-only view of the file
system, and the grader's working folder (keys, solutions, other submissions) replaced by an empty
one; only the Python environment and the autograder package are shown back, read-only.
Imports stdlib only.
"""
from __future__ import annotations

import json
import os
import random
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
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
    # Runs in the child between fork and exec. RLIMIT_NPROC binds once the probe is not root.
    resource.setrlimit(resource.RLIMIT_NPROC, (128, 128))
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))   # 128 x 1024 stays far below fs.file-max
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


def _closed_ancestors(paths: list[str]) -> list[str]:
    """Folders above `paths` that other users cannot enter (e.g. /root holding pyenv): they are
    replaced by empty ones, with the paths shown back, so the unprivileged uid can reach them."""
    out = set()
    for path in paths:
        parts = Path(path).parts
        for i in range(2, len(parts)):
            folder = str(Path(*parts[:i]))
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                out.add(folder)
                break
    return sorted(out)


def _bwrap_command(bwrap: str, runs: str, work: str, home: str, hidden: list[str], argv: list[str],
                   limits: Limits) -> list[str]:
    cmd = [bwrap, "--ro-bind", "/", "/", *BWRAP_FLAGS]
    done: list[str] = []
    for path in sorted({os.path.realpath(h) for h in hidden if h} | set(_closed_ancestors(_shown_back()))):
        inside = any(path == d or path.startswith(d.rstrip("/") + "/") for d in done)
        if path != "/" and os.path.isdir(path) and not inside:
            cmd += ["--tmpfs", path]
            done.append(path)
    cmd += ["--tmpfs", runs]
    for path, size in ((work, limits.work_bytes), (home, 64 * 2**20)):   # the only writable places
        cmd += ["--perms", "1777", "--size", str(size), "--tmpfs", path]
    made: set[str] = set()
    for path in _shown_back():
        if not os.path.exists(path):
            continue
        cover = max((d for d in done if path.startswith(d.rstrip("/") + "/")), key=len, default=None)
        if cover:   # folders between an emptied folder and what is shown back must be enterable
            parts = Path(path).relative_to(cover).parts
            for i in range(1, len(parts)):
                folder = str(Path(cover, *parts[:i]))
                if folder not in made:
                    made.add(folder)
                    cmd += ["--perms", "0755", "--dir", folder]
        cmd += ["--ro-bind", path, path]
    return cmd + ["--chdir", work, "--", *argv]


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


def _tail(path: str) -> str:
    """The last OUTPUT_TAIL_BYTES of the output file; "" if it is anything but a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return ""
        size = os.fstat(f.fileno()).st_size
        f.seek(max(0, size - OUTPUT_TAIL_BYTES))
        return f.read(OUTPUT_TAIL_BYTES).decode("utf-8", "replace")


def run_probe(request: dict[str, Any], limits: Limits = Limits(), hidden: list[str] | None = None) -> ProbeRun:
    """Run `python -I -m autograder.probe` on `request` in a fresh sandboxed process.

    Args:
        request: a probe request (`plan.probe_request`); JSON-native, no expected values.
        limits: wall/CPU seconds and memory/file/output bytes for the whole run.
        hidden: folders to replace by empty ones inside the sandbox (with bwrap), besides the
            current working folder: e.g. the key's folder and the solutions.
    Returns:
        ProbeRun. A timeout kills the process group and sets `timed_out`; the records written
        before the kill are kept. Results come through a pipe, so the submission can add to
        them but not erase what the probe already sent.
    Raises:
        OSError: the process could not be started at all (a grader fault, not a student's).
    """
    runs = _runs_dir()
    root = tempfile.mkdtemp(prefix="run-", dir=runs)
    os.chmod(root, 0o755)
    read_end, write_end = os.pipe()
    try:
        work, home = os.path.join(root, "work"), os.path.join(root, "home")
        os.mkdir(work)
        os.mkdir(home)
        output_path = os.path.join(root, "output.txt")
        argv = [sys.executable, "-I", "-m", "autograder.probe", "--out-fd", str(write_end)]
        bwrap, why_not = bwrap_status()
        if bwrap:
            if os.geteuid() == 0:
                uid = UID_BASE + _random.randrange(UID_SPAN)   # two graders at once will not share one
                argv += ["--user", str(uid)]
            argv = _bwrap_command(bwrap, runs, work, home, [os.getcwd(), *(hidden or [])], argv, limits)
            isolation = ("bwrap: unprivileged uid, no network, own PID namespace, read-only files except a "
                         "small private folder; the grader's folder, keys and solutions hidden")
        else:
            isolation = f"own process only ({why_not}): files and network are not isolated"
        reader = _Reader(read_end)
        reader.start()
        start = time.monotonic()
        with open(output_path, "wb") as output:
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=output, stderr=subprocess.STDOUT, cwd=work,
                env=_environment(home), start_new_session=True, preexec_fn=lambda: _limit(limits),
                pass_fds=(write_end,),
            )
            os.close(write_end)
            write_end = -1
            timed_out = False
            try:
                proc.communicate(json.dumps(request).encode(), timeout=limits.wall_seconds)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                try:   # the whole group: children the submission started go too
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        seconds = time.monotonic() - start
        reader.join(timeout=2.0)   # EOF comes when every holder of the pipe is gone
        reader.stop.set()
        reader.join()
        results, cut = reader.result()
        return ProbeRun(results, _tail(output_path), proc.returncode, timed_out, seconds, cut, isolation)
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)
        shutil.rmtree(root, ignore_errors=True)


def run_tool(args: list[str], stdin: bytes, timeout: float = 120.0) -> bytes:
    """Run a trusted autograder helper (`python -m autograder ARGS`) and return its stdout.

    Used by the in-notebook self-check so that the key and the comparison stay out of the
    student's kernel. Raises RuntimeError with the helper's stderr if it fails or times out.
    """
    try:
        done = subprocess.run([sys.executable, "-m", "autograder", *args], input=stdin, capture_output=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the self-check helper did not answer within {timeout:g} s") from None
    if done.returncode != 0:
        raise RuntimeError(f"the self-check helper failed: {done.stderr.decode('utf-8', 'replace')[-2000:]}")
    return done.stdout
