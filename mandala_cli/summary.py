"""The final-result line that ``mandala replay`` prints for each record."""

from __future__ import annotations

from typing import Any

from mandala import COLORS, Game


def summary(game: Game) -> dict[str, Any]:
    """Scores, cups, rivers, winner and end reason; ``None`` winner and reason while running."""
    return {
        "scores": list(game.scores()),
        "cup_sizes": list(game.cup_sizes()),
        "winner": game.winner(),
        "end_reason": game.end_reason,
        "rivers": [[COLORS[c] for c in river] for river in game.rivers],
        "cups": [dict(zip(COLORS, cup, strict=True)) for cup in game.cups],
        "turns": game.turns,
    }
