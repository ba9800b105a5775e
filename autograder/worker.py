"""worker: what runs INSIDE the sandbox, on the untrusted side: the warm worker's loop (imports torch,
IPython and the probe once), one fresh fork per submission (private folders and namespaces, limits, an
unprivileged uid, then the probe) and the clean-up that kills everything a run started. Started by
`sandbox.Worker` as `python -I -m autograder.worker --worker FD RUNS sandboxed|plain`; it talks to the
grader over one SOCK_SEQPACKET socket (a JSON header and four passed fds per run: request, results,
output, status) and answers each run on its status pipe with {"exit", "timed_out", "seconds"}.

May import: stdlib, autograder.model, autograder.policy, autograder.probe, autograder.lab (to warm it).
"""
from __future__ import annotations

import json
import os
import random
import signal
import socket
import sys
import tempfile
import time
import traceback
from typing import Any

from autograder import policy
from autograder.model import Limits

_random = random.SystemRandom()

# Linux constants (linux/sched.h, linux/mount.h) for the run's own namespaces and folders.
_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC, _CLONE_NEWNET = 0x00020000, 0x04000000, 0x08000000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000


def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def main(sock_fd: int, runs: str, sandboxed: bool) -> None:
    """The worker's loop: import torch, IPython and the probe once, then fork one child per job and
    report each child's end (exit code, timeout, seconds) on the job's status pipe. Ends when the
    grader closes its socket (its children are killed then)."""
    from autograder import probe

    for d in ("work", "home"):
        os.makedirs(os.path.join(runs, d), mode=0o1777, exist_ok=True)
    shell = probe.prepare()
    import autograder.lab  # noqa: F401  (every notebook's setup cell imports it: once here, for every child)

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
            job = _start_child(json.loads(msg), fds, runs, sandboxed, shell)
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


def _start_child(header: dict[str, Any], fds: list[int], runs: str, sandboxed: bool, shell: Any) -> dict[str, Any]:
    req_fd, results_fd, output_fd, status_fd = fds
    uid = policy.UID_BASE + _random.randrange(policy.UID_SPAN) if sandboxed else None
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
        for path, size in ((work, limits.work_bytes), (home, policy.HOME_BYTES)):   # the only writable places
            opts = f"size={size},mode=1777".encode()
            _check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, opts),
                   f"mount {path}")
    else:
        work, home = header["dirs"]
    os.chdir(work)
    os.environ.clear()
    os.environ.update(policy.environment(home))
    tempfile.tempdir = None   # the worker's choice was made before this run's folders existed
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    for fd in (devnull, output_fd):
        os.close(fd)
    request = json.loads(os.pread(req_fd, 1 << 31, 0))
    os.close(req_fd)
    policy.apply_limits(limits)
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
        main(int(sys.argv[2]), sys.argv[3], sys.argv[4] == "sandboxed")
