"""A real JupyterHub for tests: `start(tmp_path)` runs `python -m jupyterhub` (with its configurable-http-proxy)
on 127.0.0.1, declaring the external service `autograd-lab` that `autograder serve` plays in JupyterHub mode.

No single-user server is spawned: `Hub.user_token(name)` asks the Hub's REST API for a token with the scopes
a spawned server's $JUPYTERHUB_API_TOKEN gets under this config (`SERVER_TOKEN_SCOPES`, resolved for that
user's default server as JupyterHub does at spawn; checked once against a real spawn, with jupyterhub 6.1.1:
the two tokens' scopes were the same).

What a real deployment's jupyterhub_config.py must set for kernels' tokens to be accepted by the service
(both lines, see `_config`):
- every user holds `access:services!service=autograd-lab` (the `user` role redefined in `load_roles`):
  a server token only gets the requested scopes its owner holds, the others are dropped silently;
- `c.Spawner.server_token_scopes` requests it (by default the token gets the `server` role's scopes:
  `users:activity!user` and `access:servers!server`, nothing for services).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path

SERVICE = "autograd-lab"
# what a spawned server's $JUPYTERHUB_API_TOKEN is given (c.Spawner.server_token_scopes in _config):
# the default `server` role's two scopes, plus access to our service
SERVER_TOKEN_SCOPES = ["users:activity!user", "access:servers!server", f"access:services!service={SERVICE}"]
_ADMIN = "hub-test-admin"   # a second service, only for this helper: creates users and their tokens


def _proxy_command() -> str | None:
    """configurable-http-proxy on PATH, or beside this Python (`npm install -g --prefix .venv` puts it there)."""
    return (shutil.which("configurable-http-proxy")
            or shutil.which("configurable-http-proxy", path=str(Path(sys.executable).parent)))


def available() -> str | None:
    """None if a hub can be started here, else why not."""
    if find_spec("jupyterhub") is None:
        return f"jupyterhub is not installed in {sys.executable} (pip install jupyterhub)"
    if _proxy_command() is None:
        return "configurable-http-proxy is not on PATH (npm install -g configurable-http-proxy)"
    return None


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _config(d: Path, proxy_port: int, proxy_api_port: int, hub_port: int, service_port: int,
            service_token: str, admin_token: str) -> str:
    # the hub's start waits this long for the service's url to answer (default 30 s; the key is new in 6.0)
    timeout = ', "timeout": 1' if int(version("jupyterhub").split(".")[0]) >= 6 else ""
    return f"""\
c = get_config()  # noqa
c.JupyterHub.bind_url = "http://127.0.0.1:{proxy_port}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{_proxy_command()!r}]
c.ConfigurableHTTPProxy.pid_file = {str(d / "proxy.pid")!r}
c.JupyterHub.pid_file = {str(d / "jupyterhub.pid")!r}
c.JupyterHub.db_url = {"sqlite:///" + str(d / "jupyterhub.sqlite")!r}
c.JupyterHub.cookie_secret_file = {str(d / "cookie_secret")!r}
# nobody logs in through this hub: users and tokens come from the REST API
c.JupyterHub.authenticator_class = "null"
c.Authenticator.any_allow_config = True   # (no "nobody can log in" warning: that is the point)
c.JupyterHub.services = [
    {{"name": {SERVICE!r}, "url": "http://127.0.0.1:{service_port}", "api_token": {service_token!r}{timeout}}},
    {{"name": {_ADMIN!r}, "api_token": {admin_token!r}}},
]
c.JupyterHub.load_roles = [
    # every user may use the service: without it the scope below is dropped from server tokens
    {{"name": "user", "scopes": ["self", "access:services!service={SERVICE}"]}},
    {{"name": {_ADMIN!r}, "scopes": ["admin:users", "tokens"], "services": [{_ADMIN!r}]}},
]
c.Spawner.server_token_scopes = {SERVER_TOKEN_SCOPES!r}
"""


@dataclass
class Hub:
    api_url: str            # http://127.0.0.1:PORT/hub/api
    service_token: str      # the api_token of the autograd-lab service
    service_port: int       # where the service must listen (its url in the hub's config)
    proc: subprocess.Popen
    log_path: Path
    admin_token: str = field(repr=False, default="")
    public_url: str = ""    # the proxy's address: http://127.0.0.1:PORT (a service is under /services/<name>/)

    def _api(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        req = urllib.request.Request(self.api_url + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"token {self.admin_token}",
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def user_token(self, name: str, scopes: list[str] | None = None) -> str:
        """A token of user `name` (created if needed) with the scopes of its default server's
        $JUPYTERHUB_API_TOKEN (or with `scopes`)."""
        quoted = urllib.parse.quote(name, safe="")
        status, reply = self._api("POST", f"/users/{quoted}")
        if status not in (201, 409):   # 409: exists already
            raise RuntimeError(f"hub: creating user {name}: {status} {reply}")
        # as JupyterHub does at spawn (User.spawn): '!server' is resolved to this user's default server
        scopes = [s + f"={name}/" if s.endswith("!server") else s for s in (SERVER_TOKEN_SCOPES if scopes is None
                                                                             else scopes)]
        status, reply = self._api("POST", f"/users/{quoted}/tokens",
                                  {"scopes": scopes, "note": f"Server at /user/{name}/ (emulated)"})
        if status != 201:
            raise RuntimeError(f"hub: creating a token for {name}: {status} {reply}")
        return reply["token"]

    def stop(self) -> None:
        """SIGTERM (the hub then stops its proxy), SIGKILL after 20 s; then the proxy, if it outlived the hub
        (it runs in a session of its own, to survive hub restarts, so it is not in the hub's group)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        _stop_proxy(self.log_path.parent / "proxy.pid")


def _stop_proxy(pid_file: Path) -> None:
    """End the proxy that pid_file names, if it is still running (checked by its command line)."""
    try:
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return
    if b"configurable-http-proxy" not in cmdline:
        return
    for sig in (signal.SIGTERM, signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            break
        time.sleep(0.5)
        if not Path(f"/proc/{pid}").exists():
            break
    pid_file.unlink(missing_ok=True)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status == 200
    except (OSError, urllib.error.URLError):
        return False


def start(tmp_path, timeout: float = 90) -> Hub:
    """Start a hub in tmp_path/jupyterhub (its config, sqlite db, cookie secret, pid files and logs) and wait
    until it is fully up: its API answers and it logged "JupyterHub is now running"."""
    reason = available()
    if reason:
        raise RuntimeError(reason)
    d = Path(tmp_path) / "jupyterhub"
    d.mkdir(parents=True, exist_ok=True)
    for attempt in range(3):   # a picked port can be taken before the hub or proxy binds it
        proxy_port, proxy_api_port, hub_port, service_port = _free_ports(4)
        service_token, admin_token = secrets.token_hex(32), secrets.token_hex(32)
        cfg = d / "jupyterhub_config.py"
        cfg.write_text(_config(d, proxy_port, proxy_api_port, hub_port, service_port, service_token, admin_token))
        (d / "jupyterhub.sqlite").unlink(missing_ok=True)
        log_path = d / f"jupyterhub-{attempt}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(cfg)], cwd=d,
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        hub = Hub(f"http://127.0.0.1:{hub_port}/hub/api", service_token, service_port, proc, log_path,
                  admin_token=admin_token, public_url=f"http://127.0.0.1:{proxy_port}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            # the API answers before the hub has added its services' routes and set its SIGTERM handler;
            # that line is logged right before the handler is set
            if b"JupyterHub is now running" in log_path.read_bytes() and _answers(hub.api_url + "/"):
                return hub
            time.sleep(0.25)
        hub.stop()
        text = log_path.read_text(errors="replace")
        if proc.returncode is not None and "already in use" in text.lower() and attempt < 2:
            continue
        tail = "\n".join(text.splitlines()[-30:])
        raise RuntimeError(f"jupyterhub did not answer at {hub.api_url} within {timeout:.0f} s "
                           f"(exit {proc.returncode}); the end of {log_path}:\n{tail}")
    raise AssertionError("unreachable")
