"""Tournaments over HTTP (PROTOCOL.md §21).

Everyone may read: ``GET /api/tournaments``, ``GET /api/tournaments/{id}``,
``…/results`` (JSON, or CSV with ``?format=csv``), ``…/records`` (JSON Lines) and ``…/games``
(every game of it, in schedule order, for the page's list and its replays). The organizer,
with the admin token, creates one (``POST /api/tournaments``) and moves it through its states
(``…/start``, ``…/pause``, ``…/resume``, ``…/cancel``). A control is a conditional update of the
stored row (two racing requests: one wins, the other gets ``409``); the director follows the
stored state, on this node or on the cluster's leader.
"""

from __future__ import annotations

import csv
import io
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import msgspec
from aiohttp import web

from protocol.messages import RecordHold
from protocol.tournaments import TournamentDefinition

from ..arena import ARENA, Arena
from ..common.clock import utc_now
from ..common.ids import new_id
from ..games import holds
from ..games.summary import game_summary
from ..storage import TournamentRow
from ..tournaments.results import Tally
from ..tournaments.schedule import DefinitionError, check, initial_schedule
from ..tournaments.view import (
    OVER,
    TournamentGame,
    tournament_game,
    tournament_info,
    tournament_results,
    tournament_view,
)
from .api import (
    INT64_MAX,
    ApiError,
    _before,
    _limit,
    json_response,
    next_link,
    query_int,
    read_body,
    require_admin,
    revalidated_json,
    takes,
)
from .json_lines import page_of, stream_json_lines

log = logging.getLogger(__name__)

FORMATS = ("round_robin", "gauntlet", "swiss")
RECORDS_PAGE = 200
"""Games read from storage at a time while ``…/records`` streams."""

TRANSITIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "start": (("created",), "running"),
    "pause": (("running",), "paused"),
    "resume": (("paused",), "running"),
    "cancel": (("created", "running", "paused"), "cancelled"),
}
"""Control -> (the states it applies to, the state it leads to)."""


async def create(request: web.Request) -> web.Response:
    """``POST /api/tournaments`` (admin): check the definition, fix its seed and clock, store it
    with its schedule. Nothing is stored if anything is wrong."""
    arena = request.app[ARENA]
    require_admin(request, arena)
    raw = await read_body(request, dict[str, Any])
    if "format" in raw and raw["format"] not in FORMATS:
        raise ApiError(400, "unknown_format", f"format is one of {', '.join(FORMATS)}, not {raw['format']!r}")
    try:
        d = msgspec.convert(raw, TournamentDefinition)
    except msgspec.ValidationError as e:
        raise ApiError(400, "invalid_request", str(e)) from None
    try:
        check(d)
    except DefinitionError as e:
        raise ApiError(400, e.code, e.message) from None
    names = {}
    for name in d.participants:
        bot = await arena.storage.bot_by_name(name)
        if bot is None:
            raise ApiError(400, "unknown_bot", f"no bot named {name!r}")
        names[name.lower()] = bot.name
    d = msgspec.structs.replace(
        d,
        participants=[names[p.lower()] for p in d.participants],
        bot_under_test=names[d.bot_under_test.lower()] if d.bot_under_test else None,
        decision_ms=d.decision_ms or arena.settings.decision_ms,
        seed=d.seed if d.seed is not None else secrets.randbits(63),  # the secret that fixes every deal
    )
    row = TournamentRow(tournament_id=new_id(6), name=d.name, definition=msgspec.to_builtins(d),
                        state="created", created=utc_now(), schedule=initial_schedule(d))
    await arena.storage.create_tournament(row)
    log.info("tournament %s created: %s, %s, %d bots", row.tournament_id, d.name, d.format, len(d.participants))
    return json_response(tournament_info(row, arena.tournaments.tallies.of(row, []), 0), 201)


def control(op: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The handler of one of the organizer's controls."""
    allowed, target = TRANSITIONS[op]

    async def handler(request: web.Request) -> web.Response:
        arena = request.app[ARENA]
        require_admin(request, arena)
        row = await _tournament(arena, request.match_info["tournament_id"])
        if row.state not in allowed:
            raise ApiError(409, "wrong_state", f"tournament {row.tournament_id} is {row.state}: it cannot {op}")
        now = utc_now()
        new = msgspec.structs.replace(
            row, state=target,
            started=now if op == "start" else row.started,
            ended=now if target == "cancelled" else row.ended,
        )
        if not await arena.storage.set_tournament_state(new, row.state):
            raise ApiError(409, "wrong_state", f"tournament {row.tournament_id} changed meanwhile: try again")
        log.info("tournament %s: %s", row.tournament_id, target)
        arena.tournaments.wake(stored=True)
        row = await _tournament(arena, row.tournament_id)  # with a round the director paired meanwhile
        tally, running = await _tally_and_running(arena, row)
        # Cancelled: its running games are being aborted (the director does it as it wakes).
        return json_response(tournament_info(row, tally, 0 if target == "cancelled" else len(running)))

    return handler


async def _tournament(arena: Arena, tournament_id: str) -> TournamentRow:
    row = await arena.storage.get_tournament(tournament_id)
    if row is None:
        raise ApiError(404, "unknown_tournament", f"no tournament {tournament_id!r}")
    return row


def _kept(arena: Arena, row: TournamentRow) -> tuple[Tally, list[Any]] | None:
    """``row``'s results and running games without a read of its games, where this node has
    them: a tournament over (kept since its last read), or one its director runs on a single
    node (each slot's finished game is handed to it as its game ends, in the same step that
    takes the game from its running ones). A big round robin has thousands of games, and every
    page load asks."""
    final = arena.tournaments.tallies.final(row)
    if final is not None:
        return final, []
    run = arena.tournaments.runs.get(row.tournament_id)
    if run is None or arena.cluster is not None or row.state in OVER:
        return None  # one just over is read from storage once more; its tally is final from then on
    return arena.tournaments.tallies.of(row, run.games.values()), arena.tournaments.running(run)


async def _tally(arena: Arena, row: TournamentRow) -> Tally:
    """``row``'s results as this node or storage has them now."""
    kept = _kept(arena, row)
    if kept is not None:
        return kept[0]
    await arena.manager.recorder.settle()
    return arena.tournaments.tallies.of(row, await arena.storage.tournament_games(row.tournament_id))


def _running(arena: Arena, tournament_id: str) -> list[Any]:
    return [g for g in arena.manager.running_summaries() if g.tournament_id == tournament_id]


async def _tally_and_running(arena: Arena, row: TournamentRow) -> tuple[Tally, list[Any]]:
    """The tournament's results, and its running games. The running ones are taken first: a
    game is stored over before it is announced over, so one that ends while storage is read is
    in one or the other, never in neither; one in both counts as over."""
    kept = _kept(arena, row)
    if kept is not None:
        return kept
    running = _running(arena, row.tournament_id)
    await arena.manager.recorder.settle()
    games = await arena.storage.tournament_games(row.tournament_id)
    over = {g.game_id for g in games if g.status != "running"}
    return arena.tournaments.tallies.of(row, games), [g for g in running if g.game_id not in over]


async def list_all(request: web.Request) -> web.Response:
    """``GET /api/tournaments?limit=50&before=CURSOR``: newest first, with their progress, a
    page at a time; a full page links to the next (``Link``)."""
    arena = request.app[ARENA]
    limit = _limit(request)
    rows = await arena.storage.list_tournaments(before=_before(request), limit=limit)
    out = []
    for row in rows:  # the page's list asks every 5 s: a tournament over is counted once
        counts = arena.tournaments.tallies.final_counts(row)
        if counts is not None:
            out.append(tournament_info(row, counts, 0))
        else:
            tally, running = await _tally_and_running(arena, row)
            out.append(tournament_info(row, tally, len(running)))
    link = next_link(request, before=f"{rows[-1].created}~{rows[-1].tournament_id}") if len(rows) == limit else None
    return revalidated_json(request, out, link)


async def get_one(request: web.Request) -> web.Response:
    """``GET /api/tournaments/{id}``: state, progress, running games, who is waited for, the
    ranking and the crosstable so far."""
    arena = request.app[ARENA]
    row = await _tournament(arena, request.match_info["tournament_id"])
    await arena.manager.hear_out()  # in a cluster, the running games' plies as their hosts have them now
    tally, running = await _tally_and_running(arena, row)
    return json_response(tournament_view(row, tally, running, arena.tournaments.waiting(row.tournament_id)))


async def get_games(request: web.Request) -> web.Response:
    """``GET /api/tournaments/{id}/games?after_slot=N&limit=50``: every game of the tournament
    (running, finished, forfeited or aborted), in schedule order (by slot, then start: a game
    cut off by a restart before its slot's replay), running ones as they stand; a page holds
    whole slots, and a full one links to the next (``Link``)."""
    arena = request.app[ARENA]
    row = await _tournament(arena, request.match_info["tournament_id"])
    limit = _limit(request)
    after = query_int(request, "after_slot", -1, -1, INT64_MAX)  # the default: from the first slot
    await arena.manager.recorder.settle()
    want, full = limit, False
    while True:  # a page ends where a slot ends: a slot the limit cuts is left to the next page
        rows = await arena.storage.tournament_games(row.tournament_id, after_slot=after, limit=want + 1)
        if len(rows) <= want:
            break
        cut = rows[want - 1].slot
        kept = rows[:want] if rows[want].slot != cut else [r for r in rows[:want] if r.slot != cut]
        if kept:
            rows, full = kept, True
            break
        want *= 2  # one slot fills the page (a game cut off again and again): read all of it
    await arena.manager.hear_out()
    elsewhere = {g.game_id: g for g in _running(arena, row.tournament_id)}
    games: list[TournamentGame] = []
    for r in rows:
        summary = game_summary(r)
        if r.status == "running":  # the stored row says ply 0: the game as it stands instead
            room = arena.manager.lookup(r.game_id)
            summary = game_summary(room.to_row(record=False)) if room is not None else elsewhere.get(r.game_id, summary)
        games.append(tournament_game(row, summary, r.slot or 0))
    headers = None
    if full:
        headers = next_link(request, after_slot=str(games[-1].slot))
    return json_response(games, headers=headers)


CSV_COLUMNS = ("rank", "bot", "rating", "low", "high", "score", "games", "wins", "draws", "losses", "forfeits",
               "stronger_than_next")


async def get_results(request: web.Request) -> web.StreamResponse:
    """``GET /api/tournaments/{id}/results[?format=csv]``."""
    arena = request.app[ARENA]
    fmt = request.query.get("format", "json")
    if fmt not in ("json", "csv"):
        raise ApiError(400, "invalid_request", "format is json or csv")
    row = await _tournament(arena, request.match_info["tournament_id"])
    results = tournament_results(row, await _tally(arena, row))
    if fmt == "json":
        return json_response(results)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for line in results.ranking:
        values = msgspec.to_builtins(line)
        writer.writerow(["" if values[c] is None else values[c] for c in CSV_COLUMNS])
    return web.Response(text=out.getvalue(), content_type="text/csv",
                        headers={"Content-Disposition": f'inline; filename="{row.tournament_id}-results.csv"'})


class RecordLine(msgspec.Struct):
    """One line of ``…/records``."""

    game_id: str
    players: list[str]
    result: dict[str, Any] | None
    record: dict[str, Any] | None
    slot: int | None
    started: str
    ended: str | None
    record_held: RecordHold | None
    """Why ``record`` is only its public part (no deck, no reshuffles) while the other slot of
    its deal is to be played (``server/games/holds.py``); ``null`` when it is not held."""


async def get_records(request: web.Request) -> web.StreamResponse:
    """``GET /api/tournaments/{id}/records``: JSON Lines, one counted game a line (a slot's
    finished game), in slot order, read and sent a page at a time."""
    arena = request.app[ARENA]
    row = await _tournament(arena, request.match_info["tournament_id"])
    await arena.manager.recorder.settle()

    async def pages() -> AsyncIterator[list[RecordLine]]:
        after = -1
        while True:
            page = await page_of(request, arena.storage.tournament_games, row.tournament_id, records=True,
                                 finished=True, after_slot=after, limit=RECORDS_PAGE)
            held = await holds.holds_of(arena.storage, page)
            yield [RecordLine(g.game_id, g.players, g.result,
                              holds.public_part(g.record) if g.game_id in held and g.record is not None else g.record,
                              g.slot, g.started, g.ended, held.get(g.game_id)) for g in page]
            if len(page) < RECORDS_PAGE:
                return
            after = page[-1].slot or 0

    return await stream_json_lines(request, pages())


def setup(app: web.Application) -> None:
    app.router.add_post("/api/tournaments", takes(create, body=True))
    app.router.add_get("/api/tournaments", takes(list_all, "limit", "before"))
    app.router.add_get("/api/tournaments/{tournament_id}", takes(get_one))
    app.router.add_get("/api/tournaments/{tournament_id}/results", takes(get_results, "format"))
    app.router.add_get("/api/tournaments/{tournament_id}/records", takes(get_records))
    app.router.add_get("/api/tournaments/{tournament_id}/games", takes(get_games, "limit", "after_slot"))
    for op in TRANSITIONS:
        app.router.add_post(f"/api/tournaments/{{tournament_id}}/{op}", takes(control(op)))
