"""The HTTP JSON API under ``/api/``: bots, games, records.

Every error is JSON ``{"error": {"code", "message"}}`` with a fitting status, including
aiohttp's own 404/405 and any unexpected exception (see :func:`json_errors`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlencode

import msgspec
from aiohttp import web

import mandala
from mandala import RecordError, SetupError
from protocol.messages import BotName, GameSummary

from ..arena import ARENA, Arena
from ..common.clock import utc_now
from ..common.logs import about
from ..common.refusal import Refusal
from ..connections.auth import check_admin, hash_token, new_token
from ..connections.peers import client_address, client_key, token_allowed
from ..games import holds
from ..games.challenges import HOUSE_PLAYS
from ..games.deals import Deal
from ..games.room import GameRoom
from ..games.summary import game_summary
from ..storage import GameRow, GameStatus, NameTaken
from ..storage.packing import UnreadableRecord

log = logging.getLogger(__name__)

_json = msgspec.json.Encoder()

T = TypeVar("T")

REPLAYS_AT_ONCE = 2
"""Stored games replayed at once for HTTP (a replay, a game's last view), each in a worker
thread. A long game's seat replay costs a tenth of a second of CPU: on the event loop, a few
dozen requests at once held every clock of the node for seconds, and bots that answered at
once lost on time. In a thread, the loop takes its turn between the replay's slices of the
interpreter, and the requests past these wait their turn."""
REPLAY_SLOTS = web.AppKey("replay_slots", asyncio.Semaphore)


async def replayed(request: web.Request, work: Callable[..., T], *args: Any) -> T:
    """``work(*args)``, a replay of a stored game (pure, CPU-bound), run in a worker thread,
    at most :data:`REPLAYS_AT_ONCE` at a time: the event loop, which runs the games' clocks,
    is never held for its length."""
    async with request.app[REPLAY_SLOTS]:
        return await asyncio.to_thread(work, *args)


class ApiError(Exception):
    """An HTTP error with a stable code, rendered as JSON by :func:`json_errors`."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}
        self.extra = extra


@contextmanager
def connection_slot(request: web.Request) -> Iterator[None]:
    """Hold one of the WebSocket connections the client's address may have open
    (``connections_per_ip``); past them the upgrade is refused with ``429``
    ``too_many_connections``. A connection that came by TLS to this node holds its count
    already (``server/http/tls.py``), for as long as it is open."""
    if request.transport is not None and request.transport.get_extra_info("ssl_object") is not None:
        yield
        return
    arena = request.app[ARENA]
    address = client_address(request, arena.settings)
    if not arena.addresses.take(address):
        raise ApiError(429, "too_many_connections",
                       f"{client_key(address)} has {arena.addresses.limit} WebSocket connections open, the most one "
                       "address (for IPv6, one /64) may")
    try:
        yield
    finally:
        arena.addresses.give_back(address)


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=_json.encode(data), status=status, content_type="application/json", headers=headers)


def revalidated_json(request: web.Request, data: Any, headers: dict[str, str] | None = None) -> web.Response:
    """``data`` as JSON with an ETag of its bytes and ``Cache-Control: no-cache`` (beside
    ``headers``): a client that asks again with ``If-None-Match`` (a browser does by itself)
    gets ``304`` and no body while nothing changed. For what a page polls (the list of
    tournaments, every 5 s)."""
    body = _json.encode(data)
    tag = hashlib.blake2b(body, digest_size=12).hexdigest()
    headers = {**(headers or {}), "ETag": f'"{tag}"', "Cache-Control": "no-cache"}
    if any(e.value in (tag, "*") for e in request.if_none_match or ()):
        return web.Response(status=304, headers=headers)
    return web.Response(body=body, content_type="application/json", headers=headers)


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None, **extra: Any) -> web.Response:
    return json_response({"error": {"code": code, "message": message, **extra}}, status, headers)


@web.middleware
async def json_errors(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """Turn :class:`ApiError`, aiohttp's HTTP errors and crashes into JSON error bodies."""
    try:
        return await handler(request)
    except ApiError as e:
        return error_response(e.status, e.code, e.message, e.headers, **e.extra)
    except web.HTTPException as e:
        if e.status < 400:
            raise
        code = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(e.status, "http_error")
        headers = {k: v for k, v in e.headers.items() if k.lower() == "allow"}
        return error_response(e.status, code, e.reason, headers)
    except UnreadableRecord as e:
        log.error("%s %s: %s", request.method, request.path, e)
        return error_response(500, "unreadable_record", str(e), game_id=e.game_id)
    except Refusal as r:
        if r.code == "storage_unavailable":
            return unavailable(r.message, r.retry_after)
        return error_response(503 if r.code == "cluster_unavailable" else 400, r.code, r.message)
    except Exception as e:
        recorder = request.app[ARENA].manager.recorder
        if recorder.failing is not None:
            recorder.faults.note(f"answering {request.method} {request.path}", e)
            return unavailable(f"storage is failing ({recorder.failing}): try again later", recorder.retry_after)
        log.exception("%s %s failed", request.method, request.path)
        return error_response(500, "internal_error", "the server failed on this request (logged)")


def unavailable(message: str, retry_after: float | None) -> web.Response:
    """503 ``storage_unavailable``: the server cannot record (or read) games right now."""
    wait = retry_after or 1.0
    return error_response(503, "storage_unavailable", message, {"Retry-After": str(math.ceil(wait))},
                          retry_after=wait)


# ------------------------------------------------------------------ request bodies


class CreateBot(msgspec.Struct, forbid_unknown_fields=True):
    name: BotName


class CreateGame(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    players: Annotated[list[BotName], msgspec.Meta(min_length=2, max_length=2)]
    first_player: Literal[0, 1] = 0
    deck: list[str] | None = None
    reshuffle_seed: int | None = None
    reshuffles: Annotated[list[list[str]], msgspec.Meta(max_length=100)] | None = None
    rated: bool = False


def why_not_json(data: str | bytes, error: Exception) -> str:
    """What is wrong with ``data``, which msgspec refused with ``error``. A string with a lone
    surrogate escape (``"\\ud800"`` without its pair) is valid JSON syntax but no text, and
    msgspec calls it "Input data was truncated"; Python's own parser, which accepts it, tells
    the two apart (tried only on this error path). That parser also takes ``NaN``,
    ``Infinity`` and numbers past a float's range, which msgspec names rightly: only a
    surrogate actually found in what it read is blamed."""
    try:
        value = json.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
    except (ValueError, RecursionError):
        return str(error)
    if not _holds_lone_surrogate(value):
        return str(error)
    return "a string holds a lone surrogate escape (\\ud800 to \\udfff without its pair), which is no text"


def _holds_lone_surrogate(value: Any) -> bool:
    """Whether a key or a string anywhere in ``value`` (parsed JSON) holds a surrogate code point."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= c <= "\udfff" for c in item):
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


async def read_body(request: web.Request, tp: type[Any]) -> Any:
    body = await request.read()
    try:
        return msgspec.json.decode(body, type=tp)
    except msgspec.ValidationError as e:
        raise ApiError(400, "invalid_request", str(e)) from None
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError) as e:
        raise ApiError(400, "bad_json", f"the body is not JSON: {why_not_json(body, e)}") from None


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
H = TypeVar("H", bound=Handler)


@dataclass(frozen=True)
class Takes:
    """What an endpoint takes: its query parameters, and whether it reads a body."""

    query: tuple[str, ...]
    body: bool


class NoBody(msgspec.Struct, forbid_unknown_fields=True):
    """What an endpoint that reads no body accepts: nothing, or ``{}``."""


def takes(handler: H, *query: str, body: bool = False) -> H:
    """``handler``, marked with the query parameters it takes and whether it reads a body, for
    :func:`strict_requests`. Every endpoint under ``/api/`` is registered through it."""
    handler.takes = Takes(query, body)  # type: ignore[attr-defined]
    return handler


def declared(handler: object) -> Takes | None:
    """What ``handler`` was registered as taking (``None``: not through :func:`takes`)."""
    said = getattr(handler, "takes", None)
    return said if isinstance(said, Takes) else None


@web.middleware
async def strict_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse, before an ``/api/`` endpoint runs, what it does not take (typed ``400
    invalid_request``): an unknown query parameter (a misspelt ``?bott=`` or ``?fromat=csv``
    would otherwise be answered as if nothing were asked: the top of the table, JSON), and a
    body with fields sent to an endpoint that reads none (``{"bot": "x"}`` to
    ``/api/ladder/pause`` would otherwise pause the whole ladder). So every endpoint treats
    what it does not know as the JSON bodies of those that read one do. A token sent without TLS
    where TLS is required is told so first: that is what its sender most needs to hear."""
    info = request.match_info
    said = declared(info.route.handler) if info.http_exception is None else None
    if said is not None:
        unknown = sorted(set(request.query) - set(said.query))
        fields = not said.body and request.method != "GET" and request.body_exists and bool((await request.read()).strip())
        if (unknown or fields) and "Authorization" in request.headers:
            require_tls(request, request.app[ARENA])
        if unknown:
            known = f"known: {', '.join(said.query)}" if said.query else "this endpoint takes none"
            raise ApiError(400, "invalid_request", f"unknown query parameter(s): {', '.join(unknown)}; {known}")
        if fields:
            await read_body(request, NoBody)
    return await handler(request)


def require_tls(request: web.Request, arena: Arena) -> None:
    """Under ``require_tls``, refuse a request that carries or would be answered with a token
    but did not come by TLS (from anywhere but loopback): 403 ``tls_required``."""
    if not token_allowed(request, arena.settings):
        log.warning("%s %s from %s without TLS refused (require_tls)", request.method, request.path,
                    client_address(request, arena.settings))
        raise ApiError(403, "tls_required", "this server takes and gives tokens only by TLS: use https://")


def require_admin(request: web.Request, arena: Arena) -> None:
    require_tls(request, arena)
    check = check_admin(request.headers.get("Authorization"), arena.admin_token)
    if check == "missing":
        raise ApiError(401, "unauthorized", "this needs the admin token: Authorization: Bearer <token>",
                       {"WWW-Authenticate": "Bearer"})
    if check == "wrong":
        raise ApiError(403, "forbidden", "wrong admin token")


# ------------------------------------------------------------------ bots


async def create_bot(request: web.Request) -> web.Response:
    """``POST /api/bots``: register a bot; its token is in this answer and nowhere else."""
    arena = request.app[ARENA]
    require_tls(request, arena)
    counted: str | None = None  # the address whose allowance this registration is counted against
    if arena.settings.registration == "admin" or request.headers.get("Authorization"):
        require_admin(request, arena)
    else:
        counted = client_key(client_address(request, arena.settings))
        retry = arena.registrations.hit(counted, asyncio.get_running_loop().time())
        if retry is not None:
            seconds = max(1, math.ceil(retry))
            raise ApiError(429, "rate_limited",
                           f"at most {arena.settings.registrations_per_hour} bots an hour from one address "
                           "(for IPv6, one /64)",
                           {"Retry-After": str(seconds)}, retry_after=seconds)
    try:
        body: CreateBot = await read_body(request, CreateBot)
        if not BOT_NAME.fullmatch(body.name):  # the type's pattern lets a newline after the name pass
            raise ApiError(400, "invalid_request", f"a name is 2 to 32 letters, digits, _, . or -, and nothing "
                                                   f"else, not {body.name!r}")
        if body.name == "..":  # /api/bots/.. is the folder above in every browser's and client's URL
            raise ApiError(400, "invalid_request", "a name is not '..': in a URL it names the folder above")
        token = new_token()
        try:
            row = await arena.storage.create_bot(body.name, hash_token(token), utc_now(), arena.settings.elo_initial)
        except NameTaken:
            raise ApiError(409, "name_taken", f"a bot named {body.name!r} exists already (names ignore case)") from None
    except BaseException:
        if counted is not None:  # the allowance counts bots created, not requests refused
            arena.registrations.give_back(counted)
        raise
    log.info("bot %s created", row.name, extra=about(bot=row.name))
    return json_response({"name": row.name, "token": token, "created": row.created}, 201)


async def list_bots(request: web.Request) -> web.Response:
    arena = request.app[ARENA]
    rows = await arena.storage.list_bots()
    return json_response([
        {"name": r.name, "created": r.created, "connected": arena.presence.is_connected(r.name),
         "ladder": arena.ladder.state(r.name)}
        for r in rows if r.name != arena.ladder.house.name
    ])


# ------------------------------------------------------------------ games


async def create_game(request: web.Request) -> web.Response:
    """``POST /api/games`` (admin): start a game between two connected bots, optionally from
    an explicit deal (duplicate tournaments, reproducible tests)."""
    arena = request.app[ARENA]
    require_admin(request, arena)
    body: CreateGame = await read_body(request, CreateGame)
    names: list[str] = []
    for name in body.players:
        row = await arena.storage.bot_by_name(name)
        if row is None:
            raise ApiError(404, "unknown_bot", f"no bot named {name!r}")
        names.append(row.name)
    if names[0] == names[1]:
        raise ApiError(400, "invalid_request", "a game needs two different bots")
    for name in names:
        if name == arena.settings.house_bot:
            raise ApiError(409, "bot_offline", f"{name}, the house bot, {HOUSE_PLAYS}, not an organizer's games")
        if not arena.presence.is_connected(name):
            raise ApiError(409, "bot_offline", f"{name} is not connected")
    deal = Deal(deck=body.deck, first_player=body.first_player, reshuffle_seed=body.reshuffle_seed, reshuffles=body.reshuffles)
    try:
        room = arena.manager.start_game((names[0], names[1]), deal, rated=body.rated, kind="admin")
    except SetupError as e:
        raise ApiError(400, "bad_deck", f"{e.rule}: {e.message}", rule=e.rule) from None
    if arena.cluster is not None:
        await arena.cluster.published()  # answered once every node can find it (watch it, list it)
    return json_response({"game_id": room.id}, 201)


INT64_MAX = (1 << 63) - 1
"""The largest integer storage takes: a query's position (``before``, ``after_slot``) above it
is refused as the bad input it is."""


BOT_NAME = re.compile(r"[A-Za-z0-9_.-]{2,32}")
"""A new bot's whole name (``BotName``'s pattern, whose ``$`` in Python also matches before a
last newline: ``"alice\n"`` would pass for ``alice``)."""

_WHOLE = re.compile(r"-?[0-9]{1,19}")
"""A whole number as a query writes it: ASCII digits, a minus sign at most (``int`` would also
take ``" 5"``, ``"5_0"``, ``"+3"`` and other scripts' digits)."""


def query_int(request: web.Request, name: str, default: int, low: int, high: int | None = None) -> int:
    """The whole-number query parameter ``name`` within ``low`` … ``high`` (``default`` when it
    is left out or empty), or a typed ``400 invalid_request``."""
    raw = request.query.get(name, "")
    if raw == "":
        return default
    value = int(raw) if _WHOLE.fullmatch(raw) else low - 1
    if value < low or (high is not None and value > high):
        bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ApiError(400, "invalid_request", f"{name} is a whole number {bounds}, not {raw[:40]!r}")
    return value


def _limit(request: web.Request) -> int:
    return query_int(request, "limit", 50, 1, 500)


CURSOR = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)~([A-Za-z0-9_-]{1,64})")
"""A page's cursor: the time and the id of the last item of the page before (a game's ``started``
and ``game_id``, a tournament's ``created`` and ``tournament_id``)."""


def cursor_of(game: GameSummary) -> str:
    return f"{game.started}~{game.game_id}"


def _before(request: web.Request, name: str = "before") -> tuple[str, str] | None:
    """The cursor in the query parameter ``name``, if given."""
    raw = request.query.get(name)
    if raw is None:
        return None
    m = CURSOR.fullmatch(raw)
    if m is None or not _is_time(m.group(1)):
        raise ApiError(400, "bad_cursor", f"{name} is the cursor a page gave (its Link header), not {raw!r}")
    return m.group(1), m.group(2)


def next_link(request: web.Request, **cursor: str) -> dict[str, str]:
    """The ``Link`` header to the next page: this request's query as it came (a parameter given
    twice stays so, and the first still counts), its cursors replaced by ``cursor``."""
    query = [(k, v) for k, v in request.query.items() if k not in ("before", "running_before", *cursor)]
    return {"Link": f'<{request.url.path}?{urlencode([*query, *cursor.items()])}>; rel="next"'}


def _is_time(iso: str) -> bool:
    try:
        datetime.fromisoformat(iso)
    except ValueError:
        return False
    return True


async def list_games(request: web.Request) -> web.Response:
    """``GET /api/games?status=running|finished|aborted&bot=NAME&limit=50&before=CURSOR``:
    newest first, the running ones first; a full page links to the next one (``Link``): through
    the running games (``running_before``), then through those that are over (``before``)."""
    arena = request.app[ARENA]
    status = request.query.get("status")
    if status not in (None, "running", "finished", "aborted"):
        raise ApiError(400, "invalid_request", "status is running, finished or aborted")
    limit = _limit(request)
    before = _before(request)
    running_before = _before(request, "running_before")
    if before is not None and running_before is not None:
        raise ApiError(400, "invalid_request", "a page is after one cursor: before or running_before, not both")
    bot = request.query.get("bot")
    if bot is not None:
        row = await arena.storage.bot_by_name(bot)
        if row is None:
            raise ApiError(404, "unknown_bot", f"no bot named {bot!r}")
        bot = row.name
    listing_running = status in (None, "running") and before is None

    def running() -> list[GameSummary]:
        return [g for g in arena.manager.running_summaries() if (bot is None or bot in g.players)
                and (running_before is None or (g.started, g.game_id) < running_before)]

    if listing_running:
        await arena.manager.hear_out()
    rows: list[GameRow] = []
    if status != "running" and not (listing_running and len(running()) >= limit):
        rows = await ended_games(arena, status, limit, before, bot)  # type: ignore[arg-type]
    # The running games are taken after the ended ones were read, with no await between them and
    # the page: a game that ended meanwhile is listed once, as over.
    ended = {r.game_id for r in rows}
    games = [g for g in running() if g.game_id not in ended] if listing_running else []
    headers = None
    if len(games) >= limit:  # more running games may follow, then those that are over
        games = games[:limit]
        if status != "running" or len(running()) > limit:
            headers = next_link(request, running_before=cursor_of(games[-1]))
    elif status != "running":
        want = limit - len(games)
        rows = rows[:want]
        games += [game_summary(r) for r in rows]
        if len(rows) == want:
            headers = next_link(request, before=cursor_of(games[-1]))
    return json_response(games, headers=headers)


async def ended_games(arena: Arena, status: GameStatus | None, limit: int, before: tuple[str, str] | None = None,
                      bot: str | None = None) -> list[GameRow]:
    """Games that are over, newest first (then by id, descending), older than ``before``: from
    storage, with the ones announced lately that storage has not taken yet (spooled while it
    fails)."""
    await arena.manager.recorder.settle()
    stored = await arena.storage.list_games(status or "over", limit, before, bot)
    known = {r.game_id for r in stored}
    waiting = [room.to_row(record=False) for room in arena.manager.finished.values()
               if room.id not in known and (status is None or room.status == status)
               and (bot is None or bot in room.players)
               and (before is None or (room.started, room.id) < before)]
    if not waiting:
        return stored
    return sorted(stored + waiting, key=lambda r: (r.started, r.game_id), reverse=True)[:limit]


async def _stored(arena: Arena, game_id: str) -> GameRow:
    await arena.manager.recorder.settle()
    row = await arena.storage.get_game(game_id)
    if row is None:
        raise ApiError(404, "unknown_game", f"no game {game_id!r}")
    return row


async def get_game(request: web.Request) -> web.Response:
    """``GET /api/games/{id}``: status, ply, the spectator view, the result once over, and
    whether its record is held (so a page waiting for the replay need not be refused for it
    every few seconds); a game as it stands, wherever in the cluster it runs."""
    arena = request.app[ARENA]
    game_id = request.match_info["game_id"]
    room: GameRoom | None = arena.manager.lookup(game_id)
    view: Any
    over: GameRow | None = None  # the game's row once it is over: whether its record is held is asked
    if room is not None:
        game, view = room.summary(), room.spectator_view()
        over = room.to_row() if room.over else None
    elif arena.cluster is not None and (elsewhere := await arena.cluster.game_as_it_stands(game_id)) is not None:
        game, view = elsewhere  # from its host, as it stands there
    else:
        row = await _stored(arena, game_id)
        game, view = game_summary(row), None
        if row.record is not None:
            over = row if row.status != "running" else None
            try:
                view = await replayed(request, _last_view, row.record)
            except RecordError:
                log.exception("stored record of %s does not replay", game_id, extra=about(game=game_id))
    hold = await arena.manager.hold_of(over) if over is not None and over.record is not None else None
    return json_response({"game_id": game.game_id, "players": game.players, "status": game.status, "ply": game.ply,
                          "view": view, "result": game.result, "kind": game.kind, "tournament_id": game.tournament_id,
                          "record_held": msgspec.to_builtins(hold) if hold is not None else None})


def _last_view(record: dict[str, Any]) -> mandala.View:
    """The spectator's view where a stored record ends."""
    return mandala.view(mandala.replay(record), None)


async def over_game(arena: Arena, game_id: str) -> GameRow:
    """A game that is over, with its record: in memory if it ended lately, else from storage.
    Refuses a running game (its record is public once it is over, R24), one aborted by a
    server stop (no record was kept), and one whose record is held while another game on its
    deal is still to be played (``server/games/holds.py``)."""
    room = arena.manager.lookup(game_id)
    row = room.to_row() if room is not None else await _stored(arena, game_id)
    if row.status == "running":
        raise ApiError(409, "game_running", f"game {game_id} is running: its record is public once it is over")
    if row.record is None:
        raise ApiError(404, "no_record", f"game {game_id} was aborted by a server stop: no record was kept")
    hold = await arena.manager.hold_of(row)
    if hold is not None:
        raise ApiError(409, "record_held", holds.describe(game_id, hold), record_held=msgspec.to_builtins(hold))
    return row


async def get_record(request: web.Request) -> web.Response:
    """``GET /api/games/{id}/record``: the R23 record, public once the game is over (R24)."""
    row = await over_game(request.app[ARENA], request.match_info["game_id"])
    return json_response(row.record)


def setup(app: web.Application) -> None:
    app[REPLAY_SLOTS] = asyncio.Semaphore(REPLAYS_AT_ONCE)
    app.router.add_post("/api/bots", takes(create_bot, body=True))
    app.router.add_get("/api/bots", takes(list_bots))
    app.router.add_post("/api/games", takes(create_game, body=True))
    app.router.add_get("/api/games", takes(list_games, "status", "bot", "limit", "before", "running_before"))
    app.router.add_get("/api/games/{game_id}", takes(get_game))
    app.router.add_get("/api/games/{game_id}/record", takes(get_record))

