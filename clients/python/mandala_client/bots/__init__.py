"""The shipped bots: ``RandomBot`` (baseline), ``GreedyBot`` (one ply), ``SearchBot`` (ISMCTS)
and the graded house levels ``house:1`` … ``house:5`` (:mod:`.levels`).

Each is a plain class (a level: a factory) with ``choose(view, legal) -> Move`` and a
constructor taking an optional ``seed`` and ``budget`` (seconds per decision);
``SHORTCUTS`` maps the names ``mandala match`` and ``mandala-bot --bot`` accept to them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import Bot
from .greedy import GreedyBot
from .levels import HOUSE_LEVELS, NoisyGreedyBot
from .random import RandomBot
from .search import SearchBot

SHORTCUTS: dict[str, Callable[..., Any]] = {"random": RandomBot, "greedy": GreedyBot, "search": SearchBot, **HOUSE_LEVELS}

__all__ = ["Bot", "GreedyBot", "NoisyGreedyBot", "RandomBot", "SearchBot", "SHORTCUTS"]
