"""A duplicate pair, the unit the ladder pairs in: two games on one deal (deck order, first
player and reshuffle seed) with the seats swapped, so neither bot keeps the luck of the deal.
Qualification plays the same pairs against the house bot."""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.messages import GameKind

from ..games.deals import Deal


@dataclass
class Pair:
    """Two games on one deal, seats swapped: ``players`` is the first game's seat order."""

    id: str
    players: tuple[str, str]
    deal: Deal
    kind: GameKind
    games: list[str] = field(default_factory=list)
    first_ended: float = 0.0
    """Loop time the first game ended (the return game waits ``return_wait_s`` from then)."""
    given_up: bool = False
    """A bot of it was removed from the ladder: no return game, whatever becomes of the bot
    before the first game ends (restored and listed again, it starts new pairs)."""

    @property
    def return_players(self) -> tuple[str, str]:
        return self.players[1], self.players[0]
