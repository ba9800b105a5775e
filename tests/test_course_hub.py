"""JupyterHub mode: `autograder serve --hub` as an external service of a real JupyterHub (with its proxy) on
127.0.0.1. A request's token is the user's own Hub token, the one a single-user server's kernel holds in
$JUPYTERHUB_API_TOKEN; the service takes the user from the Hub's own auth."""
from __future__ import annotations

import shutil

import nbformat
import pytest

from conftest import ASSIGNMENT
from servers import hub as hubs
from servers.course import Service, call
from test_course import NB, _cell, _outcomes, _run, _shown


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    reason = hubs.available()
    if reason:
        pytest.fail(f"the JupyterHub tests need a hub here: {reason} (scripts/setup.sh installs both)", pytrace=False)
    h = hubs.start(tmp_path_factory.mktemp("hub"))
    yield h
    h.stop()


def _sign_in(base_url: str, path: str, token: str):
    """POST the sign-in form at `path`; the response (its body read)."""
    import http.client
    from urllib.parse import urlencode, urlsplit

    conn = http.client.HTTPConnection(urlsplit(base_url).netloc, timeout=60)
    try:
        conn.request("POST", path, body=urlencode({"token": token}),
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        r = conn.getresponse()
        r.read()
        return r
    finally:
        conn.close()


def test_the_hub_vouches_for_each_user_and_a_student_acts_only_as_themself(hub, course, tmp_path, monkeypatch):
    from autograder.service.commands import publish

    env = {"JUPYTERHUB_API_URL": hub.api_url, "JUPYTERHUB_API_TOKEN": hub.service_token,   # as the Hub sets them
           "JUPYTERHUB_SERVICE_NAME": hubs.SERVICE, "JUPYTERHUB_SERVICE_PREFIX": f"/services/{hubs.SERVICE}/"}
    svc = Service(tmp_path / "service", port=hub.service_port, args=("--hub", "--staff", "prof"), env=env)
    try:
        api = svc.url + "/api/v1"
        alice, bob, prof = hub.user_token("alice"), hub.user_token("bob"), hub.user_token("prof")
        assert call(api + "/me", alice) == (200, {"name": "alice", "role": "student"})
        assert call(api + "/me", bob) == (200, {"name": "bob", "role": "student"})
        assert call(api + "/me", prof) == (200, {"name": "prof", "role": "staff"})
        # through the Hub's proxy, under the prefix the Hub gives the service
        proxied = f"{hub.public_url}/services/{hubs.SERVICE}/api/v1"
        assert call(proxied + "/me", alice) == (200, {"name": "alice", "role": "student"})
        # a staff browser signs in through the proxy: the cookie's path is the service's prefix + /api/v1/, so a
        # student's server on the same origin (/user/alice/) never receives it
        signed = _sign_in(hub.public_url, f"/services/{hubs.SERVICE}/api/v1/login", prof)
        assert signed.status == 302 and signed.getheader("Location") == f"/services/{hubs.SERVICE}/api/v1/me"
        assert f"Path=/services/{hubs.SERVICE}/api/v1/;" in signed.getheader("Set-Cookie") + ";"
        assert signed.getheader("X-Frame-Options") == "DENY"
        assert call(api + "/me", "not-a-hub-token")[0] == 403
        assert call(api + "/me", hub.service_token)[0] == 403   # a service's token is no user's
        unscoped = hub.user_token("carl", scopes=["read:users:name!user=carl"])   # may not use this service
        status, answer = call(api + "/me", unscoped)
        assert status == 403 and "not one this course issued" in answer["error"]
        status, answer = call(api + f"/students/alice/assignments/{ASSIGNMENT}/commits", bob)
        assert status == 403 and "only your own records" in answer["error"]
        assert call(api + "/users", alice)[0] == 403
        # staff release for the hub's course; alice's kernel checks with the Hub's token, as her server gives it
        publish(course.key_path, svc.url, tmp_path / "student", "hub", course.student / NB, token=prof)
        shutil.copytree(tmp_path / "student", tmp_path / "alice")
        nb = nbformat.read(tmp_path / "alice" / NB, as_version=4)
        _cell(nb, "student-id").source = 'STUDENT_ID = "alice"'
        _cell(nb, "ex1-predict").source = "p1_returns = None\np1_grad = 1.0"
        monkeypatch.setenv("JUPYTERHUB_API_TOKEN", alice)
        report, _ = _shown(_run(nb, tmp_path / "alice", None, monkeypatch), "1")
        assert _outcomes(report)["1.predict.grad"]["status"] == "failed"
        status, held = call(api + f"/students/alice/assignments/{ASSIGNMENT}/commits", prof)
        assert status == 200 and held["commits"][0]["values"]["p1_grad"] == {"t": "float", "v": 1.0}
        assert call(api + "/users", prof)[1]["users"] == [{"name": "alice", "role": "student"},
                                                           {"name": "bob", "role": "student"},
                                                           {"name": "prof", "role": "staff"}]
    finally:
        svc.stop()
