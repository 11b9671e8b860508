"""The seams between the game manager and the rest of the server: :class:`GameEvents`, which
the ladder, the tournaments, ``/live`` and the cluster hear games start and end through, and
:class:`GamesElsewhere`, the games other nodes of a cluster host (the cluster node implements
it; on one node there is none), with :class:`GameSetup`, a game the ladder or a tournament
decided, which the cluster may have another node start. The manager only calls through these,
so nothing below the cluster imports it."""

from __future__ import annotations

from typing import Protocol

import msgspec

from protocol.messages import ClientMessage, GameKind, GameSummary

from ..connections.connection import Connection
from .deals import Deal
from .room import GameRoom


class GameSetup(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a game needs to start, wherever it is to run: its id (chosen where it was
    decided, so the ladder and the director can count it at once), its seats (seat 0 first),
    its deal (the reshuffle seed fixed), and what it is played for."""

    game_id: str
    players: tuple[str, str]
    deal: Deal
    kind: GameKind
    rated: bool = False
    pair_id: str | None = None
    decision_ms: int | None = None
    tournament_id: str | None = None
    slot: int | None = None

    @property
    def tournament(self) -> tuple[str, int] | None:
        return (self.tournament_id, self.slot) if self.tournament_id is not None and self.slot is not None else None


class GamesElsewhere(Protocol):
    """The games other nodes of a cluster host (:class:`~server.cluster.remote_games.RemoteGames`)."""

    @property
    def healthy(self) -> bool: ...

    def host_of(self, game_id: str) -> str | None: ...

    def place(self, setup: GameSetup) -> bool:
        """Have the node the cluster's rule picks among the game's seats start it: true if
        another node is to (asked now; its start and its end are heard as any game's there,
        and the ladder's and the director's ``game_ended`` hear it aborted if it never
        starts), false if this node is. Raises :class:`~server.common.refusal.Refusal`
        ``cluster_unavailable`` when the chosen node cannot be reached."""

    def abort(self, host: str, game_id: str, why: str) -> None:
        """Abort a game another node hosts (a cancelled tournament's)."""

    def forward(self, host: str, bot: str, message: ClientMessage) -> None: ...

    def paces(self, bot: str, game_id: str, request_id: int) -> bool:
        """``GameManager.paces`` for a game this node does not host."""

    def running_count(self, bot: str) -> int: ...

    def game_ids(self, bot: str) -> list[str]: ...

    def watch(self, conn: Connection, game_id: str, host: str, on: bool) -> None: ...

    def moved(self, room: GameRoom) -> None:
        """Another node took over ``room``'s game: its spectators here follow it there."""

    def adopting(self, room: GameRoom) -> None:
        """This node takes over ``room``'s game: the cluster hears it runs here now, and the
        connections here that watched it watch it here."""

    def summary_of(self, game_id: str) -> GameSummary | None:
        """A game another node runs, as its host last told."""

    def summaries(self) -> list[GameSummary]:
        """The games the other nodes run, as their hosts last told."""

    async def hear_out(self) -> None:
        """Learn how far the other nodes' games went (before they are listed)."""


class GameEvents(Protocol):
    """What the ladder and the live stream hear from :class:`GameManager` (all on the loop)."""

    def game_started(self, room: GameRoom) -> None: ...

    def game_ended(self, room: GameRoom) -> None:
        """The game is over and announced (a finished game is durable; its row may still
        be in the spool, on its way to the database)."""

    def rated_game_stored(self, room: GameRoom) -> None:
        """A rated game's result and both rating changes are stored."""
