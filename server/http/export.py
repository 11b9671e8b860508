"""``GET /api/games/export``: every stored game that matches a filter, with its R23 record,
as JSON Lines (PROTOCOL.md §17.10).

Games come in the order they started (then by id), read from storage a page at a time by
keyset (the last game's ``(started, id)``), so an export of any size runs in constant memory
and never skips or repeats a game, even while games end around it. ``limit=N`` exports only
the last N games of the filter, in the same order: the export starts just after the game
before them, found in the index. Only the games over when it was asked are exported (and,
without ``until``, started before then), so a game that ends while it streams is not: its
``X-Game-Count`` header is exact, and ``limit=N`` takes the last N of those. Running games have
no public record yet (R24) and are never exported; a game whose record is held while another
game on its deal is still to be played (``server/games/holds.py``) is exported with its
record's public part (no deck, no reshuffles).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, get_args

import msgspec
from aiohttp import web

from protocol.messages import GameKind, RecordHold

from ..arena import ARENA
from ..common.clock import utc_now
from ..games import holds
from ..storage import GameFilter, GameRow, GameStatus
from .api import ApiError, query_int, takes
from .json_lines import page_of, stream_json_lines

EXPORT_PAGE = 200
"""Games read from storage at a time (about 2 MB of records)."""
STATUSES: tuple[GameStatus, ...] = ("finished", "aborted")


class ExportedGame(msgspec.Struct):
    """One line of an export."""

    game_id: str
    kind: str
    rated: bool
    status: str
    players: list[str]
    started: str
    ended: str | None
    end_reason: str | None
    result: dict[str, Any] | None
    pair_id: str | None
    tournament_id: str | None
    record: dict[str, Any] | None
    """R23; ``null`` for a game aborted by a server stop, which kept none; while it is held, its
    public part (``deck`` and ``reshuffles`` empty)."""
    record_held: RecordHold | None
    """Why the record is held (``server/games/holds.py``); ``null`` when it is not."""


def exported(row: GameRow, hold: RecordHold | None = None) -> ExportedGame:
    return ExportedGame(row.game_id, row.kind, row.rated, row.status, row.players, row.started, row.ended,
                        row.end_reason, row.result, row.pair_id, row.tournament_id,
                        holds.public_part(row.record) if hold is not None and row.record is not None else row.record,
                        hold)


def iso_time(name: str, raw: str) -> str:
    """A ``since``/``until`` value (a date, or a date and time; UTC unless it says otherwise)
    as stored times are written, so they compare as text; ``400 bad_date`` if it is not one."""
    try:
        at = datetime.fromisoformat(raw)
        at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    except (ValueError, OverflowError):  # not a date, or one that UTC takes out of range (year 0 or 10000)
        raise ApiError(400, "bad_date", f"{name} is an ISO 8601 date or time such as 2026-11-23 or "
                                        f"2026-11-23T08:00:00Z, not {raw!r}") from None
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def game_filter(request: web.Request) -> GameFilter:
    """The export's filter from the query; typed ``400``/``404`` for a bad one."""
    q = request.query
    bot = q.get("bot") or None
    if bot is not None:
        row = await request.app[ARENA].storage.bot_by_name(bot)
        if row is None:
            raise ApiError(404, "unknown_bot", f"no bot named {bot!r}")
        bot = row.name
    kind = q.get("kind") or None
    if kind is not None and kind not in get_args(GameKind):
        raise ApiError(400, "unknown_kind", f"kind is one of {', '.join(get_args(GameKind))}, not {kind!r}")
    status = q.get("status") or None
    if status is not None and status not in STATUSES:
        raise ApiError(400, "bad_status", f"status is finished or aborted (running games have no public record "
                                          f"yet), not {status!r}")
    now = utc_now()
    since = iso_time("since", q["since"]) if q.get("since") else None
    until = iso_time("until", q["until"]) if q.get("until") else now
    if since is not None and since >= until:
        raise ApiError(400, "bad_range", f"since ({since}) must be before until ({until})")
    return GameFilter(bot=bot, kind=kind, statuses=(status,) if status else STATUSES, since=since, until=until,
                      ended_by=now)


def export_limit(request: web.Request) -> int | None:
    """``limit``: how many of the last games to export (``None``: all of them); an integer of at
    least 1 like ``/api/games``'s, with no upper bound (an export streams any number; left out or
    empty: all), or a typed ``400 invalid_request``."""
    limit = query_int(request, "limit", 0, 1)
    return limit or None


async def export(request: web.Request) -> web.StreamResponse:
    """``GET /api/games/export``: the module's docstring says what."""
    compress = request.query.get("compress")
    if compress not in (None, "", "gzip"):
        raise ApiError(400, "unknown_compression", f"compress is gzip (or left out), not {compress!r}")
    which = await game_filter(request)
    limit = export_limit(request)
    arena = request.app[ARENA]
    await arena.manager.recorder.settle()
    # Counted as the request comes: every game stored as over by then ended before it, so the
    # count needs no bound on the end (which would have the index's count read every row).
    total = await arena.storage.count_games(msgspec.structs.replace(which, ended_by=None))
    start: tuple[str, str] | None = None
    if limit is not None and limit < total:
        start = await arena.storage.export_start(which, limit)
        total = limit
    left = total  # the count is kept to (a game another node stored late could still join the tail)

    async def pages() -> AsyncIterator[list[ExportedGame]]:
        nonlocal left
        after = start
        while True:
            rows = await page_of(request, arena.storage.export_games, which, after, EXPORT_PAGE)
            if limit is not None:
                rows = rows[:left]
                left -= len(rows)
            held = await holds.holds_of(arena.storage, rows)
            yield [exported(r, held.get(r.game_id)) for r in rows]
            if len(rows) < EXPORT_PAGE or (limit is not None and left == 0):
                return
            after = (rows[-1].started, rows[-1].game_id)

    return await stream_json_lines(request, pages(), gzip_file="games.jsonl.gz" if compress else None,
                                   headers={"X-Game-Count": str(total)})


def setup(app: web.Application) -> None:
    app.router.add_get("/api/games/export", takes(export, "bot", "kind", "status", "since", "until", "compress", "limit"))
