"""Does the sandbox contain runaway submissions and keep what was observed before a kill?"""
import os
import re

from autograder import wire
from autograder.sandbox import client as sandbox, policy
from autograder.model import Limits

X = {"name": "x", "tensor": {"value": 1.5, "dtype": "float32", "requires_grad": True, "grad": None}}


def request(cells, calls=(), names=(), call_timeout=2.0, cell_timeout=2.0):
    return {"v": 1, "cells": list(cells), "names": list(names), "parameters": {},
            "calls": [{"call": f, "function": f, "points": [{"args": [X]}] * 3} for f in calls],
            "call_timeout": call_timeout, "cell_timeout": cell_timeout}


def worker_namespaces(w: sandbox.Worker, kind: str) -> set[str]:
    """The `kind` namespaces (net, pid, ...) of the worker itself, read on the host: the process that is pid 2 in the
    sandbox's PID namespace (bwrap is pid 1), a descendant of the bwrap the client started."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = open(f"/proc/{pid}/status").read()
            nspid = re.search(r"^NSpid:\s+(.*)$", status, re.M).group(1).split()
            if nspid[-1] == "2" and len(nspid) > 1 and _descends(int(pid), w._proc.pid):
                found.add(os.readlink(f"/proc/{pid}/ns/{kind}"))
        except (OSError, AttributeError):
            continue
    return found


def _descends(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    return False


def test_infinite_loops_in_a_cell_and_a_call_are_stopped_and_the_rest_still_runs(worker):
    run = worker.run(request(["while True: pass", "def f(x):\n    while True: pass",
                              "def g(x):\n    return x * 2"], calls=["f", "g"]))
    obs = wire.parse_results(run.results)
    assert obs.complete and not run.timed_out
    assert [c.status for c in obs.cells] == ["timeout", "ok", "ok"]
    assert obs.calls[("f", 0)].status == "timeout" and obs.calls[("f", 1)].status == "skipped"
    assert obs.calls[("g", 0)].returned["data"] == [3.0]


def test_the_wall_limit_kills_the_process_group_and_keeps_earlier_records(worker):
    cells = ["x = 1", "import time\ntry:\n    time.sleep(60)\nexcept BaseException:\n    time.sleep(60)"]
    run = worker.run(request(cells, names=["x"], cell_timeout=30), Limits(submission_timeout=6))
    assert run.timed_out and run.seconds < 50   # killed at 6 s; far below the 120 s a stuck cell would take
    obs = wire.parse_results(run.results)
    assert not obs.complete and obs.cells[0].status == "ok" and "x" not in obs.names


def test_an_exit_from_student_code_does_not_stop_the_probe(worker):
    run = worker.run(request(["import sys\nsys.exit(3)", "y = 2"], names=["y"]))
    obs = wire.parse_results(run.results)
    assert obs.complete and obs.cells[0].status == "error" and obs.names["y"] == {"t": "int", "v": 2}


def test_the_submission_runs_in_a_fresh_empty_directory_with_a_scrubbed_environment(worker):
    run = worker.run(request(["import os\ncwd = os.listdir('.')\nhome = os.environ.get('HOME', '')\n"
                                     "leak = [k for k in os.environ if 'TOKEN' in k or 'KEY' in k]"],
                                    names=["cwd", "leak"]))
    obs = wire.parse_results(run.results)
    assert obs.names["cwd"] == {"t": "seq", "kind": "list", "items": [], "truncated": False}
    assert obs.names["leak"]["items"] == []


def test_bwrap_isolates_files_network_and_the_grader(tmp_path, monkeypatch):
    """With bubblewrap (installed by scripts/setup.sh): the key's folder and the working folder are
    empty, the file system is read-only, there is no network, and the grader cannot be signalled."""
    assert sandbox.bwrap_status()[0], sandbox.bwrap_status()[1]
    secret = tmp_path / "build"
    secret.mkdir()
    (secret / "key.json").write_text("the answers")
    (tmp_path / "solutions.txt").write_text("more answers")
    monkeypatch.chdir(tmp_path)
    probe_cells = [
        "import os, socket, signal\n"
        "def attempt(f):\n    try:\n        return repr(f())\n    except BaseException as e:\n        return type(e).__name__\n"
        f"key = attempt(lambda: open({str(secret / 'key.json')!r}).read())\n"
        f"cwd_files = attempt(lambda: os.listdir({str(tmp_path)!r}))\n"
        "write = attempt(lambda: open('/usr/evil.txt', 'w'))\n"
        "tmp = attempt(lambda: open('/tmp/evil.txt', 'w'))\n"
        "net = attempt(lambda: socket.create_connection(('127.0.0.1', 22), timeout=2))\n"
        "kill = attempt(lambda: os.kill(os.getppid(), signal.SIGKILL))\n"
        "here = attempt(lambda: open('mine.txt', 'w').write('ok'))\n"
        "sysctl = attempt(lambda: open('/proc/sys/kernel/core_pattern', 'w'))\n"
        "uid = attempt(os.getuid)\n"
        "caps = attempt(lambda: [l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')][0])\n"
        "fill = attempt(lambda: open('big', 'wb').write(b'0' * (300 * 2**20)))\n"]
    names = ["key", "cwd_files", "write", "tmp", "net", "kill", "here", "sysctl", "uid", "caps", "fill"]
    # Generous limits: on a busy machine the 300 MB write must end in the disk limit, not in a timeout.
    run = sandbox.run_probe(request(probe_cells, names=names, cell_timeout=120, call_timeout=120),
                            Limits(submission_timeout=300), conceal=[str(secret)])
    assert run.isolation.startswith("bwrap")
    got = {n: wire.parse_results(run.results).names[n]["v"] for n in names}
    assert got["key"] in ("FileNotFoundError", "PermissionError")
    assert got["cwd_files"] in ("[]", "PermissionError", "FileNotFoundError")   # absent: only an allowlist is shown
    assert got["write"] in ("OSError", "PermissionError") and got["tmp"] in ("OSError", "PermissionError")
    assert got["sysctl"] in ("OSError", "PermissionError")
    assert got["fill"] == "OSError"   # the private folder is a small tmpfs
    if os.geteuid() == 0:   # the grader is root: the submission is not
        assert policy.UID_BASE <= int(got["uid"]) < policy.UID_BASE + policy.UID_SPAN
        assert got["caps"] == repr("0000000000000000")
    assert got["net"] in ("OSError", "ConnectionRefusedError") and "socket" not in got["net"]
    assert got["here"] == "2"   # its own folder is writable
    assert (secret / "key.json").read_text() == "the answers"


GLOO_TWO_RANKS = """
import json, os, socket, tempfile
import torch
import torch.distributed as dist

interfaces = [name for _, name in socket.if_nameindex()]
folder = tempfile.mkdtemp(dir='.')   # the run's own working folder: the only writable place
read_end, write_end = os.pipe()
pids = []
for rank in (0, 1):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            dist.init_process_group('gloo', store=dist.FileStore(os.path.join(folder, 'store'), 2),
                                    rank=rank, world_size=2)
            t = torch.tensor([float(rank + 1)])
            dist.all_reduce(t)
            os.write(write_end, json.dumps([rank, t.item()]).encode() + b'\\n')
            dist.destroy_process_group()
            code = 0
        finally:
            os._exit(code)
    pids.append(pid)
os.close(write_end)
exits = sorted(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids)
with os.fdopen(read_end) as f:
    reduced = sorted(json.loads(line)[1] for line in f)
"""


def test_two_processes_of_a_run_all_reduce_over_gloo_on_the_runs_own_loopback(worker):
    """A run's network namespace has its loopback up and nothing else: two forked processes of the run join a gloo
    process group through a FileStore in the run's folder and all-reduce (1 + 2 = 3 on both ranks); assignment 12's
    DistributedDataParallel exercise needs this. (That the host's 127.0.0.1 stays out of reach: the hostile corpus's
    open-sockets case.)"""
    run = worker.run(request([GLOO_TWO_RANKS], names=["interfaces", "exits", "reduced"], cell_timeout=60),
                     Limits(submission_timeout=120))
    obs = wire.parse_results(run.results)
    assert obs.cells[0].status == "ok", obs.cells[0]
    got = {n: [i["v"] for i in obs.names[n]["items"]] for n in ("interfaces", "exits", "reduced")}
    assert got == {"interfaces": ["lo"] if run.isolation.startswith("bwrap") else got["interfaces"],
                   "exits": [0, 0], "reduced": [3.0, 3.0]}


def test_the_worker_pays_torchs_first_use_costs_once_before_a_run_whose_cells_need_them():
    from autograder.grading import plan

    assert plan.warm_ups(["opt = torch.optim.SGD(params, lr=0.1)"]) == ["dynamo"]
    assert plan.warm_ups(["torch.func.hessian(f)(x)"]) == ["dynamo", "forward"]
    assert plan.warm_ups(["(x * x).backward()"]) == []
    probe_cell = "import sys\nwarm = 'torch._dynamo' in sys.modules"
    with sandbox.Worker() as fresh:   # a worker of its own: the session's may be warm already
        cold = wire.parse_results(fresh.run({**request([probe_cell], names=["warm"]), "warm": []}).results)
        assert cold.names["warm"] == {"t": "bool", "v": False}   # nothing paid for a notebook that needs nothing
        warm = wire.parse_results(fresh.run({**request([probe_cell], names=["warm"]), "warm": ["dynamo"]}).results)
        assert warm.names["warm"] == {"t": "bool", "v": True}    # imported in the worker, before the fork
        later = wire.parse_results(fresh.run({**request([probe_cell], names=["warm"]), "warm": []}).results)
        assert later.names["warm"] == {"t": "bool", "v": True}   # and every later run inherits it


def test_an_early_worker_is_used_only_for_folders_it_was_asked_to_conceal(tmp_path):
    """grade starts the worker before it knows every submission's real folder; the batch starts another one
    when a folder it must conceal (a submission linked from elsewhere) is not among the early one's."""
    from autograder.sandbox.client import WorkerStart

    (tmp_path / "subs" / "a").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "subs" / "link").symlink_to(tmp_path / "elsewhere")
    with WorkerStart([str(tmp_path / "subs"), str(tmp_path / "out")]) as start:
        assert start.conceals([str(tmp_path / "subs" / "a"), str(tmp_path / "out" / "reports")])
        assert not start.conceals([str(tmp_path / "subs" / "link")])   # really tmp_path/elsewhere
        assert not start.conceals([str(tmp_path / "subsidiary")])       # a longer name is not inside
        assert start.get().isolation


def test_the_warm_worker_moves_into_huge_pages_where_the_kernel_offers_them_and_changes_nothing_where_not(tmp_path):
    """This machine's kernel (THP `madvise`, Linux 6.1+) collapses a torch process's memory into huge pages; where
    THP is `never` or absent, nothing is tried and the report's sandbox line says why."""
    import subprocess
    import sys

    from autograder.sandbox.inside import hugepages

    assert hugepages.supported() == ""
    never = tmp_path / "enabled"
    never.write_text("always madvise [never]\n")
    assert hugepages.supported(str(never)) == "transparent huge pages are off here (THP never)"
    assert hugepages.supported(str(tmp_path / "absent")) == "this kernel has no transparent huge pages"
    assert hugepages.Collapser("transparent huge pages are off here (THP never)").pending is False
    assert policy.memory_line("yes") == "; warm worker in huge pages"
    assert policy.memory_line("this kernel has no MADV_COLLAPSE (Linux 6.1+)") == \
        "; warm worker in 4 KiB pages (this kernel has no MADV_COLLAPSE (Linux 6.1+))"
    done = subprocess.run([sys.executable, "-c", "import torch\nfrom autograder.sandbox.inside import hugepages\n"
                           "c = hugepages.Collapser()\nwhile c.pending:\n    got = c.step(1.0)\n"
                           "print(len(c.done) * hugepages.HUGE >> 20, c.held[0] >> 20, c.held[1] >> 20)"],
                          capture_output=True, text=True, timeout=300)
    collapsed, huge, anon = map(int, done.stdout.split())
    assert 50 <= collapsed and 50 <= huge <= anon   # 116 of 143 MiB here
    with sandbox.Worker() as fresh:
        assert fresh.huge_pages == "yes" and fresh.isolation.endswith("; warm worker in huge pages")


def test_each_run_is_a_fresh_child_of_the_pristine_worker_with_its_own_namespaces_and_limits_from_its_start(worker):
    """The worker forks the next run's child ahead, while it is idle; that child is still a fresh fork of the worker,
    never of an earlier run, gets a session and network namespace of its own, and its wall limit counts from when
    its run was handed to it, not from when it was forked."""
    import time

    cells = ["import os, json\nmarked = hasattr(json, 'marked_by_a_run')\njson.marked_by_a_run = True\n"
             "pid = os.getpid()\nnet = os.readlink('/proc/self/ns/net')\nleader = os.getsid(0) == os.getpid()"]
    runs = [wire.parse_results(worker.run(request(cells, names=["marked", "pid", "net", "leader"])).results).names
            for _ in range(3)]
    assert [r["marked"]["v"] for r in runs] == [False, False, False]   # no run sees what an earlier one changed
    assert len({r["pid"]["v"] for r in runs}) == 3
    # a network namespace of its own: not the host's, not the worker's (a freed namespace's number can come back,
    # so two runs that never lived at the same time may show the same one: CI saw it, 2026-12-03)
    shared = {os.readlink("/proc/self/ns/net"), *worker_namespaces(worker, "net")}
    assert len(shared) == 2 and not shared & {r["net"]["v"] for r in runs}
    assert all(r["leader"]["v"] for r in runs)
    sizes = ["import os\nst = os.statvfs('.')\nmb = st.f_blocks * st.f_frsize // 2**20\nenv = sorted(os.environ)"]
    default = wire.parse_results(worker.run(request(sizes, names=["mb", "env"])).results).names
    small = wire.parse_results(worker.run(request(sizes, names=["mb"]), Limits(disk_mb=32)).results).names
    assert (default["mb"]["v"], small["mb"]["v"]) == (256, 32)   # set up ahead at the default, resized for its run
    assert [i["v"] for i in default["env"]["items"]] == sorted([*policy.environment("/"), "AUTOGRAD_LAB_PARAMETERS",
                                                                "AUTOGRAD_LAB_PROBE"])   # the run's own, and the probe's
    time.sleep(3)   # the spare waits meanwhile: its run's 2 s wall limit must not have started
    run = worker.run(request(["import time\ntime.sleep(0.5)\nslept = True"], names=["slept"]),
                     Limits(submission_timeout=2))
    assert not run.timed_out and wire.parse_results(run.results).names["slept"] == {"t": "bool", "v": True}


def test_a_run_is_not_charged_for_the_pages_the_workers_huge_page_collapse_leaves_to_it():
    """The worker collapses what a warm-up added into huge pages while the next runs are alive; the pages those runs
    shared with it become theirs alone (70 MB and more here), which counted against their memory budget and
    stopped an honest run (found by an attack, 2026-12-02). The worker credits each run with what it collapsed
    while that run was alive."""
    import time

    honest = "import time\nbuf = bytearray(150 * 2**20)\nfor i in range(0, len(buf), 4096):\n    buf[i] = 1\n" \
             "time.sleep(1.5)\nok = True"
    with sandbox.Worker() as fresh:
        fresh.run(request(["x = 1"]))
        time.sleep(2)   # the start's collapse is done
        fresh.run({**request(["x = 1"]), "warm": ["dynamo"]})   # another notebook uses an optimizer: ~100 MB more
        ended = []
        for _ in range(3):
            run = fresh.run(request([honest], names=["ok"], cell_timeout=60), Limits(run_memory_mb=220, cell_timeout=60))
            ended.append((run.over_memory, wire.parse_results(run.results).names.get("ok")))
    assert ended == [(False, {"t": "bool", "v": True})] * 3
