"""Qualification: who is qualifying, how far each is, and the rules that pass or fail them.

A bot not yet listed plays ``qualification_pairs`` duplicate pairs against the in-process
house bot. Every game must end by the rules (not on time, not by resigning) and the bot must
draw no protocol ``error`` about them; then it passes, and the ladder lists it (stored, so it
survives restarts). A fault fails it at once: it stops seeking and qualifies afresh at its
next ``seek``. The ladder (``service.py``) starts the pairs; this module keeps the count.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from protocol.messages import LadderState

from ..common.logs import about
from ..common.refusal import Refusal
from ..config import Settings
from ..games.room import GameRoom
from .pairs import Pair

log = logging.getLogger(__name__)

RULES_ENDS = frozenset({"river", "deck", "no_moves", "turn_limit"})
"""Ways a game ends by the rules (not on time, by resigning, or aborted)."""

PROTOCOL_BREAKS = frozenset({"bad_json", "not_object", "unknown_type", "invalid_message", "binary_frame",
                             "frame_too_large", "flood"})
"""Errors that are a protocol break whatever game they are about."""


@dataclass
class Qualification:
    left: int
    """Games still to finish cleanly."""
    pair: Pair | None = None
    games: set[str] = field(default_factory=set)


class Qualifier:
    """The bots in qualification and those that failed it.

    It tells the ladder what becomes of a bot: ``tell`` (a qualification game counted, or it
    failed, with the message to send), ``stop_seeking`` (it failed) and ``passed`` (list it)."""

    def __init__(
        self,
        settings: Settings,
        house: str,
        tell: Callable[[str, str | None], None],
        stop_seeking: Callable[[str], None],
        passed: Callable[[str], None],
    ) -> None:
        self.games = 2 * settings.qualification_pairs
        """Games a bot plays to qualify."""
        self.house = house
        self.bots: dict[str, Qualification] = {}
        self.failed: set[str] = set()
        self._tell = tell
        self._stop_seeking = stop_seeking
        self._passed = passed

    def begin(self, bot: str) -> None:
        """A bot not yet listed seeks: it qualifies (afresh, after a failure), unless it is
        qualifying already."""
        if bot not in self.bots:
            self.failed.discard(bot)
            self.bots[bot] = Qualification(left=self.games)

    def state(self, bot: str) -> Literal["qualifying", "failed"]:
        """Where a bot not yet listed stands."""
        return "failed" if bot in self.failed and bot not in self.bots else "qualifying"

    def left(self, bot: str, state: LadderState) -> int:
        """Games the bot has still to play: all of them if it has not begun (or failed)."""
        q = self.bots.get(bot)
        return q.left if q is not None else self.games if state in ("qualifying", "failed") else 0

    def due(self, seeking: set[str]) -> Iterator[tuple[str, Qualification]]:
        """Seeking bots with games left and no pair under way: each waits for its next pair."""
        for bot, q in list(self.bots.items()):
            if q.pair is None and q.left > 0 and bot in seeking:
                yield bot, q

    def challenger(self, players: tuple[str, str] | list[str]) -> str:
        """The bot that is not the house in a qualification game."""
        return players[1] if players[0] == self.house else players[0]

    def of(self, pair: Pair) -> Qualification | None:
        """The qualification ``pair`` is played for, if it still goes on."""
        if pair.kind != "qualification":
            return None
        q = self.bots.get(self.challenger(pair.players))
        return q if q is not None and q.pair is pair else None

    def refused(self, bot: str, refusal: Refusal) -> None:
        """A bot drew an ``error``: during qualification, a protocol break fails it. A move for
        a game already over is not one: it came too late, and the game's end, which follows
        once stored, says how the game ended (a time-out fails the bot, in those words)."""
        q = self.bots.get(bot)
        if q is None or refusal.code == "game_over":
            return
        if refusal.code in PROTOCOL_BREAKS or refusal.game_id in q.games:
            self.fail(bot, f"qualification failed: {refusal.code} ({refusal.message}); seek again to retry")

    def fail(self, bot: str, message: str) -> None:
        log.info("bot %s failed qualification: %s", bot, message, extra=about(bot=bot))
        self.bots.pop(bot, None)
        self.failed.add(bot)
        self._stop_seeking(bot)
        self._tell(bot, message)

    def game_ended(self, room: GameRoom) -> None:
        """A qualification game is over: an end by the rules counts, any other fails the bot;
        the last one to count passes it."""
        bot = self.challenger(room.players)
        q = self.bots.get(bot)
        if q is None or room.id not in q.games:
            return
        if room.status == "aborted":
            return
        assert room.outcome is not None
        if room.outcome.end_reason not in RULES_ENDS:
            self.fail(bot, f"qualification failed: game {room.id} ended by {room.outcome.end_reason}; seek again to retry")
            return
        q.left -= 1
        if q.left > 0:
            self._tell(bot, None)
            return
        del self.bots[bot]
        self._passed(bot)
