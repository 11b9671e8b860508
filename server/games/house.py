"""The house bot: an in-process seat the ladder's qualification games are played against.

It needs no socket: :class:`GameManager` hands it the messages a connection would get, and it
answers each ``decision`` with a uniformly random legal move on the next loop iteration (never
from inside the call that asked, so a game's step is finished before the next begins). Being
in-process it is always there, never slow and never breaks the protocol, so a qualification
game tests only the bot that qualifies.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import Any

from protocol.messages import Decision

from ..common.logs import about
from ..common.refusal import Refusal

log = logging.getLogger(__name__)

Play = Callable[[str, str, int, Any], None]
"""``GameManager.play(bot, game_id, request_id, move)``."""


class HouseBot:
    """Plays every game it is seated in; ``send`` is its whole interface, as for a connection."""

    def __init__(self, name: str, play: Play, seed: int | None = None) -> None:
        self.name = name
        self._play = play
        self._rng = random.Random(seed)

    def send(self, msg: Any) -> None:
        if isinstance(msg, Decision):
            asyncio.get_running_loop().call_soon(self._answer, msg)

    def _answer(self, d: Decision) -> None:
        try:
            self._play(self.name, d.game_id, d.request_id, self._rng.choice(d.legal))
        except Refusal as r:  # the game ended meanwhile (the opponent resigned or timed out)
            log.debug("house move in %s refused: %s", d.game_id, r, extra=about(game=d.game_id))
