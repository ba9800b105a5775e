"""render.overrides: the course service's staff page of an assignment's overrides (HTML): every override with its
state, and the form that adds or clears one (it carries the page's CSRF token). Pure; jinja2 with autoescaping (a
reason staff typed is text, never markup).

May import: stdlib, autograder.render.html.
"""
from __future__ import annotations

from typing import Any

from autograder.render.html import environment


def to_html(assignment: str, rows: list[dict[str, Any]], csrf: str, action: str, note: str = "",
            students: tuple[str, ...] = (), checks: tuple[tuple[str, float], ...] = (),
            typed: dict[str, str] | None = None) -> str:
    """The page: `rows` (the service's overrides with their `state`, oldest first; shown newest first), a form that
    posts to `action` with the hidden field `_csrf` = `csrf`, `note` (what the last post did, or why it was refused),
    `students` and `checks` ((id, points)) offered as the form's suggestions, `typed` (student, check, score, why: a
    refused form's values, filled in again)."""
    return environment().get_template("overrides.html.j2").render(
        assignment=assignment, rows=list(reversed(rows)), csrf=csrf, action=action, note=note, students=students,
        checks=checks, typed=typed or {}, waiting=sum(1 for r in rows if r.get("state") == "to confirm"))
