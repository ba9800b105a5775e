"""A real course service for tests: `autograder serve` as a subprocess on 127.0.0.1 (a free port, or the one given),
with its database (SQLite in the test's folder, or a PostgreSQL URL), stopped gently or with kill -9."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


class Service:
    """A running `autograder serve`. `url` is its base URL; `log` the file its output goes to."""

    def __init__(self, folder: Path, db: str | None = None, port: int = 0, args: tuple[str, ...] = (),
                 env: dict[str, str] | None = None) -> None:
        self.folder, self.args, self.env = Path(folder), args, env or {}
        self.folder.mkdir(parents=True, exist_ok=True)
        self.db = db or f"sqlite:///{self.folder / 'course.db'}"
        self.log = self.folder / "serve.log"
        self.proc: subprocess.Popen | None = None
        self.port = port
        self.start(port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, port: int | None = None, timeout: float = 120) -> None:
        """Start it (again, on the same port unless `port` is given) and wait until it answers."""
        port_file = self.folder / "port"
        port_file.unlink(missing_ok=True)
        env = {**os.environ, **self.env}
        env.pop("AUTOGRAD_LAB_TOKEN", None)
        with self.log.open("a") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "autograder", "serve", "--db", self.db, "--port",
                                          str(self.port if port is None else port), "--port-file", str(port_file),
                                          *self.args], cwd=self.folder, stdout=out, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True)
        end = time.monotonic() + timeout
        while not port_file.exists() or not port_file.read_text().strip():
            assert self.proc.poll() is None, f"the service stopped: {self.log.read_text()[-3000:]}"
            assert time.monotonic() < end, f"the service did not start in {timeout} s: {self.log.read_text()[-3000:]}"
            time.sleep(0.1)
        self.port = int(port_file.read_text())

    def stop(self, kill: bool = False) -> None:
        """SIGTERM (or, with `kill`, SIGKILL: kill -9) and wait."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def add(self, *names: str, staff: bool = False) -> dict[str, str]:
        """Add users with `autograder course add` (as staff do on the service's machine): name -> token."""
        r = subprocess.run([sys.executable, "-m", "autograder", "course", "add", *names, "--db", self.db,
                            *(["--staff"] if staff else [])], capture_output=True, text=True, check=True,
                           cwd=self.folder)
        return dict(line.split("\t") for line in r.stdout.splitlines())


def call(url: str, token: str | None, method: str = "GET", body: Any = None, raw: bytes | None = None,
         headers: dict[str, str] | None = None, timeout: float = 60) -> tuple[int, Any]:
    """One request: (status, the answer's JSON)."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method)
    if token is not None:
        req.add_header("Authorization", f"token {token}")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, text.decode("utf-8", "replace")


def busy_course(folder: Path, key_path: Path, notebook: Path, n: int, db: str | None = None,
                burst: int = 1000) -> tuple[Service, str, dict[str, str]]:
    """A service in `folder` for a crowd (rate limits off: `burst` at once, 1000/s), with staff prof and students
    s000 ... s<n-1>, and `key_path`'s assignment published for it (its course folder in folder/student):
    (service, staff token, student -> token)."""
    from autograder.service.commands import publish

    svc = Service(folder / "service", db=db, args=("--burst", str(burst), "--rate", "1000"))
    staff = svc.add("prof", staff=True)["prof"]
    tokens = svc.add(*(f"s{i:03d}" for i in range(n)))
    publish(key_path, svc.url, folder / "student", "token", notebook, token=staff)
    return svc, staff, tokens

