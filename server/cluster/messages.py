"""Every message arena nodes put on Redis, besides presence (``presence.py``).

Frames for bots and spectators travel as the bytes the hosting node encoded (``msgspec.Raw``
inside the envelope's JSON), so a frame is encoded once, on the node that hosts its game, and
the node that holds the connection writes it as it came.
"""

from __future__ import annotations

import msgspec

from protocol.messages import ClientMessage, GameSummary, LiveGameEnded, LiveStandings
from protocol.tournaments import LiveTournament

from ..games.seams import GameSetup
from ..ladder.controls import LadderOp
from .presence import Attached, Detached

NO_VIEW = msgspec.Raw(b"null")


class ToBot(msgspec.Struct, tag="to_bot", frozen=True, omit_defaults=True):
    """A frame for ``bot``, to the node holding its connection. A frame of a game's stream
    (``game_start``, ``update``, ``decision``, ``move_accepted``, ``opponent_away``,
    ``opponent_back``) names its game and the ``epoch`` its sender runs it at: the node drops
    one of an epoch older than it knows (a node paused past its liveness publishes, as it
    wakes, what it had queued, after the game's new host resumed the seat). A ``decision``
    also names its request (the node lets the answer past the rate limit, as for a local
    game); a ``challenged`` names its challenge (an ``accept`` or ``decline`` goes back to the
    sender)."""

    bot: str
    frame: msgspec.Raw
    game_id: str | None = None
    request_id: int | None = None
    challenge_id: str | None = None
    epoch: int | None = None


class ToConn(msgspec.Struct, tag="to_conn", frozen=True):
    """A frame for connection ``conn`` of the receiving node (a spectator)."""

    conn: int
    frame: msgspec.Raw
    watched: str | None = None
    """The game the frame is of, for a watched game's update or end (written at the
    audience's pace); ``None`` for an answer to the connection itself."""
    epoch: int | None = None
    """The epoch the sender runs the watched game at: a frame of an older epoch than the
    receiving node knows is dropped (as a seat's, :class:`ToBot`)."""


class TokenRetired(msgspec.Struct, tag="token_retired", frozen=True):
    """``bot``'s token with this hash was rotated or revoked: the node holding a connection
    that said hello with it closes it (4011). A hash, never a token, crosses Redis."""

    bot: str
    token_hash: str


class FromBot(msgspec.Struct, tag="from_bot", frozen=True):
    """What ``bot`` sent, for the node that acts on it: a move or a resignation to the game's
    host, an answer to a challenge to the node holding it, a seek to the pairing leader."""

    bot: str
    message: ClientMessage


class Watching(msgspec.Struct, tag="watching", frozen=True):
    """Connection ``conn`` of the sending node starts (``on``) or stops watching a game."""

    conn: int
    game_id: str
    on: bool


class Capacity(msgspec.Struct, tag="capacity", frozen=True):
    """``bot`` now plays at most ``max_games`` games at a time."""

    bot: str
    max_games: int


class GameBegan(msgspec.Struct, tag="game_began", frozen=True):
    """A game started on ``host`` (every node: where to send its moves, the bots' slots, /live),
    or, ``taken_over``, runs on ``host`` now at ``epoch`` (its former host died): its moves go
    there from now on, and the spectators follow it."""

    host: str
    game: GameSummary
    epoch: int = 0
    taken_over: bool = False


class GameEnded(msgspec.Struct, tag="game_ended", frozen=True):
    """A game of ``host`` is over and announced (``game`` as it ended; a finished rated one is
    stored with its ratings), or, ``lost``, it cannot go on (its host died and it could not be
    taken over): each node closes its seats there with 4010. ``slot`` (a tournament game's)
    and ``first_player`` are what the leader's director and ladder read of a game's end
    besides its summary; ``epoch`` the one it ended at."""

    host: str
    game: GameSummary
    lost: bool = False
    slot: int | None = None
    first_player: int = 0
    epoch: int = 0


class StartGame(msgspec.Struct, tag="start_game", frozen=True):
    """The ladder's leader decided a game (a ladder, qualification or tournament game) and
    the receiving node is to host it: start it as ``setup`` says, under its id. The start is
    heard as any game's (:class:`GameBegan`); a node that cannot start it answers
    :class:`GameNotStarted`."""

    setup: GameSetup


class GameNotStarted(msgspec.Struct, tag="game_not_started", frozen=True):
    """The answer to the sender's :class:`StartGame` when the game could not start here (a
    seat gone, storage failing, the order not from the leader): the leader frees its slots
    and pairs again later."""

    game_id: str
    code: str
    message: str


class AbortGame(msgspec.Struct, tag="abort_game", frozen=True):
    """Abort game ``game_id`` hosted by the receiving node (the leader cancelled its
    tournament, or gave up waiting for the game's start)."""

    game_id: str
    why: str


class PliesAsked(msgspec.Struct, tag="plies_asked", frozen=True):
    """What ply has each game you run reached? Asked of every node before a node lists the
    running games (storage and ``game_began`` know a game as it started); each answers with
    :class:`PliesTold`. Asked when read, so a move costs the cluster nothing."""

    call: int


class PliesTold(msgspec.Struct, tag="plies_told", frozen=True):
    """The answer to the sender's :class:`PliesAsked` ``call``: the ply of each game it runs.
    It comes after the ``game_began`` of each of them (one sender's messages arrive in order)."""

    call: int
    plies: dict[str, int]


class GameAsked(msgspec.Struct, tag="game_asked", frozen=True):
    """How does game ``game_id`` stand (with its spectator view if ``view``)? Sent to the
    node that hosts it, or to every node when the sender does not know where it runs; each
    node asked answers with :class:`GameTold`."""

    call: int
    game_id: str
    view: bool = False


class GameTold(msgspec.Struct, tag="game_told", frozen=True):
    """The answer to the sender's :class:`GameAsked` ``call``: the game as it stands on the
    node that runs it (or ran it lately), or ``None`` if this node does not know it."""

    call: int
    game: GameSummary | None
    epoch: int = 0
    view: msgspec.Raw = NO_VIEW
    """The spectator view as the host encoded it (``null`` unless asked for)."""


class LeaderIs(msgspec.Struct, tag="leader_is", frozen=True):
    """``node`` holds the pairing lease (said when it takes it, then every second); ``term``
    names this lead of it: a leader that lost the lease and took it again (a Redis outage) has
    a new term and a ladder that knows no seeker yet, so the nodes send their seeks again."""

    node: str
    term: str = ""


class Standings(msgspec.Struct, tag="standings", frozen=True):
    """The leader's standings: every node answers ``GET /api/ladder`` and ``/live`` with them."""

    table: LiveStandings
    places: dict[str, str]
    """Every bot's place that is not ``new`` (``listed``, ``removed``)."""
    seeking: list[str]


class Refused(msgspec.Struct, tag="refused", frozen=True):
    """``bot`` drew a protocol error on its node (the leader fails a qualifying bot for it)."""

    bot: str
    code: str
    message: str
    game_id: str | None


class LiveNews(msgspec.Struct, tag="live_news", frozen=True):
    """An event of the leader's for every node's ``/live`` viewers: a tournament changed (the
    leader runs the tournaments), or a game it stored as forfeited ended (no node hosted it)."""

    message: LiveTournament | LiveGameEnded




class LadderCall(msgspec.Struct, tag="ladder_call", frozen=True):
    """An organizer's ladder control, for the leader to carry out; answered by :class:`LadderAnswer`."""

    call: int
    op: LadderOp
    bot: str | None = None


class LadderAnswer(msgspec.Struct, tag="ladder_answer", frozen=True):
    """The leader's answer to the sender's call ``call``: the HTTP status and body."""

    call: int
    status: int
    body: dict[str, object]


ClusterMessage = (
    Attached | Detached | Capacity | ToBot | ToConn | FromBot | TokenRetired | Watching | GameBegan | GameEnded | LeaderIs
    | Standings | Refused | LadderCall | LadderAnswer | LiveNews | PliesAsked | PliesTold
    | GameAsked | GameTold | StartGame | GameNotStarted | AbortGame
)
