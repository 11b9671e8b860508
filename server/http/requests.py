"""Each HTTP request (a ``/ws`` connection included) gets an id, which the lines logged while it
is handled carry (``request_id`` in the JSON log, ``server/common/logs.py``) and its answer
says back in ``X-Request-Id``. Behind a proxy (``trust_forwarded_for``) the proxy may give it:
an ``X-Request-Id`` of at most 64 letters, digits, ``-``, ``_`` or ``.`` is kept (HAProxy's
``unique-id-header``), any other replaced. Without a proxy the server always makes its own, so
a client cannot write into the log what it likes."""

from __future__ import annotations

import re
import secrets
from collections.abc import Awaitable, Callable

from aiohttp import web

from ..arena import ARENA
from ..common.logs import REQUEST_ID

HEADER = "X-Request-Id"
_GIVEN = re.compile(r"[A-Za-z0-9._-]{1,64}")


@web.middleware
async def request_ids(request: web.Request,
                      handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    given = request.headers.get(HEADER) if request.app[ARENA].settings.trust_forwarded_for else None
    request_id = given if given is not None and _GIVEN.fullmatch(given) else secrets.token_hex(8)
    REQUEST_ID.set(request_id)  # not reset: aiohttp's access line for it is written after the handler
    response = await handler(request)
    if not response.prepared:  # a WebSocket's answer went out with its upgrade
        response.headers[HEADER] = request_id
    return response
