"""Bots across nodes: this node's bots as the others see them (where each is connected, how many
games it plays at a time), the other nodes' bots as seats here (:class:`RemoteBot`, the
server's ``Presence.elsewhere``), and what the bus brings for them: frames for a connection
here, and what a bot connected elsewhere says about a game or challenge held here."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import msgspec

from protocol.messages import (
    CLOSE_REPLACED,
    Accept,
    Challenged,
    Decision,
    Decline,
    GameStart,
    MoveAccepted,
    OpponentAway,
    OpponentBack,
    PlayMove,
    Resign,
    Seek,
    Unseek,
    Update,
)

from ..common.logs import about
from ..common.refusal import Refusal
from ..connections.connection import Connection, encode
from .bus import PREFIX, ClusterBus, ClusterUnavailable
from .messages import Capacity, FromBot, ToBot, ToConn, TokenRetired
from .parts import ServerParts
from .presence import ClusterPresence, Place, text_of

log = logging.getLogger(__name__)

CAPACITY = f"{PREFIX}:capacity"
"""Hash: each connected bot's ``max_games``."""

GAME_STREAM = (GameStart, Update, Decision, MoveAccepted, OpponentAway, OpponentBack)
"""The frames a running game sends its seats: each crosses the bus with its game's epoch."""


class RemoteBot:
    """A bot connected to another node: game code sends it frames as to a connection."""

    __slots__ = ("name", "node", "_bots")

    def __init__(self, name: str, node: str, bots: ClusterBots) -> None:
        self.name = name
        self.node = node
        self._bots = bots

    @property
    def max_games(self) -> int:
        return self._bots.capacity.get(self.name, 1)

    @property
    def reachable(self) -> bool:
        return self._bots.bus.healthy

    def send(self, msg: Any) -> None:
        if isinstance(msg, bytes):
            out = ToBot(self.name, msgspec.Raw(msg))
        elif type(msg) in GAME_STREAM:
            room = self._bots.parts.manager.running.get(msg.game_id)
            out = ToBot(self.name, msgspec.Raw(encode(msg)), msg.game_id,
                        msg.request_id if type(msg) is Decision else None,
                        epoch=room.epoch if room is not None else None)
        elif type(msg) is Challenged:
            out = ToBot(self.name, msgspec.Raw(encode(msg)), challenge_id=msg.challenge_id)
        else:
            out = ToBot(self.name, msgspec.Raw(encode(msg)))
        self._bots.bus.post(self.node, out)


class RemoteSpectator:
    """A connection of another node watching a game hosted here; ``epoch_of(game_id)`` is the
    epoch this node runs a game at (``None`` if it does not run it), sent with its frames."""

    __slots__ = ("node", "conn", "watching", "_bus", "_epoch_of")

    def __init__(self, node: str, conn: int, bus: ClusterBus[Any], epoch_of: Callable[[str], int | None]) -> None:
        self.node = node
        self.conn = conn
        self.watching: set[str] = set()
        self._bus = bus
        self._epoch_of = epoch_of

    def send(self, msg: Any) -> None:
        self._bus.post(self.node, ToConn(self.conn, msgspec.Raw(msg if isinstance(msg, bytes) else encode(msg))))

    def send_watched(self, game_id: str, frame: bytes) -> None:
        self._bus.post(self.node, ToConn(self.conn, msgspec.Raw(frame), game_id, self._epoch_of(game_id)))


class ClusterBots:
    """Where every bot of the cluster is connected, for this node. ``leading()`` says whether
    this node leads the ladder (a bot's new capacity may let it pair), ``unseek(bot)`` drops a
    bot here that is gone from the seeks sent to the leader, ``asked(bot, game_id,
    request_id)`` records a decision another node's game asks of a bot here, ``refused(bot,
    refusal)`` tells the leader of an error a bot drew here about a game hosted here (it fails
    a qualifying bot), ``latest_epoch(game_id)`` is the newest epoch of a game this node knows
    (a frame of an older one is dropped)."""

    def __init__(self, node: str, bus: ClusterBus[Any], parts: ServerParts, *, leading: Callable[[], bool],
                 unseek: Callable[[str], None], asked: Callable[[str, str, int], None],
                 refused: Callable[[str, Refusal], None], latest_epoch: Callable[[str], int],
                 spawn: Callable[[Coroutine[Any, Any, Any], str], None]) -> None:
        self.node = node
        self.bus = bus
        self.parts = parts
        self.presence = ClusterPresence(bus, self._replaced, self._arrived, self._left)
        self.capacity: dict[str, int] = {}
        """Every connected bot's ``max_games``, wherever it is connected."""
        self._challenges: OrderedDict[str, tuple[str, float]] = OrderedDict()
        """Challenges to bots here, offered on other nodes: challenge id → that node, and when
        (loop time); in that order. Kept until answered, or as long as a challenge lives."""
        self._leading = leading
        self._unseek = unseek
        self._asked = asked
        self._refused = refused
        self._latest_epoch = latest_epoch
        self._spawn = spawn
        self.stale = 0
        """Frames dropped here because their game had moved to a newer epoch (another host)."""

    def handlers(self) -> dict[type, Callable[[str, Any], None]]:
        """What this part hears on the bus, by the message's type."""
        return {Capacity: self._on_capacity, ToBot: self._on_to_bot, ToConn: self._on_to_conn,
                FromBot: self._on_from_bot, TokenRetired: self._on_token_retired}

    async def load(self) -> None:
        """Learn where every bot is and how many games each plays at a time (at start, and when
        Redis is back). A bot's ``max_games`` heard while the map is read wins over the map's,
        which may be older (anything newer is heard after)."""
        await self.presence.load()
        heard: dict[str, int] = {}
        self.capacity = heard
        stored = await self.bus.redis.hgetall(CAPACITY)
        self.capacity = {text_of(k): int(v) for k, v in stored.items()} | heard

    async def node_gone(self, node: str, known: Mapping[str, Place]) -> None:
        """``node`` stopped refreshing its liveness: its bots count as gone, here and on Redis
        (here, those whose place is still the one in ``known``: see ``forget_node``)."""
        for bot in self.presence.forget_node(node, known):
            self._left(bot)
        await self.presence.sweep()

    def held_elsewhere(self, bot: str) -> bool:
        """Whether ``bot`` is connected to another node (and not here)."""
        place = self.presence.place(bot)
        return place is not None and place.node != self.node and self.parts.presence.get_local(bot) is None

    # ------------------------------------------------------------------ this node's bots

    async def attached(self, bot: str, conn: Connection) -> Place | None:
        """A bot said hello here: record it for the cluster (an older connection anywhere is
        closed). Without Redis it plays here only (``None``)."""
        try:
            self._post_capacity(bot, conn.max_games)
            return await self.presence.attach(bot, conn.id)
        except ClusterUnavailable as e:
            log.warning("node %s: bot %s is known here only: %s", self.node, bot, e, extra=about(bot=bot))
            return None

    async def _detach(self, bot: str, place: Place) -> None:
        """Forget the bot's connection everywhere. Without Redis that cannot be said now: the
        node forgets it when Redis is back (``forget_own``), so one line says so, no traceback."""
        try:
            await self.presence.detach(bot, place)
        except ClusterUnavailable as e:
            log.info("node %s: bot %s left while Redis was lost (%s); forgotten when it is back", self.node, bot, e,
                     extra=about(bot=bot))

    def detached(self, bot: str, place: Place | None) -> bool:
        """A bot's connection here closed. Whether the bot is still connected (elsewhere)."""
        self._unseek(bot)
        if place is not None:
            self._spawn(self._detach(bot, place), f"detaching bot {bot}")
        now = self.presence.place(bot)
        return now is not None and now.node != self.node

    def capacity_changed(self, bot: str, max_games: int) -> None:
        self._post_capacity(bot, max_games)

    def _post_capacity(self, bot: str, max_games: int) -> None:
        self.capacity[bot] = max_games
        self.bus.post_command(lambda pipe: pipe.hset(CAPACITY, bot, max_games))
        self.bus.post(None, Capacity(bot, max_games))

    async def token_retired(self, bot: str, token_hash: str) -> None:
        """A token of ``bot`` was retired on this node (its connection here is closed already):
        every other node closes the one that said hello with it. Without Redis the others
        learn it when they check their bots' tokens on its return (:meth:`check_tokens`)."""
        try:
            await self.bus.broadcast(TokenRetired(bot, token_hash))
        except ClusterUnavailable as e:
            log.warning("node %s: the other nodes could not be told that a token of %s was retired: %s",
                        self.node, bot, e)

    async def check_tokens(self) -> None:
        """Close each connection here whose token was retired meanwhile (Redis was lost, so the
        news may not have come)."""
        for bot, conn in list(self.parts.presence.local_bots()):
            row = await self.parts.storage.bot_by_name(bot)
            if conn.token_hash is not None and (row is None or row.token_hash != conn.token_hash):
                log.info("node %s: bot %s's token was retired while Redis was lost: closing its connection",
                         self.node, bot)
                self.parts.presence.retire(bot, conn.token_hash)

    def challenge_node(self, challenge_id: str) -> str | None:
        """The node holding a challenge offered to a bot here from another node, for the bot's
        answer, which goes once: forgotten here as it is asked for."""
        held = self._challenges.pop(challenge_id, None)
        return held[0] if held is not None else None

    # ------------------------------------------------------------------ Presence.elsewhere

    def get(self, bot: str) -> RemoteBot | None:
        place = self.presence.place(bot)
        if place is None or place.node == self.node:
            return None
        return RemoteBot(bot, place.node, self)

    def count(self) -> int:
        return len(self.presence.elsewhere())

    # ------------------------------------------------------------------ what presence tells

    def _replaced(self, bot: str, conn_id: int) -> None:
        """A newer connection of ``bot`` elsewhere: close ours (4009), as on one node."""
        conn = self.parts.presence.get_local(bot)
        if conn is not None and conn.id == conn_id:
            self.parts.presence.detach(bot, conn)
            self._unseek(bot)
            conn.close(CLOSE_REPLACED, "replaced by a new connection")

    def _arrived(self, bot: str) -> None:
        parts = self.parts
        parts.manager.bot_arrived(bot)
        parts.ladder.bot_arrived(bot)
        parts.tournaments.wake()

    def _left(self, bot: str) -> None:
        parts = self.parts
        parts.manager.bot_left(bot)
        parts.challenges.bot_left(bot)
        parts.ladder.bot_left(bot)

    # ------------------------------------------------------------------ what the bus brings

    def _on_capacity(self, sender: str, m: Capacity) -> None:
        self.capacity[m.bot] = m.max_games
        if self._leading():
            self.parts.ladder.wake()

    def _on_to_bot(self, sender: str, m: ToBot) -> None:
        conn = self.parts.presence.get_local(m.bot)
        if conn is None:
            return
        if m.epoch is not None and m.game_id is not None and self._stale(sender, m.game_id, m.epoch, m.bot):
            return
        if m.request_id is not None and m.game_id is not None:
            self._asked(m.bot, m.game_id, m.request_id)
        elif m.challenge_id is not None:
            now = asyncio.get_running_loop().time()
            lived = now - self.parts.settings.challenge_expiry_s
            while self._challenges and next(iter(self._challenges.values()))[1] < lived:
                self._challenges.popitem(last=False)  # expired there, never answered
            self._challenges[m.challenge_id] = (sender, now)
        conn.send(bytes(m.frame))

    def _on_to_conn(self, sender: str, m: ToConn) -> None:
        conn = self.parts.presence.by_id.get(m.conn)
        if conn is None:
            return
        if m.epoch is not None and m.watched is not None and self._stale(sender, m.watched, m.epoch):
            return
        if m.watched is None:
            conn.send(bytes(m.frame))
        else:
            conn.send_watched(m.watched, bytes(m.frame))

    def _stale(self, sender: str, game_id: str, epoch: int, bot: str | None = None) -> bool:
        """Whether a frame of ``game_id`` that ``sender`` sent at ``epoch`` comes from a host
        that no longer runs the game (paused past its liveness, it published what it had
        queued as it woke, after the new host had resumed the seats): it is dropped, and the
        seats and spectators hear the game from its new host only, so no move is shown twice."""
        if epoch >= self._latest_epoch(game_id):
            return False
        self.stale += 1
        log.warning("node %s: a frame of game %s for %s from %s at epoch %d dropped: the game runs at a newer epoch",
                    self.node, game_id, bot or "a spectator", sender, epoch, extra=about(game=game_id))
        return True

    def _on_token_retired(self, sender: str, m: TokenRetired) -> None:
        if sender != self.node:
            self.parts.presence.retire(m.bot, m.token_hash)

    def _on_from_bot(self, sender: str, m: FromBot) -> None:
        parts, bot, msg = self.parts, m.bot, m.message
        try:
            if isinstance(msg, PlayMove):
                parts.manager.play(bot, msg.game_id, msg.request_id, msg.move)
            elif isinstance(msg, Resign):
                parts.manager.resign(bot, msg.game_id)
            elif isinstance(msg, Accept):
                parts.challenges.accept(bot, msg.challenge_id)
            elif isinstance(msg, Decline):
                parts.challenges.decline(bot, msg.challenge_id)
            elif isinstance(msg, Seek):
                parts.ladder.seek(bot)
            elif isinstance(msg, Unseek):
                parts.ladder.unseek(bot)
            else:
                log.warning("node %s: %s forwarded %s for bot %s: ignored", self.node, sender, type(msg).__name__, bot,
                            extra=about(bot=bot))
        except Refusal as r:
            seat = parts.presence.get(bot)
            if seat is not None:
                seat.send(r.to_error())
            parts.ladder.refused(bot, r)
            self._refused(bot, r)
