"""Standard logistic Elo on the 400 scale, as the ladder applies it after each rated game.

The constants are settings (``EloSettings``) so an organizer can change them; the
defaults are the ladder's documented ones: start at 1500, K = 32 during a bot's
first 30 rated games (shown as provisional), K = 16 after.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EloSettings:
    initial: float = 1500.0
    k_provisional: float = 32.0
    k_established: float = 16.0
    provisional_games: int = 30
    scale: float = 400.0


def expected_score(rating: float, opponent: float, scale: float = 400.0) -> float:
    """The score ``rating`` is expected to make against ``opponent`` (a draw scores ½)."""
    return 1.0 / (1.0 + 10.0 ** ((opponent - rating) / scale))


def k_factor(games_played: int, settings: EloSettings = EloSettings()) -> float:
    """K for a bot that has played ``games_played`` rated games before this one."""
    return settings.k_provisional if games_played < settings.provisional_games else settings.k_established


def is_provisional(games_played: int, settings: EloSettings = EloSettings()) -> bool:
    return games_played < settings.provisional_games


def update(
    ratings: tuple[float, float],
    games_played: tuple[int, int],
    score0: float,
    settings: EloSettings = EloSettings(),
) -> tuple[float, float]:
    """New ratings of two bots after one game; ``score0`` is 1, ½ or 0 for the first bot.

    Each side moves by its own K, so a provisional bot moves fast without
    shaking an established opponent as much.
    """
    r0, r1 = ratings
    e0 = expected_score(r0, r1, settings.scale)
    new0 = r0 + k_factor(games_played[0], settings) * (score0 - e0)
    new1 = r1 + k_factor(games_played[1], settings) * ((1.0 - score0) - (1.0 - e0))
    return new0, new1
