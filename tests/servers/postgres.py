"""A real PostgreSQL server for tests: `start(tmp_path)` runs one on 127.0.0.1 (a free port, trust auth, its
Unix socket in its own folder) with a fresh cluster and an empty database `autograd_lab`; `stop()` ends it and
removes its files. The session fixture `postgres_url` gives its SQLAlchemy URL (psycopg 3).

The binaries are the newest /usr/lib/postgresql/<version>/bin (Debian's `postgresql` package; scripts/setup.sh
installs it), else initdb and postgres on PATH. PostgreSQL refuses to run as root, so as root the cluster
belongs to the user `postgres` (else `nobody`) and the server runs as that user through setpriv. Its files then
live in a short-named folder of the system's temporary folder (pytest's tmp_path sits below a root-only
/tmp/pytest-of-root, which that user cannot enter, and a Unix socket's path must stay under 108 bytes);
tmp_path holds the server's log. The server is this process's child and receives SIGINT (fast shutdown) when
this process dies, even by kill -9, so a killed test run leaves no server behind; the next start() removes the
files such a run left. (That signal comes when the *thread* that called start() ends: call it from the main
thread, as pytest's fixtures are, or from a thread that outlives the server.)
"""
from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

DATABASE = "autograd_lab"
SUPERUSER = "postgres"        # the cluster's superuser (initdb -U), the URL's user
DEBIAN_ROOT = Path("/usr/lib/postgresql")
NEEDED = ("initdb", "postgres", "pg_isready", "createdb")
PREFIX = "autograd-lab-pg-"   # the folders of the clusters, in the system's temporary folder
OWNER_FILE = "owner.pid"      # in such a folder: the pid of the process that started its server
INITDB_TIMEOUT = 300.0        # seconds; a few on an idle machine, far more on a busy one
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 60.0
PORT_ATTEMPTS = 5             # a free port can be taken by someone else before the server binds it

# Durability off (a test cluster is thrown away): commits and checkpoints do not wait for the disk.
SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "max_connections": "50",
            "shared_buffers": "32MB", "log_min_messages": "warning", "log_connections": "off"}
# A server started with durable=True keeps PostgreSQL's own defaults for these: a commit it acknowledged is on disk
# (what a crash test must show), with room for several service processes' connections.
DURABLE = {**SETTINGS, "fsync": "on", "synchronous_commit": "on", "full_page_writes": "on", "max_connections": "200"}


def _version_key(path: Path) -> tuple:
    return tuple(int(part) if part.isdigit() else -1 for part in re.split(r"[.\-]", path.parent.name))


def bindir() -> Path | None:
    """The folder of the newest PostgreSQL server binaries: /usr/lib/postgresql/<newest version>/bin that has
    them all, else the folder of `initdb` on PATH when it has them all; None when neither does."""
    candidates = sorted((p for p in DEBIAN_ROOT.glob("*/bin") if p.is_dir()), key=_version_key, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(os.path.realpath(on_path)).parent)
    for folder in candidates:
        if all(os.access(folder / name, os.X_OK) for name in NEEDED):
            return folder
    return None


def _server_user() -> pwd.struct_passwd | None:
    """Who runs the server: this process's user, or as root `postgres`, else `nobody` (None: neither exists)."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid())
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            pass
    return None


def available() -> str | None:
    """None when a server can be started here, else why not (for a clear failure message)."""
    if bindir() is None:
        return (f"PostgreSQL's server binaries ({', '.join(NEEDED)}) are neither in {DEBIAN_ROOT}/<version>/bin "
                "nor on PATH: run scripts/setup.sh as root, or apt-get install -y postgresql")
    if os.geteuid() == 0:
        if _server_user() is None:
            return "running as root, and PostgreSQL refuses root: no user `postgres` or `nobody` to run it as"
        if shutil.which("setpriv") is None:
            return "running as root, and PostgreSQL refuses root: setpriv (util-linux) is needed to drop to `postgres`"
    return None


def _as_user(user: pwd.struct_passwd, argv: list[str], pdeathsig: str | None = None) -> list[str]:
    """`argv` run as `user` (through setpriv when that is not who we are)."""
    if user.pw_uid == os.geteuid():
        if pdeathsig is None or shutil.which("setpriv") is None:
            return argv   # (without setpriv a killed test run leaves its server running)
        return ["setpriv", f"--pdeathsig={pdeathsig}", "--", *argv]
    prefix = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
    if pdeathsig is not None:
        prefix.append(f"--pdeathsig={pdeathsig}")   # setpriv sets it after the uid change (which would clear it)
    return [*prefix, "--", *argv]


def _env(user: pwd.struct_passwd) -> dict[str, str]:
    """This environment without libpq's PG* variables (they would redirect the client tools), with the
    user's HOME and a C locale (a locale that is not installed makes initdb fail)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(HOME=user.pw_dir or "/", LC_ALL="C", LANG="C")
    env.pop("LANGUAGE", None)
    return env


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep() -> None:
    """Remove the folders that servers of processes now gone left in the temporary folder (a killed test run;
    its server has already stopped on its parent's death). A folder without its owner file is left for a
    minute: its start() may be writing it just now."""
    for folder in Path(tempfile.gettempdir()).glob(PREFIX + "*"):
        try:
            pid = int((folder / OWNER_FILE).read_text())
        except (OSError, ValueError):
            pid = None
        try:
            if pid is None and time.time() - folder.stat().st_mtime < 60:
                continue
            if pid is not None and _alive(pid):
                continue
            server = (folder / "data" / "postmaster.pid").read_text().split("\n", 1)[0] \
                if (folder / "data" / "postmaster.pid").exists() else ""
            if server.strip().isdigit() and _alive(int(server)):
                continue   # its server still runs (it lost its parent without the signal): leave it
        except OSError:
            continue
        shutil.rmtree(folder, ignore_errors=True)


class Postgres:
    """A running PostgreSQL server (this process's child). `url` is its database's SQLAlchemy URL."""

    def __init__(self, process: subprocess.Popen, folder: Path, log: Path, port: int, bindir: Path,
                 settings: dict[str, str] | None = None) -> None:
        self.process = process
        self.settings = settings or SETTINGS
        self.folder = folder          # the cluster (data/) and the Unix socket; removed by stop()
        self.log = log                # the server's output
        self.log_offset = 0           # where this server's output begins in the log
        self.port = port
        self.host = "127.0.0.1"
        self.user = SUPERUSER
        self.database = DATABASE
        self.bindir = bindir
        self.url = f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{port}/{DATABASE}"

    def stop(self) -> None:
        """Stop the server (fast shutdown: clients are disconnected) and remove its cluster. Safe to call twice."""
        if self.process.poll() is None:
            for sig, wait in ((signal.SIGINT, STOP_TIMEOUT), (signal.SIGQUIT, 10.0), (signal.SIGKILL, 10.0)):
                try:
                    self.process.send_signal(sig)
                    self.process.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        shutil.rmtree(self.folder, ignore_errors=True)

    def crash(self) -> None:
        """An immediate shutdown (SIGQUIT to the postmaster): no checkpoint, clients cut off; the next start recovers
        from the write-ahead log, as after a power cut of the server alone. The cluster stays for `restart`."""
        self.process.send_signal(signal.SIGQUIT)
        self.process.wait(STOP_TIMEOUT)

    def restart(self, timeout: float = READY_TIMEOUT) -> None:
        """Start the server again on its cluster and port (after `crash`) and wait until it accepts connections."""
        user = _server_user()
        assert user is not None
        again = _launch(self.bindir, user, _env(user), self.folder / "data", self.folder, self.port, self.log,
                        self.settings)
        self.process, self.log_offset = again.process, again.log_offset
        _wait_ready(self, _env(user), timeout)

    def __enter__(self) -> Postgres:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"Postgres({self.url!r}, pid={self.process.pid})"


def _fail(what: str, detail: str) -> RuntimeError:
    return RuntimeError(f"PostgreSQL could not start: {what}\n{detail.strip()}")


def _run(argv: list[str], env: dict[str, str], timeout: float, what: str) -> None:
    try:
        r = subprocess.run(argv, env=env, cwd="/", capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise _fail(f"{what} took more than {timeout:.0f} s", "") from None
    if r.returncode != 0:
        raise _fail(f"{what} exited with {r.returncode}", r.stderr + r.stdout)


def _log_text(log: Path, offset: int = 0) -> str:
    """The server's log from byte `offset` (where this attempt's output begins)."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def start(tmp_path: Path | str, timeout: float = READY_TIMEOUT, durable: bool = False) -> Postgres:
    """Start a server with a fresh cluster and the empty database `autograd_lab`; its log goes to
    tmp_path/postgres.log. Waits up to `timeout` seconds for it to accept connections. `durable`: fsync and
    synchronous commits on (DURABLE), else off (SETTINGS). Raises RuntimeError (with initdb's or the server's own
    words) when it cannot start."""
    reason = available()
    if reason:
        raise RuntimeError(f"PostgreSQL could not start: {reason}")
    bin_ = bindir()
    user = _server_user()
    assert bin_ is not None and user is not None
    tmp_path = Path(tmp_path)
    tmp_path.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "postgres.log"
    env = _env(user)
    _sweep()

    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    server = None
    try:
        (folder / OWNER_FILE).write_text(str(os.getpid()))
        os.chown(folder, user.pw_uid, user.pw_gid)   # mode 0700 from mkdtemp: the server's user only (and root)
        data = folder / "data"
        _run(_as_user(user, [str(bin_ / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust",
                             "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"]),
             env, INITDB_TIMEOUT, "initdb")
        (data / "pg_hba.conf").write_text("local all all trust\nhost all all 127.0.0.1/32 trust\n")
        os.chown(data / "pg_hba.conf", user.pw_uid, user.pw_gid)
        for attempt in range(PORT_ATTEMPTS):
            port = _free_port()
            server = _launch(bin_, user, env, data, folder, port, log, DURABLE if durable else SETTINGS)
            try:
                _wait_ready(server, env, timeout)
                break
            except _PortTaken:
                if attempt == PORT_ATTEMPTS - 1:
                    raise _fail(f"{PORT_ATTEMPTS} free ports were taken before it could bind them",
                                _log_text(log, server.log_offset)) from None
        _run([str(bin_ / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", SUPERUSER, DATABASE],
             env, timeout, "createdb")
    except BaseException:
        if server is not None:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return server


class _PortTaken(Exception):
    pass


def _launch(bin_: Path, user: pwd.struct_passwd, env: dict[str, str], data: Path, folder: Path, port: int,
            log: Path, chosen: dict[str, str] = SETTINGS) -> Postgres:
    """The server process, started (not yet ready), with the `chosen` settings."""
    settings = {**chosen, "listen_addresses": "127.0.0.1", "port": str(port), "unix_socket_directories": str(folder)}
    argv = [str(bin_ / "postgres"), "-D", str(data)]
    for key, value in settings.items():
        argv += ["-c", f"{key}={value}"]
    offset = log.stat().st_size if log.exists() else 0
    with open(log, "ab") as out:   # opened here, so the server's user needs no access to tmp_path
        process = subprocess.Popen(_as_user(user, argv, pdeathsig="INT"), env=env, cwd="/",
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)   # a ^C to the test run does not reach it directly
    server = Postgres(process, folder, log, port, bin_, chosen)
    server.log_offset = offset
    return server


def _wait_ready(server: Postgres, env: dict[str, str], timeout: float) -> None:
    """Return once the server accepts connections on 127.0.0.1 (pg_isready); raise _PortTaken when another
    process bound its port first, RuntimeError (with its log) when it exits or is not ready within `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        code = server.process.poll()
        if code is not None:
            text = _log_text(server.log, server.log_offset)
            if "could not bind" in text and "Address already in use" in text:
                raise _PortTaken
            raise _fail(f"the server exited with {code}", text)
        r = subprocess.run([str(server.bindir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(server.port),
                            "-U", SUPERUSER, "-d", "postgres", "-t", "5"], env=env, cwd="/", capture_output=True)
        if r.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise _fail(f"the server did not accept connections within {timeout:.0f} s",
                        _log_text(server.log, server.log_offset))
        time.sleep(0.1)


_SHARED: dict[str, object] = {}   # one server per process, whichever test modules import the fixture


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory):
    """The SQLAlchemy URL (postgresql+psycopg://postgres@127.0.0.1:PORT/autograd_lab) of a PostgreSQL server
    for the session (one per xdist worker). Fails, never skips, when PostgreSQL or psycopg is missing.
    Tests share the database: each should create its own tables (or schema) and drop them."""
    reason = available()
    if reason:
        pytest.fail(f"the PostgreSQL tests need a PostgreSQL server: {reason}", pytrace=False)
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.fail("the PostgreSQL tests need psycopg 3: pip install 'psycopg[binary]>=3.1'", pytrace=False)
    if "server" not in _SHARED:
        _SHARED["server"] = start(tmp_path_factory.mktemp("postgres"))
        _SHARED["users"] = 0
    _SHARED["users"] += 1
    yield _SHARED["server"].url
    # Each test module that imports this fixture gets its own fixture definition: the last one stops the server.
    _SHARED["users"] -= 1
    if _SHARED["users"] == 0:
        _SHARED.pop("server").stop()
