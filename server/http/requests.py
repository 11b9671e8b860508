"""Each HTTP request (a ``/ws`` connection included) gets an id, which the lines logged while it
is handled carry (``request_id`` in the JSON log, ``server/common/logs.py``) and its answer
says back in ``X-Request-Id``. Behind a proxy (``trust_forwarded_for``) the proxy may give it:
an ``X-Request-Id`` of at most 64 letters, digits, ``-``, ``_`` or ``.`` is kept (HAProxy's
``unique-id-header``), any other replaced. Without a proxy the server always makes its own, so
a client cannot write into the log what it likes.

The id names a request in the log and is no secret: 64 random bits from a generator seeded
once from the system's, not a system call for each request (a scraper of ``/metrics`` makes
a hundred requests a second; ``docs/performance.md``). Their access lines are skipped too
(:class:`AccessLog`)."""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.web_log import AccessLogger

from ..arena import ARENA
from ..common.logs import REQUEST_ID, Redacted

HEADER = "X-Request-Id"
_GIVEN = re.compile(r"[A-Za-z0-9._-]{1,64}")
_ids = random.Random()  # seeded from os.urandom
QUIET_PATHS = frozenset({"/metrics"})
"""Paths whose successful answers get no access line: a scraper asks every few seconds, for ever,
and a line for each would say nothing but cost the event loop (the logging machinery is about a
third of such a request's CPU)."""


def new_request_id() -> str:
    """16 hex digits."""
    return f"{_ids.getrandbits(64):016x}"


_ID: web.RequestKey[str] = web.RequestKey("request_id", str)


@web.middleware
async def request_ids(request: web.Request,
                      handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    given = request.headers.get(HEADER) if request.app[ARENA].settings.trust_forwarded_for else None
    request_id = given if given is not None and _GIVEN.fullmatch(given) else new_request_id()
    REQUEST_ID.set(request_id)  # not reset: aiohttp's access line for it is written after the handler
    request[_ID] = request_id
    return await handler(request)


async def stamp_request_id(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: every answer says its request's id as its headers go out, a
    streamed one (an export) and a WebSocket's upgrade included, which are sent before their
    handler returns."""
    request_id = request.get(_ID)
    if request_id is not None:
        response.headers[HEADER] = request_id


class AccessLog(AccessLogger):
    """aiohttp's access line (``aiohttp.access``, at ``info``), except for a successful answer to
    one of :data:`QUIET_PATHS`: a refused scrape (401, 404) is still logged. A token in the
    request's URL is blanked (:class:`~server.common.logs.Redacted`)."""

    def __init__(self, logger: logging.Logger, log_format: str) -> None:
        super().__init__(logger, log_format)
        if not any(isinstance(f, Redacted) for f in logger.filters):
            logger.addFilter(Redacted())

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        if response.status == 200 and request.path in QUIET_PATHS:
            return
        super().log(request, response, time)
