"""coursefile: the course-mode student file `course.json` (the one place its format is written down): what a
notebook's kernel needs to observe an exercise, where the course service is, and no answer in any form.

May import: stdlib, autograder.model, autograder.keyfile, autograder.grading.plan.

Format "autograd-lab/course", version 1 (one JSON object):

    schema, v          "autograd-lab/course", 1
    assignment, title  the assignment's id and title
    notebook           the released notebook's file name
    service            the course service's base URL (http://host:port or https://host/prefix)
    auth               "token" (a token the course issued, in $AUTOGRAD_LAB_TOKEN or the file `autograder login`
                       writes) or "hub" (the JupyterHub user's own token, $JUPYTERHUB_API_TOKEN)
    plan               {parameters (as in the key), exercises (as in the key: ids, titles, functions, args),
                        names: [[exercise id, prediction variable]], fresh_points, call_timeout, cell_timeout}
    checks             {"public": n, "hidden": n}: how many checks the service judges now, and later

Unlike public_key.json it holds no check's expectation, reference form, misconception, why, digest or seed:
nothing from which an answer, or a hash of one, could be read. The service holds the key.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from autograder.grading.plan import ProbePlan
from autograder.keyfile import arg_json, arg_from, parameter_from, parameter_json
from autograder.model import Exercise, Key

SCHEMA = "autograd-lab/course"
VERSION = 1
FILE = "course.json"
Auth = Literal["token", "hub"]
_URL = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]+(/[A-Za-z0-9._~\-/]*)?")


@dataclass(frozen=True)
class CourseFile:
    """A course.json as a kernel reads it: the assignment, the service's URL and how to sign in, and the plan."""

    assignment: str
    title: str
    notebook: str
    service: str
    auth: Auth
    plan: ProbePlan
    public_checks: int
    hidden_checks: int


def check_url(url: str) -> str:
    """`url` without a trailing slash. Raises ValueError unless it is an http(s) URL of a host (and a path)."""
    url = url.rstrip("/")
    if not _URL.fullmatch(url):
        raise ValueError(f"not a service URL: {url!r} (give http://host:port or https://host/path)")
    return url


def to_json(key: Key, service: str, auth: Auth = "token") -> dict[str, Any]:
    """The course.json of a full key. Every prediction variable is named (the service commits them all, hidden
    ones too); the fresh points are the self-check's (no seed)."""
    if auth not in ("token", "hub"):
        raise ValueError(f"auth must be 'token' or 'hub', not {auth!r}")
    plan = ProbePlan.of(key)
    public = sum(1 for c in key.checks if c.visibility == "public")
    return {"schema": SCHEMA, "v": VERSION, "assignment": key.assignment, "title": key.title,
            "notebook": key.notebook, "service": check_url(service), "auth": auth,
            "plan": {"parameters": {n: parameter_json(p) for n, p in plan.parameters.items()},
                     "exercises": [{"id": e.id, "title": e.title, "functions": list(e.functions),
                                    "args": [arg_json(a) for a in e.args]} for e in plan.exercises],
                     "names": [list(n) for n in plan.names], "fresh_points": plan.fresh_points,
                     "call_timeout": plan.call_timeout, "cell_timeout": plan.cell_timeout},
            "checks": {"public": public, "hidden": len(key.checks) - public}}


def from_json(data: Any) -> CourseFile:
    """A CourseFile from its JSON form. Raises ValueError for another schema or version, or a malformed file."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or data.get("v") != VERSION:
        raise ValueError(f"not an autograd-lab course file v{VERSION}")
    try:
        p = data["plan"]
        plan = ProbePlan(str(data["assignment"]), {str(n): parameter_from(d) for n, d in p["parameters"].items()},
                         tuple(Exercise(str(e["id"]), str(e["title"]), tuple(map(str, e["functions"])),
                                        tuple(arg_from(a) for a in e["args"])) for e in p["exercises"]),
                         tuple((str(a), str(b)) for a, b in p["names"]), int(p["fresh_points"]), "",
                         float(p["call_timeout"]), float(p["cell_timeout"]))
        auth = data.get("auth", "token")
        if auth not in ("token", "hub"):
            raise ValueError(f"auth {auth!r}")
        return CourseFile(plan.assignment, str(data["title"]), str(data["notebook"]), check_url(str(data["service"])),
                          auth, plan, int(data["checks"]["public"]), int(data["checks"]["hidden"]))
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise ValueError(f"a malformed autograd-lab course file ({type(e).__name__}: {e})") from None


def load(path: str | Path) -> CourseFile:
    """Read a course.json. Raises OSError (unreadable) or ValueError (not one; the message names the file)."""
    try:
        return from_json(json.loads(Path(path).read_text(encoding="utf-8")))
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def write(path: str | Path, key: Key, service: str, auth: Auth = "token") -> Path:
    """Write the course.json of `key` to `path`; returns the path."""
    path = Path(path)
    path.write_text(json.dumps(to_json(key, service, auth), indent=1) + "\n", encoding="utf-8")
    return path
