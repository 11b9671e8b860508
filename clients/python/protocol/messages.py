"""Every WebSocket message of the Mandala Arena protocol, as msgspec structs.

These types are the single source of truth: the server encodes and decodes
with them, the Python client uses them, and ``protocol/schema/`` is generated
from them (``make schema``). Every message is a JSON object whose ``type``
names it. PROTOCOL.md explains each one with an example.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from mandala.moves import Move
from mandala.record import PlayedMove, Record
from mandala.views import Seat, View

PROTOCOL_VERSION = 1
"""Bumped on any change a conforming bot could notice; the server speaks only this one."""

GameId = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
REQUEST_ID_MAX = 2**53 - 1
RequestId = Annotated[int, msgspec.Meta(ge=0, le=REQUEST_ID_MAX)]
"""A decision's ``request_id`` as a bot sends it back: what every JSON reader holds exactly
(JavaScript's numbers, a 64-bit integer), so the error that may echo it decodes everywhere."""
BotName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_.-]{2,32}$")]
"""2 to 32 letters, digits, ``_``, ``.`` or ``-``. Python's ``$`` also matches before a last
newline, so ``"alice\n"`` passes this pattern here (ECMAScript's ``$``, a JSON Schema reader's,
does not): the server checks a new bot's whole name itself (``server/http/api.py``), and a name
read back from storage, from before it did, still decodes."""

_MSG = dict(tag_field="type", forbid_unknown_fields=True, omit_defaults=False)
"""A bot's messages: the server refuses a field it does not define (``invalid_message``)."""
_TOLERANT = dict(tag_field="type", omit_defaults=False)
"""The server's messages: a client reads them tolerantly, ignoring a field it does not know
(PROTOCOL.md §3), so a field added to one does not break the clients of this version."""

# --------------------------------------------------------------------------- bot -> server


class Hello(msgspec.Struct, tag="hello", **_MSG):
    """First message on every connection. With ``token`` the connection plays as that bot;
    without, it is a spectator that may only ``watch``."""

    protocol: int
    token: str | None = None
    max_games: Annotated[int, msgspec.Meta(ge=1, le=64)] = 1
    """How many games this bot plays at once on this connection."""
    client: Annotated[str, msgspec.Meta(max_length=100)] | None = None
    """Free text naming the bot's software, for logs."""


class PlayMove(msgspec.Struct, tag="move", **_MSG):
    """Answer to a ``decision``: one of its legal moves, in R22 notation."""

    game_id: GameId
    request_id: RequestId
    move: Move


class Challenge(msgspec.Struct, tag="challenge", **_MSG):
    """Ask another connected bot for an (unrated) game."""

    opponent: BotName


class Accept(msgspec.Struct, tag="accept", **_MSG):
    challenge_id: str


class Decline(msgspec.Struct, tag="decline", **_MSG):
    challenge_id: str


class Resign(msgspec.Struct, tag="resign", **_MSG):
    game_id: GameId


class SetCapacity(msgspec.Struct, tag="capacity", **_MSG):
    """Change how many games this connection plays at once."""

    max_games: Annotated[int, msgspec.Meta(ge=1, le=64)]


class Watch(msgspec.Struct, tag="watch", **_MSG):
    """Follow a running game as a spectator."""

    game_id: GameId


class Unwatch(msgspec.Struct, tag="unwatch", **_MSG):
    game_id: GameId


class Seek(msgspec.Struct, tag="seek", **_MSG):
    """Join the ladder: the server pairs this bot with other seeking bots for rated games,
    as many at once as the connection's free ``max_games`` allow, until ``unseek`` or the
    connection closes. A bot new to the ladder first plays its qualification games."""


class Unseek(msgspec.Struct, tag="unseek", **_MSG):
    """Leave the ladder: no new ladder games are started; running ones (and the return game
    of a duplicate pair whose first game is running) are played out."""


class Ping(msgspec.Struct, tag="ping", **_MSG):
    """Application-level ping; the server answers ``pong`` with the same ``data``."""

    data: Annotated[str, msgspec.Meta(max_length=64)] | None = None


ClientMessage = (
    Hello | PlayMove | Challenge | Accept | Decline | Resign | SetCapacity | Seek | Unseek | Watch | Unwatch | Ping
)
CLIENT_TYPES: frozenset[str] = frozenset(
    cls.__struct_config__.tag for cls in ClientMessage.__args__
)

# --------------------------------------------------------------------------- server -> bot


class Limits(msgspec.Struct):
    """The limits this server enforces (see PROTOCOL.md, Limits)."""

    decision_ms: int
    max_frame_bytes: int
    messages_per_second: float
    burst: int
    max_games: int
    heartbeat_s: float


class Welcome(msgspec.Struct, tag="welcome", **_TOLERANT):
    """Answer to ``hello``. ``bot`` is ``None`` for a spectator. ``games`` lists the bot's
    running games; each is resumed with ``game_start``, ``update`` and any pending ``decision``."""

    protocol: int
    bot: str | None
    limits: Limits
    games: list[str]


class Challenged(msgspec.Struct, tag="challenged", **_TOLERANT):
    """Another bot challenges you: answer ``accept`` or ``decline`` before ``expires_ms``."""

    challenge_id: str
    challenger: str
    expires_ms: int


class ChallengeSent(msgspec.Struct, tag="challenge_sent", **_TOLERANT):
    """Your challenge was delivered to ``opponent``."""

    challenge_id: str
    opponent: str
    expires_ms: int


class ChallengeDeclined(msgspec.Struct, tag="challenge_declined", **_TOLERANT):
    """A challenge will not become a game: declined, expired, or its bot left."""

    challenge_id: str
    reason: Literal["declined", "expired", "offline", "busy", "storage_unavailable"]
    """``storage_unavailable``: it was accepted while the server could not record games
    (PROTOCOL.md §19); challenge again after the ``retry_after`` the accepting bot was told."""


class Player(msgspec.Struct):
    name: str
    seat: Seat


GameKind = Literal["challenge", "ladder", "qualification", "admin", "tournament"]
"""Why a game was started: an accepted challenge, the ladder's pairing, a ladder
qualification game against a house bot, the organizer's API, or a tournament's schedule."""


class GameStart(msgspec.Struct, tag="game_start", **_TOLERANT):
    """A game you play begins (or resumes, after a reconnect)."""

    game_id: str
    seat: Seat
    players: list[Player]
    first_player: Seat
    decision_ms: int
    rated: bool
    resumed: bool = False
    kind: GameKind = "challenge"
    pair_id: str | None = None
    """For ladder games: the duplicate pair this game belongs to. Both games of a pair are
    dealt the same deck and reshuffle seed with the seats swapped."""
    tournament_id: str | None = None
    """For tournament games: the tournament (PROTOCOL.md §21)."""
    challenge_id: str | None = None
    """For a challenge's game: the challenge accepted (``null`` once another node of a cluster
    took the game over, which does not know it)."""


class Decision(msgspec.Struct, tag="decision", **_TOLERANT):
    """Your decision: answer with ``move`` carrying one of ``legal`` and this ``request_id``
    within ``deadline_ms`` milliseconds, or lose the game on time."""

    game_id: str
    request_id: int
    """The ply this decision is for (moves played so far in the game)."""
    seat: Seat
    view: View
    legal: list[Move]
    deadline_ms: int
    """Milliseconds left on this decision's clock when the server sent it."""


class MoveAccepted(msgspec.Struct, tag="move_accepted", **_TOLERANT):
    """Your move was applied. ``elapsed_ms`` is the time the server's clock counted."""

    game_id: str
    request_id: int
    elapsed_ms: float


class Update(msgspec.Struct, tag="update", **_TOLERANT):
    """The game after a move (``move`` is ``None`` for the first update of a game, a watch
    or a resume): sent to both seats, each with its own view, and to spectators."""

    game_id: str
    ply: int
    move: PlayedMove | None
    view: View


class OpponentAway(msgspec.Struct, tag="opponent_away", **_TOLERANT):
    """The bot in ``seat`` lost its connection. ``grace_ms`` is how long it has to come back
    before it loses on time (``None`` if no decision of its is pending: it then has until
    its next decision's deadline)."""

    game_id: str
    seat: Seat
    grace_ms: int | None


class OpponentBack(msgspec.Struct, tag="opponent_back", **_TOLERANT):
    game_id: str
    seat: Seat


EndReason = Literal["river", "deck", "no_moves", "turn_limit", "timeout", "resign", "aborted", "forfeit"]


class GameResult(msgspec.Struct):
    """How a game ended. The first four reasons are the rules' (R17–R19); ``timeout`` and
    ``resign`` make ``winner`` the other seat; ``aborted`` games have no winner and are unrated.
    ``forfeit`` is a tournament game not played because a bot was away (``winner`` is the
    other seat; no winner if both were): it is stored, never sent to a bot."""

    winner: Seat | None
    end_reason: EndReason
    scores: list[int]
    cup_sizes: list[int]


class RecordHold(msgspec.Struct, kw_only=True):
    """Why a game that is over has no public deal yet: another game on the same deal (deck
    order, first player, reshuffles) is still to be played or running, and the record would
    tell its hidden cards. A ladder or qualification pair's first game waits for its return
    game (``pair_id``); a tournament game waits for the slots on its deal (``tournament_id``,
    ``slot``: the first of them not over). Once that game is over, or will never be played,
    the record is public (``GET /api/games/{id}/record``)."""

    pair_id: str | None = None
    """The duplicate pair whose return game is still to come or running."""
    tournament_id: str | None = None
    """The tournament whose ``slot`` on the same deal is still to be played or running."""
    slot: int | None = None
    game_id: str | None = None
    """The game on the same deal running now; ``null`` while it waits to start."""


class GameOver(msgspec.Struct, tag="game_over", **_TOLERANT):
    """The game ended. ``record`` is its whole record (R23), or while it is held its public
    part: its first player and moves, with ``deck`` and ``reshuffles`` empty (a client of
    before held records reads it still); then ``record_held`` says which game on the same deal
    it waits for."""

    game_id: str
    result: GameResult
    record: Record
    record_held: RecordHold | None = None


ErrorCode = Literal[
    "bad_json",
    "not_object",
    "unknown_type",
    "invalid_message",
    "binary_frame",
    "frame_too_large",
    "unsupported_version",
    "not_authenticated",
    "already_authenticated",
    "bad_token",
    "tls_required",
    "spectator",
    "unknown_game",
    "not_your_game",
    "not_your_turn",
    "stale_request",
    "illegal_move",
    "game_over",
    "unknown_bot",
    "bot_offline",
    "challenge_self",
    "unknown_challenge",
    "rate_limited",
    "removed",
    "storage_unavailable",
    "cluster_unavailable",
    "flood",
    "internal_error",
]


class Error(msgspec.Struct, tag="error", **_TOLERANT):
    """Something the bot sent was refused; nothing changed. ``code`` is stable."""

    code: ErrorCode
    message: str
    game_id: str | None = None
    request_id: int | None = None
    rule: str | None = None
    """For ``illegal_move``: the rule the move breaks (``R9``, …)."""
    limit: str | None = None
    """For ``rate_limited``: which limit was hit."""
    retry_after: float | None = None
    """For ``rate_limited`` and ``storage_unavailable``: seconds to wait before trying again."""


class Pong(msgspec.Struct, tag="pong", **_TOLERANT):
    data: str | None = None


LadderState = Literal["qualifying", "listed", "failed", "removed"]


class LadderStatus(msgspec.Struct, tag="ladder", **_TOLERANT):
    """Where this bot stands on the ladder: sent in answer to ``seek`` and ``unseek``, and
    whenever it changes (qualification passed or failed, ladder paused or resumed, bot
    removed by the organizer)."""

    seeking: bool
    state: LadderState
    """``qualifying``: plays qualification games before it is listed; ``listed``: in the
    standings and paired for rated games; ``failed``: broke the protocol or timed out in
    qualification, and qualifies again at its next ``seek``; ``removed``: taken off the
    ladder by the organizer (``seek`` is refused)."""
    paused: bool
    """The organizer paused the ladder: no new ladder games start until it resumes."""
    qualification_left: int
    """Qualification games still to play (0 once listed)."""
    message: str


ServerMessage = (
    Welcome | Challenged | ChallengeSent | ChallengeDeclined | GameStart | Decision | MoveAccepted
    | Update | OpponentAway | OpponentBack | GameOver | Error | Pong | LadderStatus
)

# WebSocket close codes the server uses (PROTOCOL.md, Closing).
CLOSE_BAD_TOKEN = 4001
CLOSE_UNSUPPORTED_VERSION = 4002
CLOSE_HELLO_TIMEOUT = 4003
CLOSE_FLOOD = 4008
CLOSE_REPLACED = 4009
CLOSE_GAME_HOST_LOST = 4010
CLOSE_TOKEN_RETIRED = 4011
"""The token this connection said hello with was rotated or revoked (``POST`` or ``DELETE
/api/bots/{name}/token``): reconnect only with the new one."""
CLOSE_TRY_AGAIN_LATER = 1013
"""A ``hello`` the server could not check because its storage fails (RFC 6455's "try again
later"), after an ``error`` ``storage_unavailable``: connect again after its ``retry_after``."""
CLOSE_TLS_REQUIRED = 4012
"""A ``hello`` with a token on a connection that did not arrive by TLS, on a server that
requires it (``require_tls``)."""


# --------------------------------------------------------------------------- /live -> viewers


class Standing(msgspec.Struct, kw_only=True):
    """One bot's line in the ladder's standings. ``rank``, ``rating`` and ``low``–``high``
    are one quantity: the table is ordered by ``rating``, and its interval always contains it.
    ``elo`` is the live Elo beside it, a different number (PROTOCOL.md §18.4)."""

    rank: int
    bot: str
    rating: float
    """Maximum-likelihood Bradley–Terry rating over the ladder's rated games since the last
    ratings reset, on the Elo scale, centred on the listed bots' mean Elo. The table is
    ordered by it."""
    low: float
    high: float
    """The 95% interval of ``rating`` (against the pool's average): ``low <= rating <= high``."""
    elo: float
    """The live Elo, changed after every rated game (it depends on the order of the games)."""
    games: int
    """Rated games of it that finished (and were stored) since the last ratings reset: the
    games ``rating`` and ``elo`` count. Running and aborted games are not counted."""
    wins: int
    draws: int
    losses: int
    provisional: bool
    """Fewer than the provisional number of rated games (Elo's K is larger meanwhile)."""
    connected: bool
    seeking: bool
    opponents: int = 0
    """How many distinct bots it has met in rated games since the last ratings reset."""
    recent_games: int = 0
    """Ladder games paired for it in the last hour, whatever became of them: both games of a
    duplicate pair count from the moment the pair is made (the return game before it starts),
    running and aborted games included, and a ratings reset does not clear it. This is what a
    games-per-hour limit counts; it can exceed ``games``, which counts finished rated games
    only."""


class GameSummary(msgspec.Struct, kw_only=True):
    """A game as lists show it."""

    game_id: str
    players: list[str]
    kind: GameKind
    rated: bool
    pair_id: str | None
    status: Literal["running", "finished", "aborted"]
    started: str
    ended: str | None
    ply: int
    result: GameResult | None
    tournament_id: str | None = None


class LiveStandings(msgspec.Struct, tag="standings", **_TOLERANT):
    """Rows of the standings table: the listed bots ranked ``offset + 1`` to ``offset +
    len(standings)`` of ``total``. Whole, it is the table the ladder computes (and a cluster's
    leader sends the other nodes); ``GET /api/ladder`` answers a page of it, and ``/live``
    sends its top in a fresh start (``protocol.live.LiveTopChanged`` then says what changed
    in that top)."""

    paused: bool
    standings: list[Standing]
    total: int
    """How many bots the whole table lists."""
    offset: int
    """How many rows of the table come before the first of ``standings``."""


class LiveGameStarted(msgspec.Struct, tag="game_started", **_TOLERANT):
    game: GameSummary


class LiveGameEnded(msgspec.Struct, tag="game_ended", **_TOLERANT):
    game: GameSummary


class LiveGames(msgspec.Struct, tag="games", **_TOLERANT):
    """First in a fresh start of ``/live``: running games and the most recent finished ones.
    With ``?games=all`` ``running`` lists every running game as it stands; by default it is
    the sample the stream follows (at most ``protocol.live.RUNNING_SHOWN``), each as it stood
    when the stream first showed it."""

    running: list[GameSummary]
    recent: list[GameSummary]


class LiveHealth(msgspec.Struct, tag="health", **_TOLERANT):
    """Whether the server can record games: on connecting to ``/live`` and whenever it changes.
    While ``degraded`` no new game starts; running games finish and are kept until storage is
    back (PROTOCOL.md §19)."""

    status: Literal["ok", "degraded"]
    storage: str | None
    """Why storage is failing (``None`` when ``ok``)."""
    pending: int
    """Finished games waiting to be stored."""

