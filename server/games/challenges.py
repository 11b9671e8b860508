"""Challenges between connected bots: offer, accept, decline, expire.

A challenge lives until it is answered, expires (one ``call_later`` timer each), or its
opponent leaves; one whose challenger left is void, and kept until it expires so that an
answer hears why (``bot_offline``). It is kept on the challenger's node, where its game
starts; in a cluster an opponent connected to another node answers it through that node
(``forward``). Accepted challenges start an unrated game through ``GameManager.start_game``
with a random seat assignment. While storage fails, challenges are refused and an accepted
one is declined (``storage_unavailable``): no game starts that could not be recorded.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass

from protocol.messages import Accept, Challenged, ChallengeDeclined, ChallengeSent, ClientMessage, Decline

from ..common.ids import new_id
from ..common.refusal import Refusal
from ..config import Settings
from ..connections.presence import Presence
from ..storage import Storage
from .manager import GameManager

log = logging.getLogger(__name__)

HOUSE_PLAYS = "plays qualification games and the tournaments it is entered in"
"""What the house bot plays, said where it is asked for anything else (a challenge, an
organizer's game): it is always there, but only for those."""


@dataclass
class PendingChallenge:
    id: str
    challenger: str
    opponent: str
    timer: asyncio.TimerHandle
    created: float
    """Loop time when it was offered."""
    withdrawn: bool = False
    """The challenger left: kept until it expires, so that an answer hears why it is void."""


class ChallengeBook:
    """The open challenges, by id."""

    def __init__(self, settings: Settings, storage: Storage, presence: Presence, manager: GameManager) -> None:
        self.settings = settings
        self.storage = storage
        self.presence = presence
        self.manager = manager
        self.pending: dict[str, PendingChallenge] = {}
        self.held_elsewhere: Callable[[str], str | None] = lambda challenge_id: None
        """In a cluster: the node holding a challenge offered to a bot here from another node."""
        self.forward: Callable[[str, str, ClientMessage], None] | None = None
        """In a cluster: ``forward(node, bot, message)`` hands a bot's answer to that node."""

    def _tell(self, bot: str, msg: object) -> None:
        conn = self.presence.get(bot)
        if conn is not None:
            conn.send(msg)

    async def _canonical(self, name: str) -> str | None:
        """The registered spelling of a bot name (names are unique case-insensitively)."""
        if self.presence.is_connected(name):
            return name
        row = await self.storage.bot_by_name(name)
        return row.name if row is not None else None

    async def challenge(self, challenger: str, opponent: str) -> None:
        """Offer ``opponent`` a game, or refuse (unknown, offline, self); a busy opponent
        declines at once."""
        self.manager.recorder.check()
        name = await self._canonical(opponent)
        if name is None:
            raise Refusal("unknown_bot", f"no bot named {opponent!r}")
        if name == challenger:
            raise Refusal("challenge_self", "a bot cannot challenge itself")
        conn = self.presence.get(name)
        if conn is None and name == self.settings.house_bot:
            raise Refusal("bot_offline", f"{name}, the house bot, {HOUSE_PLAYS}, not challenges: challenge a "
                          "connected bot (GET /api/ladder says which are)")
        if conn is None:
            raise Refusal("bot_offline", f"{name} is not connected")
        if not conn.reachable:
            raise Refusal("cluster_unavailable", f"{name} is connected to another node, which cannot be reached now")
        self._check_open_limit(challenger)
        challenge_id = new_id(8)
        if self.manager.running_count(name) >= conn.max_games:
            self._tell(challenger, ChallengeDeclined(challenge_id, "busy"))
            return
        expires_ms = int(self.settings.challenge_expiry_s * 1000)
        loop = asyncio.get_running_loop()
        timer = loop.call_later(self.settings.challenge_expiry_s, self._expire, challenge_id)
        self.pending[challenge_id] = PendingChallenge(challenge_id, challenger, name, timer, loop.time())
        self._tell(challenger, ChallengeSent(challenge_id, name, expires_ms))
        conn.send(Challenged(challenge_id, challenger, expires_ms))

    def _check_open_limit(self, challenger: str) -> None:
        """Refuse a challenge beyond ``max_open_challenges``; retry when the oldest expires."""
        mine = [c.created for c in self.pending.values() if c.challenger == challenger and not c.withdrawn]
        if len(mine) >= self.settings.max_open_challenges:
            expires = min(mine) + self.settings.challenge_expiry_s
            retry = max(0.0, expires - asyncio.get_running_loop().time())
            raise Refusal(
                "rate_limited",
                f"at most {self.settings.max_open_challenges} open challenges at a time",
                limit="challenges",
                retry_after=round(retry, 3),
            )

    def _take(self, bot: str, challenge_id: str) -> PendingChallenge:
        ch = self.pending.get(challenge_id)
        if ch is None or ch.opponent != bot:
            raise Refusal("unknown_challenge", f"no open challenge {challenge_id!r} to you")
        del self.pending[challenge_id]
        ch.timer.cancel()
        return ch

    def _elsewhere(self, bot: str, challenge_id: str, answer: ClientMessage) -> bool:
        """Hand the answer to the node holding the challenge, if another node does."""
        node = None if challenge_id in self.pending else self.held_elsewhere(challenge_id)
        if node is None or self.forward is None:
            return False
        self.forward(node, bot, answer)
        return True

    def accept(self, bot: str, challenge_id: str) -> None:
        if self._elsewhere(bot, challenge_id, Accept(challenge_id)):
            return
        ch = self._take(bot, challenge_id)
        if ch.withdrawn or not self.presence.is_connected(ch.challenger):
            raise Refusal("bot_offline", f"{ch.challenger} left after it challenged you: the challenge is void")
        seats = [ch.challenger, ch.opponent]
        random.shuffle(seats)
        try:
            self.manager.start_game((seats[0], seats[1]), challenge_id=ch.id)
        except Refusal as r:
            if r.code == "storage_unavailable":
                self._tell(ch.challenger, ChallengeDeclined(ch.id, "storage_unavailable"))
            raise

    def decline(self, bot: str, challenge_id: str) -> None:
        if self._elsewhere(bot, challenge_id, Decline(challenge_id)):
            return
        ch = self._take(bot, challenge_id)
        if not ch.withdrawn:
            self._tell(ch.challenger, ChallengeDeclined(ch.id, "declined"))

    def _expire(self, challenge_id: str) -> None:
        ch = self.pending.pop(challenge_id, None)
        if ch is not None and not ch.withdrawn:
            self._tell(ch.challenger, ChallengeDeclined(ch.id, "expired"))

    def bot_left(self, bot: str) -> None:
        """Drop the challenges to the bot: their challengers hear it went offline. Those
        the bot made are withdrawn: their opponents may still answer them until they
        expire, and hear ``bot_offline`` (PROTOCOL.md §5.4)."""
        for ch in [c for c in self.pending.values() if bot in (c.challenger, c.opponent)]:
            if ch.challenger == bot:
                ch.withdrawn = True
                continue
            del self.pending[ch.id]
            ch.timer.cancel()
            if not ch.withdrawn:
                self._tell(ch.challenger, ChallengeDeclined(ch.id, "offline"))

    def clear(self) -> None:
        for ch in self.pending.values():
            ch.timer.cancel()
        self.pending.clear()
