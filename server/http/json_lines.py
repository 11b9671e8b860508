"""Streaming JSON Lines over HTTP, a page at a time, in constant memory.

Exports (``/api/games/export``, a tournament's ``…/records``) read storage one page at a
time and write each page as it comes, so their memory does not grow with the number of
games. The body is plain JSON Lines, compressed by HTTP (``Content-Encoding: gzip``) when
the client's ``Accept-Encoding`` asks for it, or a gzip file (``application/gzip``) when the
endpoint is asked for one: a file ``gunzip`` reads, which a client saves as it comes.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import msgspec
from aiohttp import web

_encoder = msgspec.json.Encoder()

T = TypeVar("T")

PAGES_AT_ONCE = 1
"""Pages of records (an export's, a tournament's ``…/records``) read from storage at a time,
whatever the number of exports. SQLite has one worker thread, which stores the games too: a
page of long games takes it a few hundred milliseconds, and four dozen exports at once, each
with a page in its queue, held a game's write past ``storage_timeout_s``, so that the server
took its storage for failing and started no game. One page at a time, a write waits for one
page at most; the exports take turns."""
PAGE_SLOTS = web.AppKey("record_page_slots", asyncio.Semaphore)


async def page_of(request: web.Request, read: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
    """``await read(*args, **kwargs)``, a page of records from storage, once no other such page
    is being read (:data:`PAGES_AT_ONCE`)."""
    async with request.app[PAGE_SLOTS]:
        return await read(*args, **kwargs)


def setup(app: web.Application) -> None:
    """The application's one turn of reading pages (:func:`page_of`)."""
    app[PAGE_SLOTS] = asyncio.Semaphore(PAGES_AT_ONCE)


GZIP_LEVEL = 3
"""Records compress 3 times faster at level 3 than at zlib's default 6, to a file a third
larger (14 times smaller than the JSON; docs/performance.md, "Bulk export")."""


async def stream_json_lines(request: web.Request, pages: AsyncIterator[list[Any]], *, gzip_file: str | None = None,
                            headers: dict[str, str] | None = None) -> web.StreamResponse:
    """Send each value of each page as one line of JSON. ``gzip_file``: send a gzip file
    with that name instead of (possibly HTTP-compressed) JSON Lines. A ``HEAD`` gets the
    headers alone (an export's ``X-Game-Count``), and no page is read."""
    resp = web.StreamResponse(headers=headers)
    head = request.method == "HEAD"
    packer = None
    if gzip_file is not None:
        resp.content_type = "application/gzip"
        resp.headers["Content-Disposition"] = f'attachment; filename="{gzip_file}"'
        packer = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    else:
        resp.content_type = "application/x-ndjson"
        if not head:  # a compressor would write its end even where no body may go
            resp.enable_compression()  # only if the client accepts it
    await resp.prepare(request)
    if head:
        await resp.write_eof()
        return resp
    async for page in pages:
        chunk = bytearray()
        for value in page:
            _encoder.encode_into(value, chunk, -1)
            chunk += b"\n"
        if packer is not None:
            chunk = bytearray(packer.compress(chunk))
        if chunk:
            await resp.write(bytes(chunk))
    if packer is not None:
        await resp.write(packer.flush())
    await resp.write_eof()
    return resp
