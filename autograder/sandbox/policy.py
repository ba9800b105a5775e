"""policy: the sandbox policy, in one place, for both sides of the trust boundary: what a run sees of the
machine, its environment, its resource limits, its uid range, the syscalls it may not make, and the isolation each
report names. The grader-side client (`sandbox.client`) builds the worker's bwrap command from it; the inside
(`sandbox.inside.worker`) applies the rest to each run.

May import: stdlib, autograder.model.
"""
from __future__ import annotations

import os
import resource
import signal
import sys
import tempfile
from pathlib import Path

from autograder.model import Limits

# When the grader runs as root, the probe drops to an unprivileged uid of its own inside bwrap: one per
# run from this range (no /etc/passwd entry needed), so that RLIMIT_NPROC, which counts per uid,
# limits each run alone and runs cannot touch each other's processes.
# The range sits far above the uids that systems hand out (system, login and systemd DynamicUser ones).
UID_BASE, UID_SPAN = 2_000_000_000, 1_000_000
HOME_BYTES = 64 * 2**20   # the run's private home folder (a tmpfs, with bwrap)
PTYS_PER_RUN = 4          # pseudo-terminals of a run's own devpts (the probe needs none; the host's are shared)

# Syscalls no run may make, besides user namespaces (unshare or clone with CLONE_NEWUSER; clone3 gets ENOSYS so that
# the C library falls back to clone, whose flags a filter can read): each would take a host-wide resource that no
# per-run limit bounds. A uid's keys stay in the kernel after its processes end (kernel.keys.maxbytes per uid, and a
# run's uid is new each time); a user namespace adds kernel code the run could reach, and mounts of any size.
DENIED_SYSCALLS = ("add_key", "keyctl", "request_key")

# No user namespace: as root, the probe then really becomes its run uid (inside one, only uid 0 is mapped).
BWRAP_FLAGS = ("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
               "--die-with-parent", "--new-session", "--dev", "/dev", "--proc", "/proc")

# What the sandbox sees of the machine (read-only): the system's programs, libraries and settings.
# Everything else (/home, /root, /work, /srv, /var, /opt, /mnt, ...) is absent, except the Python
# environment and the package, shown back read-only: an allowlist, so a copy of a key or of the
# solutions anywhere else on the machine stays out of reach.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")

# What the warm worker imports once, after torch and IPython, so that no run pays for it: the module every
# notebook's setup cell imports (`from autograder.lab import Lab`). Named here, not imported by the worker's
# code: the inside of the sandbox depends on no module above it; it only warms what submissions import.
WARM_IMPORTS = ("autograder.lab",)

ISOLATION_BWRAP = ("bwrap: forked from a warm worker; unprivileged uid, no network, own mount, network and IPC "
                   "namespaces, read-only files except a small private folder; the grader's folder, keys and "
                   "solutions hidden")


def isolation(bwrap: bool, root: bool, why_not: str = "") -> str:
    """The isolation line every report carries: with bwrap (as root: with a uid of the run's own), or
    only a process of its own, and why."""
    if bwrap:
        return ISOLATION_BWRAP if root else ISOLATION_BWRAP.replace("unprivileged uid, ", "")
    return f"own process only ({why_not}): files and network are not isolated"


def limits_line(kill: bool, memory: bool, why_not: str, no_filter: str = "") -> str:
    """The isolation line's clause on how a run's resources are held: by a cgroup of its own that ends all of it
    (`kill`) and counts its memory (`memory`), or by the worker's own measures where not (`why_not` says why); then
    whether the syscall filter holds (`no_filter`: why not)."""
    if kill and memory:
        held = "; a cgroup per run: the kernel counts its memory, processes and CPU time and ends all of it"
    elif kill:
        held = f"; a cgroup per run ends all of it and counts its CPU time; the worker measures its memory ({why_not})"
    else:
        held = f"; no cgroup per run ({why_not}): the worker measures its memory and sweeps its processes"
    return held + (f"; {no_filter}" if no_filter else "; no user namespaces or keyrings")


def memory_line(huge_pages: str) -> str:
    """The isolation line's last clause: whether the warm worker's memory is in huge pages ("yes"), or why not.
    Runs are the same either way; only forking them costs less (sandbox.inside.hugepages)."""
    if huge_pages == "yes":
        return "; warm worker in huge pages"
    return f"; warm worker in 4 KiB pages ({huge_pages})" if huge_pages else ""


def environment(home: str) -> dict[str, str]:
    """A run's whole environment: nothing of the grader's passes through (no tokens, no PYTHONPATH); the
    working directory stays empty (IPython's files go to `home`)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
        "IPYTHONDIR": os.path.join(home, ".ipython"), "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0",
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(home, ".torchinductor"),
        "PYTHONWARNINGS": "default",
    }


def apply_limits(limits: Limits) -> None:
    """Set a run's resource limits on the calling process (in the run's child, before any submission code):
    processes (RLIMIT_NPROC, binding once the probe is not root), open files, CPU seconds, address space,
    file size (a write past it fails instead of killing: SIGXFSZ ignored) and no core dumps."""
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (Limits.OPEN_FILES, Limits.OPEN_FILES))
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_AS, (limits.address_space, limits.address_space))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size, limits.file_size))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def runs_dir() -> str:
    """The folder that holds every run's temporary folder (hidden from each run but its own)."""
    path = os.path.join(tempfile.gettempdir(), f"autograd-lab-runs-{os.geteuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def shown_back() -> list[str]:
    """What the probe needs to run, besides SYSTEM_PATHS: the interpreter's prefixes and the autograder
    package."""
    package = str(Path(__file__).resolve().parent.parent)   # autograder/, this file being autograder/sandbox/policy.py
    return sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, package)} |
                  {sys.prefix, sys.base_prefix, package})


def bwrap_command(bwrap: str, runs: str, conceal: list[str], argv: list[str], writable: list[str] = ()) -> list[str]:
    """The bwrap command line of a worker: the SYSTEM_PATHS and the Python environment and package
    (`shown_back`) read-only, an empty /tmp, `runs` an empty tmpfs (each run mounts its own private
    folders there), any `conceal` folder that lies inside what is shown replaced by an empty one, and the
    `writable` folders (the worker's own cgroup folders, under /sys) shown writable at their own paths."""
    cmd = [bwrap, *BWRAP_FLAGS, "--tmpfs", "/tmp", "--tmpfs", runs]   # first: what is shown may lie under /tmp
    shown: list[str] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):   # merged /usr: /bin -> usr/bin
            cmd += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            cmd += ["--ro-bind", path, path]
            shown.append(path)
    made: set[str] = set()
    for path in sorted(p for p in shown_back() if os.path.exists(p)):
        if not any(path == d or path.startswith(d.rstrip("/") + "/") for d in shown):
            for i in range(2, len(Path(path).parts)):   # the folders above it, enterable by the run's uid
                folder = str(Path(*Path(path).parts[:i]))
                if folder not in made:
                    made.add(folder)
                    cmd += ["--perms", "0755", "--dir", folder]
            cmd += ["--ro-bind", path, path]
            shown.append(path)
    inside = lambda path: any(path == d or path.startswith(d.rstrip("/") + "/") for d in shown)
    for path in sorted({os.path.realpath(h) for h in conceal if h}):
        if os.path.isdir(path) and inside(path) and path not in shown:
            cmd += ["--tmpfs", path]
    for path in writable:
        cmd += ["--bind", path, path]
    return cmd + ["--chdir", runs, "--", *argv]
