"""The server's log: lines for a person (``text``, the default) or one JSON object a line for a
log pipeline (``json``: Loki, Elasticsearch, ``jq``), through ``python-json-logger``.

A JSON line has ``time`` (ISO 8601, UTC), ``level``, ``logger`` (the module that logged it),
``message`` and, where known, the fields a search needs:

- ``node``: this server's node name (``--node``; by default the host name and port), on every line;
- ``request_id``: the HTTP request or ``/ws`` connection whose handling logged the line, or
  started the work that did (:data:`REQUEST_ID`, set by ``server/http/requests.py``);
- ``game`` and ``bot``: the game or bot a line is about, given by the line itself
  (``extra=about(game=…)``).

Tokens are never logged, in either format: no log call is given one (a bot's token exists only
in its ``hello`` and in the answer that creates the bot; the admin token only in headers,
which no log line prints). A client may still put one where it does not belong, in a URL's
query (``/api/bots?token=mdl_…``), which the access line quotes: :class:`Redacted` blanks it.
"""

from __future__ import annotations

import logging
import re
import sys
from contextvars import ContextVar
from typing import Any, Literal

from aiohttp.http_exceptions import HttpProcessingError

LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

REQUEST_ID: ContextVar[str | None] = ContextVar("request_id", default=None)
"""The request (or WebSocket connection) being handled, for the lines logged meanwhile."""


def about(*, game: str | None = None, bot: str | None = None) -> dict[str, str]:
    """The ``extra`` of a log call about a game or a bot: its fields in a JSON line."""
    fields = {}
    if game is not None:
        fields["game"] = game
    if bot is not None:
        fields["bot"] = bot
    return fields


class RequestIds(logging.Filter):
    """Adds the :data:`REQUEST_ID` of the context a line is logged in."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = REQUEST_ID.get()
        if request_id is not None and not hasattr(record, "request_id"):
            record.request_id = request_id
        return True


_SECRET = re.compile(r"mdl_[A-Za-z0-9_-]{29,}|(?<=[?&])([^=&\s\"]*token[^=&\s\"]*=)[^&\s\"]*", re.IGNORECASE)
"""A token as the server issues them, anywhere, and the value of any query parameter whose name
says ``token`` (a token from before the ``mdl_`` prefix, or a client's own name for it). A run
after ``mdl_`` is a token's from 29 characters on: a bot's name, which may start with ``mdl_``
too, holds 28 at most (``BOT_NAME``), and stays in the lines of its pages."""


def redact(value: Any) -> Any:
    """``value`` (a text, or a dict or list of them) with what looks like a token blanked."""
    if isinstance(value, str):
        return _SECRET.sub(lambda m: f"{m[1]}…" if m[1] else "mdl_…", value)
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value


class Redacted(logging.Filter):
    """An access line (``aiohttp.access``) quotes the request's line, query included, and its
    fields again (a JSON line's extra keys: the line, the headers it quotes): a token a client
    put in a URL, or in a header the line quotes, is blanked in all of them."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), None
        for key, value in list(vars(record).items()):
            if key not in ("msg", "args", "exc_info"):
                setattr(record, key, redact(value))
        return True


class BadRequests(logging.Filter):
    """A request HTTP itself refuses (a header too long or malformed, a line that is not HTTP)
    is the client's mistake, which aiohttp logs as an error with its traceback: one line at
    ``INFO`` instead, so that a client on the open internet cannot fill the log with them."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError) and 400 <= (exc.code or 400) < 500:
            # Its kind alone: its message quotes the request, which may hold a token.
            record.msg = f"{record.getMessage()}: {type(exc).__name__} ({exc.code})"
            record.args = None
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def configure(level: str, fmt: LogFormat, node: str) -> None:
    """The root logger's one handler, on standard error, in ``fmt``."""
    server = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, BadRequests) for f in server.filters):
        server.addFilter(BadRequests())
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        from pythonjsonlogger.json import JsonFormatter

        handler.setFormatter(JsonFormatter(
            ["levelname", "name", "message"], timestamp="time", static_fields={"node": node},
            rename_fields={"levelname": "level", "name": "logger"}, json_ensure_ascii=False))
        handler.addFilter(RequestIds())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
