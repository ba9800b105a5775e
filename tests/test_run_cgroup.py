"""Is a run a cgroup (issue 43)? Nothing a submission starts outlives its run or escapes its limits: processes that
leave their run (a new session, a leader that ends its main thread only), memory shared after a fork, the process
limit, host-wide counters (pseudo-terminals, user namespaces, keyrings); and without a cgroup, the worker's sweep
ends the same escapees. Each case asserts the run's status and that nothing of its uid or cgroup is alive when the
next run starts.

CI runs as root on a machine whose cgroups can be written (hybrid here: cgroup v2 for cgroup.kill, events and CPU;
v1 for memory and pids): these tests run with cgroups, and one runs a worker without them."""
import os
import time

import pytest

from autograder import wire
from autograder.grading.grade import grade_notebook
from autograder.model import Limits
from autograder.sandbox import cgroup, client as sandbox, policy

from test_hostile import statuses, variant

HELD = "a cgroup per run: the kernel counts its memory, processes and CPU time and ends all of it"


def request(cells, names=(), seconds=20.0):
    return {"v": 1, "cells": list(cells), "names": list(names), "parameters": {}, "calls": [],
            "call_timeout": seconds, "cell_timeout": seconds}


def escape(n: int, mb: int = 0) -> str:
    """A cell that leaves `n` processes behind: each forks, takes a session of its own, starts a thread that
    (after touching `mb` MB) spins forever, and ends its main thread only (the raw exit syscall, not exit_group), so
    that its leader is a zombie whose thread runs on. It records its uid. With `mb`, the cell waits 15 s: the run is
    to be stopped over its memory before that."""
    return (f"import os, ctypes, threading, time\nuid = os.getuid()\nprint('uid', uid, flush=True)\n"
            f"libc = ctypes.CDLL(None)\n"
            f"def spin():\n    time.sleep(0.3)\n    buf = bytearray({mb} * 2**20)\n"
            f"    for i in range(0, len(buf), 4096):\n        buf[i] = 1\n    while True:\n        pass\n"
            f"for _ in range({n}):\n    if os.fork() == 0:\n        os.setsid()\n"
            f"        threading.Thread(target=spin).start()\n        libc.syscall(60, 0)\n"
            f"time.sleep({1.5 if mb == 0 else 15})\ndone = True\n")   # with memory: until it is stopped, on a busy machine too


def alive(uid: int) -> list[int]:
    """The processes of `uid` that are alive (a zombie whose threads have all ended is not)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid != uid:
                    continue
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[-1].split()
                if fields[0] != b"Z" or int(fields[17]) > 1:
                    found.append(int(name))
            except (OSError, ValueError, IndexError):
                pass
    return found


def in_runs_cgroups(w: sandbox.Worker) -> list[int]:
    """The processes in the worker's runs' cgroups: between runs, only the next run's child, forked ahead."""
    folder = w._tree.unified
    pids = []
    for name in os.listdir(folder):
        if name.startswith("run-"):
            pids += [int(p) for p in open(os.path.join(folder, name, "cgroup.procs")).read().split()]
    return pids


def names(run: sandbox.ProbeRun) -> dict:
    return {k: v.get("v", v.get("items")) for k, v in wire.parse_results(run.results).names.items()}


def printed_uid(run: sandbox.ProbeRun) -> int:
    """The uid a run's cell printed ("uid N"): also known when the run was stopped before its names were read."""
    uid = int(run.output_tail.split("uid ", 1)[1].split()[0])
    assert policy.UID_BASE <= uid < policy.UID_BASE + policy.UID_SPAN
    return uid


def test_this_machine_gives_each_run_a_cgroup_with_memory_and_pids(worker):
    """The precondition of the tests below: as root here, the grader makes the worker's cgroup folders and every
    report says the kernel holds the run."""
    assert os.geteuid() == 0
    assert worker._tree.unified and worker._tree.memory and worker._tree.pids, worker._tree
    assert HELD in worker.isolation


def test_processes_that_leave_their_run_end_with_it(worker):
    """Four escapees (new sessions, zombie leaders with live threads) spin on after the run's last cell: the run is
    graded as usual, and when its report comes back none of them is alive and its cgroup holds nothing."""
    run = worker.run(request([escape(4)], ["uid", "done"]), Limits(run_memory_mb=512))
    got = names(run)
    assert got["done"] is True and not run.over_memory and not run.timed_out and run.exit_code == 0
    assert policy.UID_BASE <= got["uid"] < policy.UID_BASE + policy.UID_SPAN
    assert alive(got["uid"]) == []
    assert len(in_runs_cgroups(worker)) <= 1   # the next run's child, forked ahead, and nothing else
    assert HELD in run.isolation


def test_escapees_that_hold_memory_are_counted_in_the_runs_budget(worker):
    """The attack of issue 43: 4 escapees held 1.6 GB under a 512 MB budget and the run was graded normally. The
    kernel charges their pages to the run's cgroup: the run is stopped over memory."""
    run = worker.run(request([escape(4, mb=400)], ["uid", "done"]), Limits(run_memory_mb=512))
    assert run.over_memory and "done" not in names(run)
    assert alive(printed_uid(run)) == [] and len(in_runs_cgroups(worker)) <= 1


def test_tcp_buffers_over_loopback_are_bounded_per_run(worker):
    """An attack in 2026-12: a run filled TCP buffers over loopback (unread sends) to 1 GB under a 300 MB budget;
    on cgroup v1 the kernel counts TCP buffers apart and only where a limit is set. Now the run holds at most
    cgroup.TCP_BUFFERS of them (on v2 they count in its memory)."""
    cell = ("import socket, time\nls = socket.socket()\nls.bind(('127.0.0.1', 0))\nls.listen(512)\n"
            "port = ls.getsockname()[1]\nconns, total, end = [], 0, time.monotonic() + 6\n"
            "while total < 400 * 2**20 and len(conns) < 300 and time.monotonic() < end:\n"
            "    c = socket.socket()\n    c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)\n"
            "    c.connect(('127.0.0.1', port))\n    s, _ = ls.accept()\n"
            "    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)\n    c.setblocking(False)\n    miss = 0\n"
            "    while miss < 3 and total < 400 * 2**20:\n        try:\n            total += c.send(b'y' * 262144)\n"
            "            miss = 0\n        except BlockingIOError:\n            miss += 1\n            time.sleep(0.01)\n"
            "    conns.append((c, s))\nmb = total / 2**20\n")
    run = worker.run(request([cell], ["mb"]), Limits(run_memory_mb=300))
    held = names(run)["mb"]
    assert held <= cgroup.TCP_BUFFERS / 2**20 + 16, held   # (a socket's first pages are charged before the limit)


def test_a_runs_folders_hold_a_bounded_number_of_files(worker):
    """An attack in 2026-12 made 3 million empty folders in a run's two tmpfs folders (inside its memory budget); their
    teardown at the run's end took the kernel 20 s, while the worker waited and a classmate's run beside it was
    stopped as stalled. Each tmpfs now holds at most worker.INODES_PER_TMPFS files and folders."""
    from autograder.sandbox.inside.worker import INODES_PER_TMPFS

    cell = ("import os, errno\nmade, why = 0, ''\nfd = os.open('.', os.O_RDONLY)\ntry:\n"
            "    while made < 200_000:\n        os.mkdir(str(made), dir_fd=fd)\n        made += 1\n"
            "except OSError as e:\n    why = errno.errorcode[e.errno]\n")
    t0 = time.monotonic()
    run = worker.run(request([cell], ["made", "why"]))
    got = names(run)
    assert got["why"] == "ENOSPC" and INODES_PER_TMPFS - 100 < got["made"] < INODES_PER_TMPFS, got
    assert time.monotonic() - t0 < 60


def test_a_runs_cgroup_carries_its_limits_while_it_runs(worker):
    """While a run runs, its cgroup has the run's memory budget and process limit; so has the next run's child,
    forked ahead meanwhile (its cgroup takes the last run's limits while the worker is idle, and its own at its
    hand-over where they differ)."""
    import threading

    ran = threading.Thread(target=worker.run, args=(request(["import time\ntime.sleep(3)"]),
                                                    Limits(run_memory_mb=300, processes=40)))
    ran.start()
    time.sleep(1.5)
    memory, pids = worker._tree.memory, worker._tree.pids
    limited = {}
    for name in os.listdir(pids):
        if name.startswith("run-") and open(os.path.join(pids, name, "cgroup.procs")).read().split():
            limited[name] = (open(os.path.join(pids, name, "pids.max")).read().strip(),
                             int(open(os.path.join(memory, name, "memory.limit_in_bytes")).read()))
    ran.join()
    assert sorted(limited.values()) == [("40", 300 * 2**20)] * 2, limited
    after = worker.run(request(["import os\nn = len(os.sched_getaffinity(0))"], ["n"]))   # the default limits again
    assert names(after)["n"] >= 1 and not after.over_memory


def test_pages_shared_after_a_fork_count_in_the_runs_memory(worker):
    """docs/security.md's old gap: a run that forks copies of a large allocation held more than its budget, since
    pages shared after a fork were private to none of its processes. The kernel charges each page once, to the run:
    150 MB in four processes sharing it, and three more of 150 MB each, is 600 MB, over a 400 MB budget."""
    shared = ("import os, time\nbuf = bytearray(150 * 2**20)\nfor i in range(0, len(buf), 4096):\n    buf[i] = 1\n"
              "for _ in range(3):\n    if os.fork() == 0:\n        time.sleep(30)\n        os._exit(0)\n"
              "for _ in range(3):\n    more = bytearray(150 * 2**20)\n    for i in range(0, len(more), 4096):\n"
              "        more[i] = 1\n    if os.fork() == 0:\n        time.sleep(30)\n        os._exit(0)\n"
              "time.sleep(5)\nsurvived = True")
    run = worker.run(request([shared], ["survived"], seconds=60), Limits(run_memory_mb=400, cell_timeout=60))
    assert run.over_memory and "survived" not in names(run)
    honest = worker.run(request(["buf = bytearray(150 * 2**20)\nfor i in range(0, len(buf), 4096):\n    buf[i] = 1\n"
                                 "ok = True"], ["ok"]), Limits(run_memory_mb=400))
    assert not honest.over_memory and names(honest)["ok"] is True


def test_a_run_takes_no_host_wide_resource_beyond_its_own_bound(worker):
    """Pseudo-terminals come from a devpts of the run's own (at most policy.PTYS_PER_RUN; the host's count is
    unchanged by the run), user namespaces, keyrings and a child of the worker (clone with CLONE_PARENT: a zombie
    nothing reaps) are refused, threads still start (clone3 is refused so that
    the C library uses clone), and the run sees its own cgroup as the root."""
    cell = ("import os, ctypes, errno, threading\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "def code(ret):\n    return 'ok' if ret >= 0 else errno.errorcode[ctypes.get_errno()]\n"
            "userns = code(libc.unshare(0x10000000))\n"
            "keyring = code(libc.syscall(250, 0, -4, 1, 0, 0))\n"   # keyctl(KEYCTL_GET_KEYRING_ID, @u, create)
            "add_key = code(libc.syscall(248, b'user', b'k', b'v', 1, -4))\n"
            "r = libc.syscall(56, 0x8000 | 17, 0, 0, 0, 0)\nif r == 0:\n    os._exit(0)\n"   # clone(CLONE_PARENT)
            "parent = code(r)\n"
            "ptys, held = 0, []\ntry:\n    for _ in range(50):\n        held.append(os.openpty())\n        ptys += 1\n"
            "except OSError as e:\n    pty_error = errno.errorcode[e.errno]\n"
            "box = []\nt = threading.Thread(target=lambda: box.append(1))\nt.start()\nt.join()\nthreaded = box == [1]\n"
            "own = open('/proc/self/cgroup').read().split()\n")
    before = int(open("/proc/sys/kernel/pty/nr").read())
    run = worker.run(request([cell], ["userns", "keyring", "add_key", "parent", "ptys", "pty_error", "threaded",
                                      "own"]))
    got = names(run)
    assert {k: got[k] for k in ("userns", "keyring", "add_key", "parent", "ptys", "threaded")} == \
        {"userns": "EPERM", "keyring": "EPERM", "add_key": "EPERM", "parent": "EPERM", "ptys": policy.PTYS_PER_RUN,
         "threaded": True}
    assert got["pty_error"] == "ENOSPC"
    assert {i["v"] for i in got["own"]} >= {"0::/", "4:memory:/", "8:pids:/"}
    assert int(open("/proc/sys/kernel/pty/nr").read()) <= before   # its terminals ended with it


UID = "import os\nprint('uid', os.getuid(), flush=True)\n"


@pytest.mark.parametrize("case, cell, limits, expect", [
    ("fork bomb", UID + "import time\nmade = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
                        "            time.sleep(60)\n            os._exit(0)\n        made += 1\n"
                        "except OSError as e:\n    refused = type(e).__name__\ntime.sleep(0.5)",
     {}, {"made": Limits().processes - 1, "refused": "BlockingIOError"}),
    ("memory hog", UID + "buf = bytearray(600 * 2**20)\nfor i in range(0, len(buf), 4096):\n    buf[i] = 1\n"
                         "survived = True", {"run_memory_mb": 300}, "over_memory"),
    ("disk filler", UID + "try:\n    open('big', 'wb').write(b'0' * (100 * 2**20))\n"
                          "except OSError as e:\n    full = type(e).__name__", {"disk_mb": 32}, {"full": "OSError"}),
    ("wall time with children", UID + "import time\nfor _ in range(3):\n    if os.fork() == 0:\n        os.setsid()\n"
                                      "        time.sleep(600)\ntime.sleep(600)",
     {"submission_timeout": 4, "cell_timeout": 30}, "timed_out"),
])
def test_each_older_limit_holds_and_leaves_nothing_alive(worker, case, cell, limits, expect):
    run = worker.run(request([cell], ["made", "refused", "full", "survived"], seconds=30), Limits(**limits))
    got = names(run)
    if expect == "over_memory":
        assert run.over_memory and "survived" not in got, case
    elif expect == "timed_out":
        assert run.timed_out, case
    else:
        assert {k: got.get(k) for k in expect} == expect, (case, got)
    assert alive(printed_uid(run)) == [], case
    assert len(in_runs_cgroups(worker)) <= 1, case


def test_a_batch_where_one_submission_leaves_escapees_grades_the_next_ones_at_their_own_speed(key, tmp_path, worker):
    """Issue 43: escapees kept spinning through every later student's run (2-4x slower; 36.4 s instead of 5.1 s in
    a batch). Here: the same honest submission graded three times alone, then the attack's submission (graded as
    usual, its escapees' CPU charged to its run), then the honest one three times more, through one worker as a
    batch does: nothing of the attack's run is left in the runs' cgroups, and a later run takes at most 1.5 times as
    long as the fastest alone. Escapees that kept spinning would slow every later run, 2-4x; a busy machine slows
    runs for a while (CI saw three later runs in a row at twice the alone ones, with nothing left in the runs'
    cgroups, while other test processes worked), so the honest one is graded again, up to ten times, until one
    run is that fast."""
    burn = "import math\n_burn = sum(math.sin(i) for i in range(1_500_000))\n"
    for folder in ("honest", "attack"):
        (tmp_path / folder).mkdir()
    honest = variant(tmp_path / "honest", {}, [burn])
    attack = variant(tmp_path / "attack", {}, [escape(2 * (os.cpu_count() or 1))])

    def seconds() -> float:
        r = grade_notebook(honest, key, "ada", worker=worker)
        assert r.status == "graded" and set(statuses(r).values()) == {"passed"}
        return r.seconds

    alone = [seconds() for _ in range(3)]
    r = grade_notebook(attack, key, "ada", worker=worker)
    assert r.status == "graded" and set(statuses(r).values()) == {"passed"} and HELD in r.isolation
    assert len(in_runs_cgroups(worker)) <= 1   # at most the next run's child, forked ahead: no escapee
    after = []
    while len(after) < 10 and not (after and min(after) <= 1.5 * min(alone)):
        after.append(seconds())
    assert min(after) <= 1.5 * min(alone), (alone, after)


def test_without_a_cgroup_the_sweep_ends_zombie_leaders_with_live_threads_and_counts_their_memory():
    """Where no cgroup can be made (cgroup v1 only, no write access, a container without it), the worker's sweep of
    the run's uid holds: it no longer passes over a zombie leader whose threads run on, and reads such a process's
    memory through one of its threads. The report's sandbox line says which held."""
    with sandbox.Worker(cgroups=False) as w:
        assert w._tree == cgroup.Tree(why_not="cgroups turned off")
        assert "no cgroup per run (cgroups turned off): the worker measures its memory and sweeps its processes" \
            in w.isolation
        run = w.run(request([escape(4)], ["uid", "done"]), Limits(run_memory_mb=512))
        got = names(run)
        assert got["done"] is True and not run.over_memory
        time.sleep(0.2)   # the sweep signalled them; the kernel takes a moment to end a thread group
        assert alive(got["uid"]) == []
        run = w.run(request([escape(4, mb=400)], ["uid", "done"]), Limits(run_memory_mb=512))
        assert run.over_memory and "done" not in names(run)
        time.sleep(0.2)
        assert alive(printed_uid(run)) == []


def test_the_cgroups_of_a_grader_that_is_gone_are_cleaned_away_and_a_workers_own_removed_when_it_stops():
    """A worker's folders are removed when it stops; folders left by a grader killed with -9 (its pid gone) are
    removed by the next grader's start."""
    probe = cgroup.prepare()
    cgroup.remove(probe)
    stale = os.path.join(os.path.dirname(probe.unified), f"{cgroup.PREFIX}999999999-1")
    os.makedirs(os.path.join(stale, "run-1"))
    with sandbox.Worker() as w:
        tree = w._tree
        assert not os.path.exists(stale)
        assert all(os.path.isdir(f) for f in tree.folders())
    assert not any(os.path.exists(f) for f in tree.folders())
