"""service_client: how a kernel, the CLI and staff tools talk to the course service: JSON over HTTP with the stdlib only
(a learner's install has no web framework), the token in the Authorization header, bounded waits, and every
failure as one ServiceError that says what happened in a student's words.

May import: stdlib.
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

TOKEN_ENV = "AUTOGRAD_LAB_TOKEN"
HUB_TOKEN_ENV = "JUPYTERHUB_API_TOKEN"
MAX_ANSWER = 20_000_000   # bytes of one answer read
MAX_REQUEST = 4_000_000   # bytes of one request: the service's limit (autograder.service.app.MAX_BODY)
RETRY_WAIT = 10.0         # seconds a 503's Retry-After may ask for and still be waited for, once


def token_file() -> Path:
    """Where `autograder login` keeps the course token: $XDG_CONFIG_HOME/autograd-lab/token (default ~/.config)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "autograd-lab" / "token"


def saved_service() -> str | None:
    """The service the saved token (`autograder login`) was checked with, or None."""
    try:
        data = json.loads(token_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return str(data.get("service")) if isinstance(data, dict) and data.get("service") else None


def find_token(auth: str = "token", service: str | None = None) -> str | None:
    """The token to present to `service`: with `auth` "hub", the JupyterHub user's own ($JUPYTERHUB_API_TOKEN);
    else $AUTOGRAD_LAB_TOKEN, else the one `autograder login` saved, but only for the service it was checked with
    (a course.json naming another address never receives it). None if there is none."""
    if auth == "hub":
        return os.environ.get(HUB_TOKEN_ENV) or None
    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV].strip()
    try:
        data = json.loads(token_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("token"), str):
        return None
    if service is not None and str(data.get("service", "")).rstrip("/") != service.rstrip("/"):
        return None
    return data["token"].strip() or None


def save_token(token: str, service: str) -> Path:
    """Keep `token`, with the service it was checked with, in token_file(), readable by its owner only; returns the
    path."""
    path = token_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps({"service": service.rstrip("/"), "token": token.strip()}) + "\n")
    os.chmod(path, 0o600)
    return path


class ServiceError(Exception):
    """A request that did not get its answer. `status`: the HTTP status (None: the service was not reached);
    `reason`: the service's own reason, or what went wrong on the way; `retry_after`: the seconds a 503 asked to
    wait; `refused`: the connection was refused or reset (nothing listened, or the process ended)."""

    def __init__(self, status: int | None, reason: str, url: str, retry_after: float | None = None,
                 refused: bool = False) -> None:
        super().__init__(f"{reason} ({url}" + (f", HTTP {status})" if status else ")"))
        self.status, self.reason, self.url = status, reason, url
        self.retry_after, self.refused = retry_after, refused

    @property
    def unreachable(self) -> bool:
        return self.status is None


class Client:
    """The course service at `base` (http(s)://host:port[/prefix]) as `token`'s owner."""

    def __init__(self, base: str, token: str | None, timeout: float = 30.0) -> None:
        self.base, self.token, self.timeout = base.rstrip("/"), token, timeout

    def _send(self, method: str, path: str, data: bytes | None, kind: str, timeout: float | None) -> bytes:
        """Send one request and return the answer's bytes (at most MAX_ANSWER), once more after a 503 that asks to
        wait at most RETRY_WAIT seconds (its database was unavailable for a moment) or a refused or reset connection
        (a service process restarting): every request here is safe to send twice (a commit of the same predictions is
        the same row, the same notebook handed in again is kept once, a check is judged again). Raises ServiceError."""
        import time

        for attempt in (1, 2):
            try:
                return self._send_once(method, path, data, kind, timeout)
            except ServiceError as e:
                if attempt == 2 or not (e.retry_after is not None and e.retry_after <= RETRY_WAIT
                                        or e.status is None and e.refused):
                    raise
                time.sleep(e.retry_after if e.retry_after is not None else 1.0)
        raise AssertionError("unreachable")

    def _send_once(self, method: str, path: str, data: bytes | None, kind: str, timeout: float | None) -> bytes:
        req = urllib.request.Request(f"{self.base}/api/v1{path}", data=data, method=method)
        req.add_header("Content-Type", kind)
        req.add_header("Accept", "application/json")
        if self.token:
            req.add_header("Authorization", f"token {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as answer:
                raw = answer.read(MAX_ANSWER + 1)
        except urllib.error.HTTPError as e:
            try:
                why = json.loads(e.read(100_000)).get("error") or e.reason
            except (ValueError, AttributeError, OSError):
                why = str(e.reason)
            wait = e.headers.get("Retry-After", "") if e.code == 503 and e.headers is not None else ""
            raise ServiceError(e.code, str(why), self.base,
                               retry_after=float(wait) if wait.strip().isascii() and wait.strip().isdigit() else None) from None
        except (urllib.error.URLError, OSError, TimeoutError) as e:
            reason = getattr(e, "reason", e)
            refused = isinstance(reason, (ConnectionRefusedError, ConnectionResetError))
            raise ServiceError(None, f"the course service cannot be reached: {reason}", self.base,
                               refused=refused) from None
        if len(raw) > MAX_ANSWER:
            raise ServiceError(None, "the course service's answer is too large", self.base)
        return raw

    def _json(self, raw: bytes) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            raise ServiceError(None, "the course service's answer is not JSON (is this its address?)", self.base) from None

    def request(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        """Send one request (`body` as JSON) and return the answer's JSON. Raises ServiceError."""
        data = None if body is None else json.dumps(body, allow_nan=False).encode()
        if data is not None and len(data) > MAX_REQUEST:
            raise ServiceError(413, f"this request is {len(data)} bytes, over the service's {MAX_REQUEST} (is a long "
                                    f"output pasted into a cell's code?); nothing was sent", self.base)
        return self._json(self._send(method, path, data, "application/json", timeout))

    def request_bytes(self, method: str, path: str, data: bytes, timeout: float | None = None) -> Any:
        """Send `data` as it is (a notebook's bytes) and return the answer's JSON. Raises ServiceError."""
        return self._json(self._send(method, path, data, "application/x-ipynb+json", timeout or 120))

    def request_text(self, method: str, path: str) -> str:
        """The answer as text (a CSV). Raises ServiceError."""
        return self._send(method, path, None, "application/json", None).decode("utf-8")

    def download(self, path: str) -> bytes:
        """The answer's bytes (a hand-in's notebook). Raises ServiceError."""
        return self._send("GET", path, None, "application/json", 120)

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: Any, timeout: float | None = None) -> Any:
        return self.request("POST", path, body, timeout)

    def put(self, path: str, body: Any) -> Any:
        return self.request("PUT", path, body)
