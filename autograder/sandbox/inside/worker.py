"""worker: what runs INSIDE the sandbox, on the untrusted side: the warm worker's loop (imports torch,
IPython and the probe once, then moves its memory into huge pages between runs), one fresh fork per submission
(forked ahead while the loop is idle, with its session and namespaces; then private folders, limits, an
unprivileged uid, then the probe) and the clean-up that kills everything a run started. Started by
`sandbox.Worker` as `python -I -m autograder.sandbox.inside.worker --worker FD RUNS sandboxed|plain`; it talks to the
grader over one SOCK_SEQPACKET socket (a JSON header, with the warm-ups the run's cells may need, and four
passed fds per run: request, results, output, status) and answers each run on its status pipe with {"exit",
"timed_out", "stalled", "over_memory", "seconds", "cpu", "faults", "worker_cpu", "worker_huge", "cgroup"} (the CPU
seconds, user and system, of all the run's processes from its cgroup, else of the child alone from wait4; the
child's minor page faults; the worker's own CPU seconds so far; "cgroup": "" when the run had a cgroup of its own,
else why not).

The worker, which no submission can reach, holds every limit of a run whatever the submission does:
- the submission's wall time (`timed_out`);
- each step: before each cell and each call the probe writes the step's alarm limit (seconds, one line)
  into a "beat" pipe of the run's own; when a step outlasts `Limits.step_seconds` of it (its alarm was
  ignored, blocked, re-armed or not answered), the run is stopped (`stalled`). A submission that writes
  into that pipe can only keep its own run going, up to its wall limit;
- the memory of all the run's processes together (`over_memory`): where the machine delegates a cgroup, the kernel
  counts every page charged to the run's cgroup and kills at its budget (`sandbox.cgroup`); else the worker adds up
  their private memory (/proc/<pid>/smaps_rollup) every MEMORY_POLL seconds, less what its huge-page collapse
  left to them meanwhile;
- the end of everything the run started: at its end the run's cgroup is killed and the worker waits until it is
  empty before it reports the run (so the next run starts with nothing of this one alive); without a cgroup, every
  process of the run's uid is swept.

May import: stdlib, pyseccomp (the run's syscall filter), autograder.model, autograder.sandbox.policy,
autograder.sandbox.cgroup, autograder.sandbox.inside.probe, autograder.sandbox.inside.hugepages (and, by name, the
modules policy.WARM_IMPORTS lists, to warm them).
"""
from __future__ import annotations

import fcntl
import gc
import importlib
import json
import os
import random
import signal
import socket
import struct
import sys
import tempfile
import time
import traceback
from typing import Any

from autograder.sandbox import cgroup, policy
from autograder.sandbox.inside import hugepages
from autograder.model import Limits

_random = random.SystemRandom()
MEMORY_POLL = 0.1   # seconds between two measurements of a run's memory

# Linux constants (linux/sched.h, linux/mount.h) for the run's own namespaces and folders.
_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC, _CLONE_NEWNET = 0x00020000, 0x04000000, 0x08000000, 0x40000000
_CLONE_NEWCGROUP, _CLONE_NEWUSER, _CLONE_PARENT = 0x02000000, 0x10000000, 0x00008000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x8, 0x20, 0x4000, 0x40000
# linux/sockios.h, linux/if.h: read and set an interface's flags (struct ifreq: a 16-byte name, then the flags)
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def main(sock_fd: int, runs: str, sandboxed: bool, tree: cgroup.Tree = cgroup.NONE) -> None:
    """The worker's loop: import torch, IPython and the probe once, then fork one child per job and
    report each child's end (exit code, timeout, seconds) on the job's status pipe. Ends when the
    grader closes its socket (its children are killed then). `tree`: where the runs' cgroups go (the grader made
    the worker's folders there)."""
    from autograder.sandbox.inside import probe

    for d in ("work", "home"):
        os.makedirs(os.path.join(runs, d), mode=0o1777, exist_ok=True)
    shell = probe.prepare()
    for name in policy.WARM_IMPORTS:   # what every notebook's setup cell imports: once here, for every child
        importlib.import_module(name)

    gc.collect(1)   # the young generations only: a full collection here finds nothing and costs ~90 ms of every start
    gc.freeze()     # what the worker holds is out of the children's collections: their gc copies none of its pages
    why_not = hugepages.supported()   # the worker's memory goes into huge pages between runs (forks are cheaper)
    collapser = hugepages.Collapser(why_not)
    collapsed = 0   # bytes the worker has collapsed so far: a run alive meanwhile is credited them (the memory check below)

    syscalls, no_filter = _syscall_filter()
    spares = _Spares(runs, sandboxed, shell, tree, syscalls)

    sock = socket.socket(fileno=sock_fd)
    sock.sendall(b"ready" + json.dumps({"huge_pages": why_not or "yes", "syscall_filter": no_filter or "yes"}).encode())
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    jobs: dict[int, dict[str, Any]] = {}   # pidfd -> job
    beats: dict[int, dict[str, Any]] = {}  # beat pipe -> job
    spare: dict[str, Any] | None = None    # the next run's child, forked ahead (see _Spares.fork)
    next_poll = time.monotonic()
    import select

    while True:
        now = time.monotonic()
        deadlines = [min(j["deadline"], j["step_deadline"]) for j in jobs.values() if not j["killed"]]
        if deadlines:
            deadlines.append(next_poll)
        timeout = max(0.0, min(deadlines) - now) if deadlines else None
        idle_work = spare is None or collapser.pending
        ready = select.select([sock, *jobs, *beats], [], [], 0.0 if idle_work else timeout)[0]
        if not ready and idle_work:   # nothing to answer: fork the next run's child, else a step of the collapse
            if spare is None:
                spare = spares.fork(collapsed)
            else:
                collapsed += collapser.step()   # about 5 ms
        if sock in ready:
            try:
                msg, fds, _, _ = socket.recv_fds(sock, 1 << 16, 8)
            except OSError:
                msg, fds = b"", []
            if not msg:   # the grader is gone: so are its runs
                for job in jobs.values():
                    _kill_run(job, sandboxed)
                if spare is not None:
                    _discard(spare)
                for job in jobs.values():   # their cgroups must be empty before the grader removes the folders
                    if job["group"] is not None:
                        job["group"].wait_empty(2.0)
                os._exit(0)
            header = json.loads(msg)
            if probe.warm_up(header.get("warm", ())):   # once per worker: every later run inherits it (it blocks
                gc.collect()                             # this loop for a second or two, once)
                gc.freeze()
                collapser = hugepages.Collapser(why_not, collapser.done)   # what the warm-up added
                if spare is not None:   # forked before the warm-up: it lacks it
                    _discard(spare)
                    spare = None
            job = None
            for _ in range(2):   # a spare that died meanwhile is replaced once
                if spare is None:
                    spare = spares.fork(collapsed)
                try:
                    job = spares.dispatch(spare, header, fds)
                except OSError:
                    _discard(spare)
                    continue
                finally:
                    spare = None
                break
            if job is None:   # no child could take the run: it ends at once, with the code of a probe's fault
                for fd in fds[:3]:
                    os.close(fd)
                _report(fds[3], {"exit": 70, "timed_out": False, "stalled": False, "over_memory": False,
                                 "seconds": 0.0, "cpu": 0.0, "faults": 0, "worker_cpu": round(_own_cpu(), 6),
                                 "worker_huge": collapser.held[0], "cgroup": spares.why_not})
            else:
                jobs[job["pidfd"]] = job
                beats[job["beat"]] = job
        _read_beats([fd for fd in ready if fd in beats], beats)
        for pidfd in [fd for fd in ready if fd in jobs]:
            job = jobs.pop(pidfd)
            if job["beat"] >= 0:
                beats.pop(job["beat"], None)
                os.close(job["beat"])
            group = job["group"]
            _kill_run(job, sandboxed)   # what it left running goes too (before the reap: no pid reuse)
            emptied = group is None or group.wait_empty()   # nothing of this run is alive when it is reported
            _, status, usage = os.wait4(job["pid"], 0)
            os.close(pidfd)
            cpu = group.cpu_seconds() if group is not None else None
            if group is not None and group.oom_killed():   # the kernel stopped it before a poll saw it
                job["killed"] = job["killed"] or "memory"
            _report(job["status"], {"exit": os.waitstatus_to_exitcode(status), "timed_out": job["killed"] == "wall",
                                    "stalled": job["killed"] == "step", "over_memory": job["killed"] == "memory",
                                    "seconds": round(time.monotonic() - job["start"], 6),
                                    "cpu": round(cpu if cpu is not None else usage.ru_utime + usage.ru_stime, 6),
                                    "faults": usage.ru_minflt, "worker_cpu": round(_own_cpu(), 6),
                                    "worker_huge": collapser.held[0],
                                    "cgroup": job["why_no_group"] if emptied else
                                    "the run's cgroup was not empty 10 s after it was killed"})
            if group is not None and emptied:   # after the report: not on the run's time
                group.remove()
        if beats and time.monotonic() - now > 0.5:   # this pass was slow (a run's end waited for its cgroup): the
            # beats the other runs wrote meanwhile are read before their step deadlines are judged
            _read_beats(select.select(list(beats), [], [], 0.0)[0], beats)
        now = time.monotonic()
        poll = now >= next_poll
        if poll:
            next_poll = now + MEMORY_POLL
        for job in jobs.values():
            if job["killed"]:
                continue
            if now >= job["deadline"]:
                job["killed"] = "wall"
            elif now >= job["step_deadline"]:
                job["killed"] = "step"
            elif poll and _over_memory(job, sandboxed, now, collapsed):
                job["killed"] = "memory"
            if job["killed"]:
                _kill_run(job, sandboxed)


def _read_beats(ready: list[int], beats: dict[int, dict[str, Any]]) -> None:
    """Read the beat pipes in `ready`: each beat sets its run's step deadline from the step's own limit; a pipe
    closed (the run ended it, or ended) is dropped, and only the run's wall limit and its memory still apply."""
    for fd in ready:
        job = beats[fd]
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b""
        if not data:
            del beats[fd]
            os.close(fd)
            job["beat"] = -1
            continue
        try:
            limit = float(data.rstrip(b"\n").rsplit(b"\n", 1)[-1])
        except ValueError:
            continue
        step = min(job["limits"].step_seconds(max(0.0, limit)), job["step_max"])
        job["step_deadline"] = time.monotonic() + step


def _own_cpu() -> float:
    """CPU seconds (user and system) the worker itself has used so far (its runs not included)."""
    import resource

    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def _report(status_fd: int, status: dict[str, Any]) -> None:
    """Write a run's end on its status pipe and close it (a grader that stopped listening loses nothing else)."""
    try:
        os.write(status_fd, json.dumps(status).encode())
    except OSError:
        pass
    os.close(status_fd)


class _Spares:
    """Forks the next run's child ahead of its run (`fork`), while the worker has nothing to answer, with a cgroup of
    its own where the worker has a `tree` (the child enters it before anything else); `why_not` says why the runs
    have no cgroup ("" when they have)."""

    def __init__(self, runs: str, sandboxed: bool, shell: Any, tree: cgroup.Tree, syscalls: Any) -> None:
        self.runs, self.sandboxed, self.shell, self.tree, self.syscalls = runs, sandboxed, shell, tree, syscalls
        self.made = 0
        self.why_not = "" if tree.unified or tree.memory or tree.pids else tree.why_not or "no cgroup"
        self.limits = Limits()   # the last run's: most likely the next one's too (a batch has one key)

    def fork(self, collapsed: int = 0) -> dict[str, Any]:
        """Fork a spare: it closes what it inherited of the worker and of other runs, enters its run's cgroup, takes
        its own session and namespaces (`_isolate`), then waits, still root but running nothing of a submission,
        for one message on a socket of its own: the run's header (with its uid) and the run's four fds. It then goes
        on as a child forked for that run would (`_child`). A spare is used once, for one run; the worker holds at
        most one. `collapsed`: the worker's collapsed bytes so far (what it collapses from now on may become this
        child's memory, where no cgroup counts it). Returns {"pid", "pidfd", "sock", "collapsed_at", "group",
        "why_no_group"}."""
        group, why = None, self.why_not
        if not why:
            self.made += 1
            try:
                group = cgroup.RunGroup(self.tree, f"run-{self.made}")
                group.limit(self.limits.run_memory_bytes, self.limits.processes)   # set now, while idle (see _dispatch)
            except OSError as e:
                why = f"the run's cgroup could not be made ({e.strerror})"
                if group is not None:
                    group.remove()
                    group = None
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:   # the spare: never returns
            try:
                self._spare(theirs, group)
            except BaseException:
                try:
                    traceback.print_exc()
                finally:
                    os._exit(70)
            os._exit(0)
        theirs.close()
        return {"pid": pid, "pidfd": os.pidfd_open(pid), "sock": mine, "collapsed_at": collapsed, "group": group,
                "why_no_group": why}

    def dispatch(self, spare: dict[str, Any], header: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """`_dispatch`, remembering the run's limits for the next spare's cgroup."""
        self.limits = Limits(**header["limits"])
        return _dispatch(spare, header, fds, self.sandboxed)

    def _spare(self, theirs: socket.socket, group: cgroup.RunGroup | None) -> None:
        failed = ""
        try:
            if group is not None:   # first: everything this process and its children do is the run's
                group.enter()
            keep = theirs.fileno()
            for name in os.listdir("/proc/self/fd"):   # nothing of the worker or of other runs
                fd = int(name)
                if fd > 2 and fd != keep:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            _isolate(self.sandboxed, self.runs, group is not None)
        except BaseException:   # said in the run's output once the run's fds are here
            failed = traceback.format_exc()
        msg, fds, _, _ = socket.recv_fds(theirs, 1 << 16, 4)
        if not msg or len(fds) != 4:   # the worker discarded it, or is gone
            os._exit(0)
        received = time.monotonic()
        theirs.close()
        header = json.loads(msg)
        req_fd, results_fd, output_fd, beat_w = fds
        if failed:
            os.write(output_fd, failed.encode())
            os._exit(70)
        _child(header, req_fd, results_fd, output_fd, beat_w, header["uid"], self.runs, self.sandboxed, self.shell,
               (header["start"], received), self.syscalls)


def _discard(spare: dict[str, Any]) -> None:
    """End a spare that will run nothing (the worker's end, a warm-up it lacks, a failed hand-over), reap it and
    remove its cgroup."""
    try:
        signal.pidfd_send_signal(spare["pidfd"], signal.SIGKILL)
    except OSError:
        pass
    spare["sock"].close()
    os.waitpid(spare["pid"], 0)
    os.close(spare["pidfd"])
    if spare["group"] is not None and spare["group"].wait_empty(2.0):
        spare["group"].remove()


def _dispatch(spare: dict[str, Any], header: dict[str, Any], fds: list[int], sandboxed: bool) -> dict[str, Any]:
    """Give a run to `spare`: its cgroup's limits (memory, processes), its uid (drawn now), its beat pipe's writing
    end and the grader's fds for the request, results and output; the status fd stays here. Its limits count from
    now. Returns the job. Raises OSError when the spare is gone (the caller discards it and forks another)."""
    req_fd, results_fd, output_fd, status_fd = fds
    uid = policy.UID_BASE + _random.randrange(policy.UID_SPAN) if sandboxed else None
    limits = Limits(**header["limits"])
    killed = ""
    if spare["group"] is not None:
        try:   # usually set when the spare was forked, from the last run's limits: then nothing to do
            spare["group"].limit(limits.run_memory_bytes, limits.processes)
        except OSError:   # the kernel refuses a budget below what the run's child holds already (cgroup v1)
            killed = "memory"
    beat_r, beat_w = os.pipe()
    start = time.monotonic()
    try:
        socket.send_fds(spare["sock"], [json.dumps({**header, "uid": uid, "start": start}).encode()],
                        [req_fd, results_fd, output_fd, beat_w])
    except OSError:
        os.close(beat_r)
        os.close(beat_w)
        raise
    spare["sock"].close()
    for fd in (req_fd, results_fd, output_fd, beat_w):
        os.close(fd)
    os.set_blocking(beat_r, False)
    step_max = limits.step_seconds(max(limits.cell_timeout, limits.call_timeout))
    job = {"pid": spare["pid"], "pidfd": spare["pidfd"], "uid": uid, "status": status_fd, "start": start,
           "deadline": start + float(header["wall"]), "killed": killed, "beat": beat_r, "limits": limits,
           "step_max": step_max, "step_deadline": start + step_max, "collapsed_at": spare["collapsed_at"],
           "group": spare["group"], "why_no_group": spare["why_no_group"]}
    if killed:
        _kill_run(job, sandboxed)
    return job


def _isolate(sandboxed: bool, runs: str, own_cgroup: bool = False) -> None:
    """The part of a run's set-up that needs nothing of the run: its own session and, sandboxed, its own mount,
    network, IPC and UTS namespaces (and cgroup namespace, where it has a cgroup: the run sees its own as the root;
    mounts private from the worker's; the network namespace's own loopback up, and nothing else in it), a devpts of
    its own with at most policy.PTYS_PER_RUN terminals, its two tmpfs folders (the working folder at the default
    size: `_child` resizes it for a run whose limits differ), the working folder as its current one and its whole
    environment; and the first use of json (a pure module, warmed so the run does not pay for it)."""
    os.setsid()
    if sandboxed:
        libc = _libc()
        own = _CLONE_NEWCGROUP if own_cgroup else 0
        _check(libc.unshare(_CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWIPC | _CLONE_NEWUTS | own), "unshare")
        _loopback_up()
        _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate /")
        _check(libc.mount(b"devpts", b"/dev/pts", b"devpts", _MS_NOSUID | _MS_NOEXEC,
                          f"newinstance,ptmxmode=0666,mode=0620,max={policy.PTYS_PER_RUN}".encode()), "mount devpts")
        work, home = os.path.join(runs, "work"), os.path.join(runs, "home")
        for path, size in ((work, Limits().work_bytes), (home, policy.HOME_BYTES)):   # the only writable places
            _mount_tmpfs(libc, path, size)
        _enter(work, home)
    json.loads(json.dumps({"k": [0.5, "x", None]}))


def _loopback_up() -> None:
    """Bring up `lo` of the run's new network namespace (as root, before the uid is given up): 127.0.0.1 then reaches
    the run's own processes and nothing else (the namespace has no other interface and no route out), so that
    processes of one run can talk over a local socket (torch.distributed's gloo backend needs an interface: 12's
    DistributedDataParallel exercise). Raises OSError when the ioctl fails."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


# Files and folders a run's tmpfs may hold: the exercises make a handful; an attack in 2026-12 made 3 million empty
# folders, whose teardown at the run's end took the kernel 20 s (while the worker waited for the cgroup to empty).
INODES_PER_TMPFS = 50_000


def _mount_tmpfs(libc: Any, path: str, size: int, again: bool = False) -> None:
    opts = f"size={size},nr_inodes={INODES_PER_TMPFS},mode=1777".encode()
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC | (_MS_REMOUNT if again else 0)
    _check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", flags, opts), f"mount {path}")


def _enter(work: str, home: str) -> None:
    """Make `work` the current folder and give the process a run's whole environment (nothing of the worker's)."""
    os.chdir(work)
    os.environ.clear()
    os.environ.update(policy.environment(home))
    tempfile.tempdir = None   # the worker's choice was made before this run's folders existed


def _child(header: dict[str, Any], req_fd: int, results_fd: int, output_fd: int, beat_fd: int, uid: int | None,
           runs: str, sandboxed: bool, shell: Any, times: tuple[float, float] = (0.0, 0.0), syscalls: Any = None) -> None:
    """One run, in a fresh fork of the worker that `_isolate` has set up: the run's own folder size, output,
    request and limits, then the probe as an unprivileged uid, under the run's syscall filter. Order matters: root
    is given up before any submission code runs. `times`: when the worker handed the run over and when this child
    received it (monotonic seconds; a profiled request's probe reports them)."""
    from autograder.sandbox.inside import probe

    limits = Limits(**header["limits"])
    if sandboxed:
        if limits.work_bytes != Limits().work_bytes:
            _mount_tmpfs(_libc(), os.path.join(runs, "work"), limits.work_bytes, again=True)
    else:
        _enter(*header["dirs"])
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    for fd in (devnull, output_fd):
        os.close(fd)
    for stream in (sys.stdout, sys.stderr):   # as Jupyter's kernel: what cannot be encoded is escaped, never raised
        stream.reconfigure(encoding="utf-8", errors="backslashreplace")
    request = json.loads(os.pread(req_fd, 1 << 31, 0))
    os.close(req_fd)
    if "profile" in request:
        request["profile"] = {"fork_start": times[0], "child_start": times[1], "sent": header.get("sent", 0.0)}
    policy.apply_limits(limits)
    if uid is not None:   # no root, no capabilities for the submission's code
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    if syscalls is not None:   # after the uid, which no_new_privs would keep from changing
        _load_filter(syscalls)
    probe.run(request, results_fd, shell, beat_fd)


def _syscall_filter() -> tuple[bytes | None, str]:
    """(the run's syscall filter as a BPF program, compiled once in the worker and loaded by each run's child with
    `_load_filter`; "") or (None, why not). It refuses what policy.DENIED_SYSCALLS lists and user namespaces
    (unshare and clone with CLONE_NEWUSER: EPERM; clone with CLONE_PARENT, whose child the worker would have to reap:
    EPERM; clone3, whose flags a filter cannot read: ENOSYS, so that the C
    library falls back to clone); everything else is allowed. Compiled by libseccomp (pyseccomp), which also covers
    the architecture's other syscall ABIs (x32 on x86_64)."""
    import errno

    try:
        import pyseccomp as seccomp
    except (ImportError, RuntimeError, OSError) as e:   # RuntimeError: pyseccomp found no libseccomp
        return None, f"no syscall filter ({e})"
    try:
        f = seccomp.SyscallFilter(seccomp.ALLOW)
        for name in ("unshare", "clone"):
            f.add_rule(seccomp.ERRNO(errno.EPERM), name,
                       seccomp.Arg(0, seccomp.MASKED_EQ, _CLONE_NEWUSER, _CLONE_NEWUSER))
        # CLONE_PARENT makes the new process a child of the run's parent, the worker, where nothing reaps it: a
        # zombie per call that outlives the run, until the machine's process table is full
        f.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, _CLONE_PARENT, _CLONE_PARENT))
        f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
        for name in policy.DENIED_SYSCALLS:
            f.add_rule(seccomp.ERRNO(errno.EPERM), name)
        fd = os.memfd_create("filter")
        with os.fdopen(fd, "w+b") as out:
            f.export_bpf(out)
            out.seek(0)
            program = out.read()
    except OSError as e:
        return None, f"no syscall filter ({e})"
    return program, ""


def _load_filter(program: bytes) -> None:
    """Install a BPF syscall filter (struct sock_filter[]: 8 bytes per instruction) on the calling thread, after
    PR_SET_NO_NEW_PRIVS (linux/prctl.h, linux/seccomp.h). Raises OSError when the kernel refuses it."""
    import ctypes

    class _Program(ctypes.Structure):   # struct sock_fprog
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    libc = _libc()
    _check(libc.prctl(38, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    fprog = _Program(len(program) // 8, program)
    _check(libc.prctl(22, 2, ctypes.byref(fprog), 0, 0), "prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)")


def _kill_run(job: dict[str, Any], sandboxed: bool) -> None:
    """Kill a run and everything it started: its cgroup (the kernel's list, which nothing of the run can leave),
    else its session and, where runs have a uid of their own, every process of that uid (the worker, root, signals
    each through a pidfd after checking its uid through that pidfd's process, so nothing the run does can stop the
    sweep or redirect it; a helper process of the run's uid could itself be stopped by the run)."""
    try:
        os.killpg(job["pid"], signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if job["group"] is not None:
        job["group"].kill()
        return
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


def _over_memory(job: dict[str, Any], sandboxed: bool, now: float, collapsed: int) -> bool:
    """Has the run outgrown its memory budget? With a memory cgroup the kernel enforces it, and this only asks
    whether it has killed for it; else the worker measures (after the run's first MEMORY_POLL seconds), crediting
    the run with what the worker's huge-page collapse left to it meanwhile."""
    group = job["group"]
    if group is not None and group.folders.get("memory"):
        return group.oom_killed()
    if now - job["start"] < MEMORY_POLL:
        return False
    return _run_memory(job, sandboxed) - (collapsed - job["collapsed_at"]) > job["limits"].run_memory_bytes


def _run_processes(job: dict[str, Any], sandboxed: bool) -> list[int]:
    """The pids of a run's processes: its cgroup's, else every process of its uid, else its child and that child's
    descendants (found through /proc/<pid>/stat's parent pid)."""
    if job["group"] is not None:
        return job["group"].pids()
    if sandboxed and job["uid"] is not None:
        return _uid_processes(job["uid"])
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    parents[int(name)] = int(f.read().rsplit(b")", 1)[-1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    found, frontier = [job["pid"]], [job["pid"]]
    while frontier:
        frontier = [p for p, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def _run_memory(job: dict[str, Any], sandboxed: bool) -> int:
    """Bytes of private memory (Private_Clean + Private_Dirty + Swap, smaps_rollup) of all the run's processes
    together: what the run itself holds, not the pages it shares with the warm worker. (Nor the pages its own
    processes share after a fork: docs/security.md, known limits; a memory cgroup counts those.) A process whose
    leader has exited while its other threads run on is read through one of those threads."""
    total = 0
    for pid in _run_processes(job, sandboxed):
        for task in [str(pid), *_tasks(pid)]:
            try:
                with open(f"/proc/{pid}/task/{task}/smaps_rollup", "rb") as f:
                    for line in f:
                        if line.startswith((b"Private_Clean:", b"Private_Dirty:", b"Swap:")):
                            total += int(line.split()[1]) * 1024
                break
            except (OSError, ValueError, IndexError):
                continue
    return total


def _tasks(pid: int) -> list[str]:
    """The thread ids of process `pid` other than its leader ([] when it is gone)."""
    try:
        return [t for t in os.listdir(f"/proc/{pid}/task") if t != str(pid)]
    except OSError:
        return []


def _uid_processes(uid: int) -> list[int]:
    """The pids of `uid`'s processes that are alive: a zombie is left out unless it is a leader whose other
    threads still run (such a process runs on, and kill(2) of its pid ends them)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    with open(f"/proc/{name}/stat", "rb") as f:
                        fields = f.read().rsplit(b")", 1)[-1].split()
                    if fields[0] != b"Z" or int(fields[17]) > 1:   # state, num_threads
                        out.append(int(name))
            except (OSError, ValueError, IndexError):
                pass
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        main(int(sys.argv[2]), sys.argv[3], sys.argv[4] == "sandboxed",
             cgroup.Tree.from_json(sys.argv[5]) if len(sys.argv) > 5 else cgroup.NONE)
