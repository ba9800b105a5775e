"""cgroup: one control group per run, so that the kernel counts and kills: a run's memory (every page charged to
it, whatever its processes share or hide), its processes and its CPU time, and at its end `cgroup.kill` of
everything in it. The grader's side (`sandbox.client`) makes a folder of its own for a worker in each hierarchy it
may write to (`prepare`) and removes it (`remove`); the worker (`sandbox.inside.worker`) makes one cgroup per run
in it (`RunGroup`), which the run's child enters before it runs anything.

Both layouts Linux has are used as they are found, each hierarchy on its own:
- cgroup v2 (the unified hierarchy): `cgroup.kill`, `cgroup.events` and `cpu.stat` exist in every cgroup, with or
  without controllers; `memory.max` and `pids.max` where those controllers can be enabled for the worker's folder
  (the grader's own cgroup must then hold no other processes: a delegated systemd scope, a container of its own);
- cgroup v1 (or a hybrid machine, whose memory and pids controllers stay in v1 hierarchies):
  `memory.limit_in_bytes` and `pids.max` in their own hierarchies.
Whatever is missing is said in `Tree.why_not`, and the worker falls back to its own measures for it.

Sources: Documentation/admin-guide/cgroup-v2.rst (cgroup.kill since Linux 5.14; "no internal processes";
memory.oom.group; the migration rule: the writer needs write access to the common ancestor's cgroup.procs) and
Documentation/admin-guide/cgroup-v1/memory.rst (memory.limit_in_bytes, memory.memsw.limit_in_bytes,
memory.oom_control's oom_kill count).

May import: stdlib.
"""
from __future__ import annotations

import errno
import json
import os
import signal
import time
from dataclasses import asdict, dataclass

MOUNTINFO = "/proc/self/mountinfo"
OWN = "/proc/self/cgroup"
PREFIX = "autograd-lab-"   # a worker's folder: PREFIX + "<grader pid>-<n>"

# TCP buffers a run may hold (bytes). cgroup v2 charges them to the run's memory; cgroup v1 counts them apart, and
# only where memory.kmem.tcp.limit_in_bytes is set (else only the host-wide net.ipv4.tcp_mem binds: an attack in
# 2026-12 held 1 GB over loopback in a run of 300 MB).
TCP_BUFFERS = 64 * 2**20


@dataclass(frozen=True)
class Tree:
    """Where one worker's runs' cgroups go: the worker's folder (absolute; bwrap shows it at the same path,
    writable) in each hierarchy that serves a need, or "" where none does.

    unified: in the v2 hierarchy: cgroup.kill, cgroup.events (populated), cpu.stat (usage_usec).
    memory: where the memory controller is (v2: the same folder as `unified`; v1: its own hierarchy).
    pids: where the pids controller is.
    why_not: what the runs go without, and why ("" when nothing is missing).
    """

    unified: str = ""
    memory: str = ""
    memory_v1: bool = False
    pids: str = ""
    pids_v1: bool = False
    why_not: str = ""

    def folders(self) -> list[str]:
        """The distinct folders (each must be writable for the worker)."""
        return sorted({p for p in (self.unified, self.memory, self.pids) if p})

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Tree:
        return cls(**json.loads(text))


NONE = Tree(why_not="no cgroup")


def _mounts(mountinfo: str = MOUNTINFO) -> list[tuple[str, str, str, set[str]]]:
    """(root inside the file system, mount point, "cgroup" or "cgroup2", the v1 controllers) of each cgroup mount."""
    out = []
    with open(mountinfo) as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, after = left.split(), right.split()
            if len(fields) < 5 or len(after) < 3 or after[0] not in ("cgroup", "cgroup2"):
                continue
            unescape = lambda s: s.replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
            out.append((unescape(fields[3]), unescape(fields[4]), after[0], set(after[2].split(","))))
    return out


def _own(own: str = OWN) -> dict[str, str]:
    """This process's cgroup in each hierarchy: "" for v2's, else each v1 controller's name -> path."""
    paths: dict[str, str] = {}
    with open(own) as f:
        for line in f:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) == 3:
                for name in parts[1].split(",") if parts[1] else [""]:
                    paths[name] = parts[2]
    return paths


def _folder(mount_root: str, mount_point: str, path: str) -> str | None:
    """The folder of cgroup `path` under a mount of `mount_root`, or None where this mount does not show it."""
    if path == mount_root or mount_root == "/":
        rest = path if mount_root == "/" else ""
    elif path.startswith(mount_root.rstrip("/") + "/"):
        rest = path[len(mount_root.rstrip("/")):]
    else:
        return None
    folder = mount_point + rest.rstrip("/") if rest not in ("", "/") else mount_point
    return folder if os.path.isdir(folder) else None


def usable_cores(mountinfo: str = MOUNTINFO, own: str = OWN) -> int:
    """How many cores this process may keep busy at once: its CPU affinity (os.sched_getaffinity), lowered to the CPU
    quota of its own cgroup and each ancestor where one is set (v2 `cpu.max`: "<quota> <period>", or "max"; v1
    `cpu.cfs_quota_us` / `cpu.cfs_period_us`, -1 for none), rounded up; at least 1. A container given 2 of a host's
    32 cores says 2 here, where os.cpu_count() says 32."""
    cores = len(os.sched_getaffinity(0))
    try:
        mounts, paths = _mounts(mountinfo), _own(own)
    except OSError:
        return max(1, cores)
    for root, point, kind, controllers in mounts:
        path = paths.get("") if kind == "cgroup2" else paths.get("cpu") if "cpu" in controllers else None
        folder = _folder(root, point, path) if path is not None else None
        while folder and folder.startswith(point):
            try:
                if kind == "cgroup2":
                    quota, period = (_read(os.path.join(folder, "cpu.max")).split() + ["100000"])[:2]
                else:
                    quota = _read(os.path.join(folder, "cpu.cfs_quota_us")).strip()
                    period = _read(os.path.join(folder, "cpu.cfs_period_us")).strip()
                if quota not in ("max", "-1") and int(period) > 0:
                    cores = min(cores, -(-int(quota) // int(period)))
            except (OSError, ValueError):
                pass
            if folder == point:
                break
            folder = os.path.dirname(folder)
    return max(1, cores)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _enable_v2(base: str, wanted: list[str]) -> tuple[list[str], str]:
    """Enable `wanted` controllers for the children of `base` (the grader's own v2 cgroup). Where `base` holds
    processes (v2's "no internal processes" rule) and they are only this process, it first moves itself into a
    leaf of its own below it. Returns (the controllers enabled, why the others are not)."""
    available = _read(os.path.join(base, "cgroup.controllers")).split()
    missing = [c for c in wanted if c not in available]
    usable = [c for c in wanted if c in available]
    why = f"the {' and '.join(missing)} controller{'s are' if len(missing) > 1 else ' is'} not delegated to " \
          f"this cgroup ({base})" if missing else ""
    if not usable:
        return [], why
    enabled = _read(os.path.join(base, "cgroup.subtree_control")).split()
    if all(c in enabled for c in usable):
        return usable, why
    try:
        _write(os.path.join(base, "cgroup.subtree_control"), " ".join("+" + c for c in usable))
        return usable, why
    except OSError as e:
        if e.errno != errno.EBUSY:
            return [], f"cannot enable {' and '.join(usable)} in {base} ({e.strerror})"
    procs = _read(os.path.join(base, "cgroup.procs")).split()
    if procs != [str(os.getpid())]:
        return [], (f"{base} holds other processes, so it cannot hand the {' and '.join(usable)} controllers to a "
                    f"folder of its own (run the grader in a cgroup of its own: systemd-run --scope -p Delegate=yes)")
    leaf = os.path.join(base, f"{PREFIX}grader-{os.getpid()}")
    os.makedirs(leaf, exist_ok=True)
    _write(os.path.join(leaf, "cgroup.procs"), "0")
    _write(os.path.join(base, "cgroup.subtree_control"), " ".join("+" + c for c in usable))
    return usable, why


_made = 0


def prepare(mountinfo: str = MOUNTINFO, own: str = OWN) -> Tree:
    """Make a worker's folder in each cgroup hierarchy that can serve its runs, below this process's own cgroup
    there, and clean away the folders of graders that are gone. Never raises: what cannot be made is said in
    `why_not`."""
    global _made
    try:
        mounts, paths = _mounts(mountinfo), _own(own)
    except OSError as e:
        return Tree(why_not=f"cgroups cannot be read here ({e.strerror})")
    _made += 1
    name = f"{PREFIX}{os.getpid()}-{_made}"
    bases: dict[str, tuple[str, bool]] = {}   # need -> (the grader's own cgroup folder there, v1)
    v2_base = None
    for root, point, kind, options in mounts:
        if kind == "cgroup2" and "" in paths and v2_base is None:
            v2_base = _folder(root, point, paths[""])
        elif kind == "cgroup":
            for need in ("memory", "pids"):
                if need in options and need in paths and need not in bases:
                    base = _folder(root, point, paths[need])
                    if base:
                        bases[need] = (base, True)
    reasons = []
    if v2_base is None:
        reasons.append("no cgroup v2 hierarchy is mounted here")
    else:
        bases["unified"] = (v2_base, False)
        wanted = [need for need in ("memory", "pids") if need not in bases]
        enabled, why = _enable_v2(v2_base, wanted) if wanted else ([], "")
        reasons += [why] if why else []
        bases.update({need: (v2_base, False) for need in enabled})
    folders: dict[str, str] = {}   # base -> the worker's folder in it
    for base, v1 in dict.fromkeys(bases.values()):
        _sweep(base)
        folder = os.path.join(base, name)
        try:
            os.mkdir(folder, 0o755)
            if not v1:   # v2: hand the controllers enabled above on to the runs' cgroups
                on = [n for n, (b, one) in bases.items() if n != "unified" and b == base and not one]
                if on:
                    _write(os.path.join(folder, "cgroup.subtree_control"), " ".join("+" + n for n in on))
        except OSError as e:
            reasons.append(f"cannot make a cgroup in {base} ({e.strerror})")
            _remove_tree(folder)
            continue
        folders[base] = folder
    got = {need: (folders[base], v1) for need, (base, v1) in bases.items() if base in folders}
    for need in ("memory", "pids"):
        if need not in got and not any(need in r for r in reasons):
            reasons.append(f"no {need} controller can be used here")
    return Tree(unified=got.get("unified", ("", False))[0], memory=got.get("memory", ("", False))[0],
                memory_v1=got.get("memory", ("", False))[1], pids=got.get("pids", ("", False))[0],
                pids_v1=got.get("pids", ("", False))[1], why_not="; ".join(reasons))


def _sweep(base: str) -> None:
    """Remove the folders that workers of graders no longer running left in `base` (a grader killed with -9 cannot
    remove its own), and the leaves such graders moved themselves into."""
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        if name.startswith(PREFIX):
            pid = name[len(PREFIX):].removeprefix("grader-").split("-", 1)[0]
            if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                _remove_tree(os.path.join(base, name))


def _remove_tree(folder: str) -> None:
    """rmdir a cgroup folder and its child cgroups (each must hold no process), deepest first."""
    for parent, children, _ in os.walk(folder, topdown=False):
        for child in children:
            try:
                os.rmdir(os.path.join(parent, child))
            except OSError:
                pass
    try:
        os.rmdir(folder)
    except OSError:
        pass


def remove(tree: Tree, timeout: float = 2.0) -> None:
    """Remove a worker's folders, once the worker is gone (the processes of its runs, killed with it, may take a
    moment to leave their cgroups: tried for up to `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    for folder in tree.folders():
        _remove_tree(folder)
        while os.path.isdir(folder) and time.monotonic() < deadline:
            time.sleep(0.01)
            _remove_tree(folder)


class RunGroup:
    """The cgroup of one run: a folder named `name` in each of the worker's folders of `tree`. Made by the worker,
    entered by the run's child (`enter`) before it runs anything; limited when the run is handed to it (`limit`);
    read while it runs (`oom_killed`, `cpu_seconds`, `pids`); emptied (`kill`, `empty`) and removed at its end.

    Raises OSError from `__init__` when a folder cannot be made (the worker then goes on without it).
    """

    def __init__(self, tree: Tree, name: str) -> None:
        self.tree = tree
        self.limits: tuple[int, int] | None = None   # (memory bytes, processes) as last set
        self.folders = {key: os.path.join(base, name) for key, base in
                        (("unified", tree.unified), ("memory", tree.memory), ("pids", tree.pids)) if base}
        made = []
        try:
            for folder in dict.fromkeys(self.folders.values()):
                os.mkdir(folder, 0o755)
                made.append(folder)
        except OSError:
            for folder in made:
                os.rmdir(folder)
            raise

    def enter(self) -> None:
        """Move the calling process (all its threads) into this run's cgroup in every hierarchy."""
        for folder in dict.fromkeys(self.folders.values()):
            _write(os.path.join(folder, "cgroup.procs"), "0")

    def limit(self, memory_bytes: int, processes: int) -> None:
        """Set the run's memory budget (no swap; in v2 the whole run is killed when it is reached) and its
        process limit, unless they are set already. Raises OSError when the kernel refuses one."""
        if self.limits == (memory_bytes, processes):
            return
        before, self.limits = self.limits, None   # unknown until every write is done
        memory, pids = self.folders.get("memory"), self.folders.get("pids")
        if memory and self.tree.memory_v1:
            names = ["memory.limit_in_bytes"]
            if os.path.exists(os.path.join(memory, "memory.memsw.limit_in_bytes")):   # swap accounting is on
                # memory + swap is never below memory alone: raised first when the budget grows, lowered last
                grows = before is not None and memory_bytes > before[0]   # (a new cgroup's budget is unlimited)
                names = [*names, "memory.memsw.limit_in_bytes"][::-1 if grows else 1]
            for name in names:
                _write(os.path.join(memory, name), str(memory_bytes))
            tcp = os.path.join(memory, "memory.kmem.tcp.limit_in_bytes")   # v1 counts TCP buffers apart, if asked
            if os.path.exists(tcp):
                _write(tcp, str(min(memory_bytes, TCP_BUFFERS)))
        elif memory:
            _write(os.path.join(memory, "memory.max"), str(memory_bytes))
            for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                if os.path.exists(os.path.join(memory, name)):
                    _write(os.path.join(memory, name), value)
        if pids:
            _write(os.path.join(pids, "pids.max"), str(processes))
        self.limits = (memory_bytes, processes)

    def oom_killed(self) -> bool:
        """Has the kernel killed a process of the run for its memory budget?"""
        memory = self.folders.get("memory")
        if not memory:
            return False
        name = "memory.oom_control" if self.tree.memory_v1 else "memory.events"
        try:
            for line in _read(os.path.join(memory, name)).splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def memory_peak(self) -> int:
        """The most memory the run held at once (bytes; 0 where unknown)."""
        memory = self.folders.get("memory")
        if not memory:
            return 0
        for name in (("memory.max_usage_in_bytes",) if self.tree.memory_v1 else ("memory.peak", "memory.current")):
            try:
                return int(_read(os.path.join(memory, name)))
            except (OSError, ValueError):
                continue
        return 0

    def cpu_seconds(self) -> float | None:
        """CPU seconds (user and system) of every process the run has had, reaped or not; None without v2's
        cpu.stat."""
        unified = self.folders.get("unified")
        if not unified:
            return None
        try:
            for line in _read(os.path.join(unified, "cpu.stat")).splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        except (OSError, ValueError):
            pass
        return None

    def pids(self) -> list[int]:
        """The processes in the run's cgroup (thread-group ids; a leader that has exited while its threads run on
        is listed too)."""
        folder = self.folders.get("unified") or next(iter(self.folders.values()), None)
        if not folder:
            return []
        try:
            return [int(p) for p in _read(os.path.join(folder, "cgroup.procs")).split()]
        except (OSError, ValueError):
            return []

    def kill(self) -> None:
        """SIGKILL everything in the run's cgroup: `cgroup.kill` where the kernel has it (a fork racing it is
        refused), then each process still listed, through a pidfd taken while it is listed (so a pid reused meanwhile
        is never signalled). The second step is not redundant: on Linux 6.18 `cgroup.kill` passes over a thread
        group whose leader has exited while its other threads run on (found by an attack, 2026-12), and kill(2) of
        that leader's pid ends them."""
        if self.empty():   # the usual end: the run's child has ended and left nothing behind
            return
        unified = self.folders.get("unified")
        if unified and os.path.exists(os.path.join(unified, "cgroup.kill")):
            try:
                _write(os.path.join(unified, "cgroup.kill"), "1")
                if self.wait_empty(0.05):
                    return
            except OSError:
                pass
        for _ in range(100):   # the run may still be forking where there is no cgroup.kill: a bounded sweep
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    fd = os.pidfd_open(pid)
                except OSError:
                    continue
                try:
                    if pid in self.pids():   # still the run's (pinned by the pidfd from here on)
                        signal.pidfd_send_signal(fd, signal.SIGKILL)
                except OSError:
                    pass
                finally:
                    os.close(fd)
            if self.empty():
                return
            time.sleep(0.001)

    def empty(self) -> bool:
        """Is no process of the run left (zombies not yet reaped by the worker do not count)?"""
        unified = self.folders.get("unified")
        if unified:
            try:
                return "populated 0" in _read(os.path.join(unified, "cgroup.events")).splitlines()
            except OSError:
                return True
        return not self.pids()

    def wait_empty(self, timeout: float = 10.0) -> bool:
        """Wait until the run's cgroup is empty (its killed processes take a moment to free their memory);
        False if it is not after `timeout` seconds."""
        deadline, pause = time.monotonic() + timeout, 0.0005
        while not self.empty():
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
        return True

    def remove(self) -> None:
        """Remove the run's folders (once it is empty; a folder the kernel still holds is left for `remove`)."""
        for folder in dict.fromkeys(self.folders.values()):
            try:
                os.rmdir(folder)
            except OSError:
                pass
