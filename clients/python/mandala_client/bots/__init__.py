"""The shipped bots: ``RandomBot`` (baseline), ``GreedyBot`` (one ply) and ``SearchBot`` (ISMCTS).

Each is a plain class with ``choose(view, legal) -> Move`` and a
constructor taking an optional ``seed`` and ``budget`` (seconds per
decision); ``SHORTCUTS`` maps the names ``mandala match`` accepts to them.
"""

from __future__ import annotations

from .base import Bot
from .greedy import GreedyBot
from .random import RandomBot
from .search import SearchBot

SHORTCUTS: dict[str, type] = {"random": RandomBot, "greedy": GreedyBot, "search": SearchBot}

__all__ = ["Bot", "GreedyBot", "RandomBot", "SearchBot", "SHORTCUTS"]
