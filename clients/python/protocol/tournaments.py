"""Tournaments over HTTP and ``/live``: the organizer's definition and what everyone reads back.

The server validates a definition against these types (``400 invalid_request`` names the
field); the checks that need the database or more than one field (unknown bots, odd game
counts, a gauntlet's bot under test) are the server's and have their own codes
(PROTOCOL.md §21).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from .messages import BotName, GameKind, GameSummary

TournamentFormat = Literal["round_robin", "gauntlet", "swiss"]
TournamentState = Literal["created", "running", "paused", "finished", "cancelled"]
"""``created`` until started; ``running`` and ``paused`` may alternate; ``finished`` when
every planned game is played (or forfeited), ``cancelled`` by the organizer. The last two
are final."""

MAX_PARTICIPANTS = 64
MAX_GAMES_PER_PAIRING = 1000
MAX_PLANNED_GAMES = 100_000


class TournamentDefinition(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The body of ``POST /api/tournaments``."""

    name: Annotated[str, Meta(min_length=1, max_length=100)]
    format: TournamentFormat
    participants: Annotated[list[BotName], Meta(max_length=MAX_PARTICIPANTS)]
    """Registered bots (names ignore case), at least two, none twice."""
    games_per_pairing: Annotated[int, Meta(ge=0, le=MAX_GAMES_PER_PAIRING)] = 2
    """Even: each of the tournament's ``games_per_pairing / 2`` deals is played twice by every
    pairing, seats swapped."""
    rounds: Annotated[int, Meta(ge=1, le=MAX_PARTICIPANTS)] | None = None
    """Swiss only (required there): rounds to play, at most participants − 1."""
    bot_under_test: BotName | None = None
    """Gauntlet only (required there): the participant that meets each of the others."""
    decision_ms: Annotated[int, Meta(ge=10, le=600_000)] | None = None
    """Time per decision in the tournament's games (default: the server's)."""
    max_concurrent: Annotated[int, Meta(ge=1, le=1024)] = 8
    """Games of the tournament running at once, at most."""
    max_games_per_bot: Annotated[int, Meta(ge=1, le=64)] = 2
    """Games of the tournament one bot plays at once, at most (and never more than the
    ``max_games`` its connection declared, counting its other games)."""
    grace_s: Annotated[float, Meta(ge=0, le=86_400)] = 60.0
    """How long a game waits for a participant that is not connected when the game is due;
    then that bot forfeits it, and every further game of it that comes due while it stays away."""
    seed: Annotated[int, Meta(ge=0, le=(1 << 63) - 1)] | None = None
    """Fixes the deals (random if absent; the stored definition shows the one drawn)."""


class CrossCell(msgspec.Struct, kw_only=True):
    """One bot's games against one opponent."""

    games: int
    wins: int
    draws: int
    losses: int
    score: float
    """Wins plus half the draws."""


class Ranked(msgspec.Struct, kw_only=True):
    """One line of a tournament's ranking."""

    rank: int
    bot: str
    rating: float
    """Maximum-likelihood Bradley–Terry rating over the tournament's games (Elo scale, the
    pool's average at 1500); the ranking is ordered by it."""
    low: float
    high: float
    """Its 95% interval against the pool's average."""
    score: float
    """Wins plus half the draws, over all its games (forfeits included)."""
    games: int
    wins: int
    draws: int
    losses: int
    forfeits: int
    """Games it lost because it was not connected when they were due."""
    stronger_than_next: float | None
    """The likelihood that this bot is stronger than the next one in the ranking (from the
    fit's covariance); ``None`` on the last line."""


class TournamentResults(msgspec.Struct, kw_only=True):
    """``GET /api/tournaments/{id}/results``: the ranking and the crosstable so far."""

    tournament_id: str
    name: str
    state: TournamentState
    planned: int
    played: int
    ranking: list[Ranked]
    crosstable: dict[str, dict[str, CrossCell]]
    """``crosstable[a][b]``: ``a``'s games against ``b`` (only pairs that played)."""


class Progress(msgspec.Struct, kw_only=True):
    planned: int
    """Games the schedule holds (for Swiss: every round's, as it will be)."""
    played: int
    """Games over: finished by the rules, on time, by resigning, or forfeited."""
    running: int
    forfeits: int


class BusyGame(msgspec.Struct, kw_only=True):
    """A running game that takes one of a busy participant's slots."""

    game_id: str
    kind: GameKind
    opponent: str


class Waiting(msgspec.Struct, kw_only=True):
    """A participant a due game waits for: away (not connected), or busy (connected, but every
    slot its connection's ``max_games`` allows is taken, some by games outside this tournament;
    its slot is kept for the tournament, no new ladder game takes it)."""

    bot: str
    reason: Literal["away", "busy"]
    since: str
    """ISO 8601, UTC: when its game first came due while it was in this state."""
    forfeits_in_s: float | None
    """Away: seconds until it forfeits (0: it forfeits its games as they come due). Busy:
    ``None`` (a busy bot does not forfeit)."""
    busy_with: list[BusyGame]
    """Busy: the running games that take its slots, oldest first. Away: empty."""


class TournamentInfo(msgspec.Struct, kw_only=True):
    """A tournament as ``GET /api/tournaments`` lists it."""

    tournament_id: str
    name: str
    format: TournamentFormat
    state: TournamentState
    participants: list[str]
    created: str
    started: str | None
    ended: str | None
    progress: Progress


class TournamentView(msgspec.Struct, kw_only=True):
    """``GET /api/tournaments/{id}``, and the ``tournament`` message of ``/live``."""

    tournament_id: str
    name: str
    format: TournamentFormat
    state: TournamentState
    definition: TournamentDefinition
    """As created, with ``seed`` and ``decision_ms`` filled in."""
    created: str
    started: str | None
    ended: str | None
    progress: Progress
    rounds: int
    """Rounds paired so far: Swiss pairs a round when the last one is over (the last one
    paired is under way); the other formats pair every round at the creation."""
    running: list[GameSummary]
    waiting: list[Waiting]
    ranking: list[Ranked]
    crosstable: dict[str, dict[str, CrossCell]]


class LiveTournament(msgspec.Struct, tag="tournament", tag_field="type"):
    """``/live``: a tournament changed (a game started or ended, its state changed)."""

    tournament: TournamentView
