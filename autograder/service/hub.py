"""hub: JupyterHub mode. The service runs as a Hub service; a request's token is the user's own Hub token (a
single-user server's $JUPYTERHUB_API_TOKEN), which the Hub resolves to the user (jupyterhub's service auth,
`HubAuth.user_for_token`), and which must carry the scope to use this service (`access:services!service=<name>`;
docs/course.md says what the Hub's config grants).

May import: stdlib, jupyterhub.services.auth, autograder.service.store.
"""
from __future__ import annotations

import asyncio
import os
from typing import Any, Awaitable, Callable

from autograder.service.store import Course, User

SERVICE_NAME = "autograd-lab"


def identifier(course: Course, staff: list[str], api_url: str | None = None,
               name: str | None = None) -> Callable[[str], Awaitable[User | None]]:
    """A function token -> the Hub user it belongs to (added to the roster at first sight; staff if named in
    `staff` or a Hub admin), or None when the Hub does not know the token, it is not a user's, or it lacks the
    scope to use this service. `api_url`: the Hub's API (default $JUPYTERHUB_API_URL, which the Hub sets for a
    service it starts); `name`: this service's name in the Hub's config (default $JUPYTERHUB_SERVICE_NAME, else
    "autograd-lab"). Raises ImportError without jupyterhub, RuntimeError without the Hub's address."""
    try:
        from jupyterhub.services.auth import HubAuth, check_scopes
    except ImportError as e:
        raise ImportError(f"JupyterHub mode needs jupyterhub ({e}): pip install 'autograd-lab[hub]'") from None
    api_url = api_url or os.environ.get("JUPYTERHUB_API_URL")
    if not api_url:
        raise RuntimeError("run it as a JupyterHub service: the Hub gives a service $JUPYTERHUB_API_URL "
                           "(docs/course.md, \"With JupyterHub\"), or set it to http://HUB:8081/hub/api")
    name = name or os.environ.get("JUPYTERHUB_SERVICE_NAME") or SERVICE_NAME
    needed = {f"access:services!service={name}"}
    auth = HubAuth(api_url=api_url, api_token=os.environ.get("JUPYTERHUB_API_TOKEN", ""), cache_max_age=60,
                   access_scopes=needed)
    named = set(staff)

    async def identify(token: str) -> User | None:
        model: Any = await auth.user_for_token(token, use_cache=True, sync=False)
        if not isinstance(model, dict) or model.get("kind", "user") != "user" or not model.get("name"):
            return None
        if not check_scopes(needed, set(model.get("scopes") or ())):
            return None
        who = str(model["name"])
        role = "staff" if who in named or model.get("admin") else "student"
        return await asyncio.get_running_loop().run_in_executor(None, course.ensure_user, who, role)

    return identify
