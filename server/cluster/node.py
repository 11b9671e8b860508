"""This node's part in a cluster: where games and bots are, and what goes between nodes.

A game runs on the node that started it (its *host*), with its clock, its request ids and its
record, exactly as on one node. Its seats may be connected anywhere: the host sends a seat's
frames to the node that holds the connection (:class:`RemoteBot`), which writes them as they
came; that node sends what the bot says about the game back to the host (:class:`FromBot`).
Every node knows every running game's host from ``game_began`` and ``game_ended`` broadcasts
(and the hash ``mandala:games``, read at start), every bot's node from presence, and the
pairing leader from ``leader_is``. The ladder runs on the node holding the pairing lease; the
others pass it their bots' seeks and the organizer's controls, and answer ``GET /api/ladder``
and ``/live`` with the standings it broadcasts.

Faults: Redis lost — games whose seats this node holds both go on; a game with a seat on
another node is aborted by its host, and a bot here whose game another node hosts is closed
with 4010 (its game is gone from here; on reconnecting, ``welcome`` lists what still runs);
no game or challenge across nodes starts (``cluster_unavailable``). When Redis is back the
node announces its bots and games again. A node that dies: its bots count as gone, and its
games are taken over by the ladder's leader from their move logs (``takeover.py``); a node
that stops (SIGTERM) leaves its games to be taken over the same way. A node that finds it was
taken for dead (its liveness key expired while it was paused) drops the games another node
took meanwhile, then announces its bots and games again.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
from redis.exceptions import RedisError

from protocol.messages import (
    CLOSE_GAME_HOST_LOST,
    CLOSE_REPLACED,
    Accept,
    Challenged,
    ClientMessage,
    Decision,
    Decline,
    GameSummary,
    LiveGameEnded,
    LiveGameStarted,
    LiveStandings,
    PlayMove,
    Resign,
    Seek,
    Unseek,
)
from protocol.tournaments import LiveTournament

from ..common.callbacks import cancel_and_wait, spawn
from ..common.refusal import Refusal
from ..connections.connection import Connection, encode
from ..ladder.controls import LadderOp, answer_of
from .bus import PREFIX, ClusterBus, ClusterUnavailable
from .lease import Lease
from .messages import (
    NO_VIEW,
    Capacity,
    ClusterMessage,
    FromBot,
    GameAsked,
    GameBegan,
    GameEnded,
    GameTold,
    LadderAnswer,
    LadderCall,
    LeaderIs,
    PliesAsked,
    PliesTold,
    Refused,
    Standings,
    ToBot,
    ToConn,
    TournamentNews,
    Watching,
)
from .parts import ServerParts
from .presence import ClusterPresence, Place, text_of
from .takeover import Takeover

if TYPE_CHECKING:
    from ..games.room import GameRoom

log = logging.getLogger(__name__)

GAMES = f"{PREFIX}:games"
"""Hash: the running games of the cluster, game id → ``game_began`` as JSON."""
CAPACITY = f"{PREFIX}:capacity"
"""Hash: each connected bot's ``max_games``."""
PAIRING = "pairing"
LEASE_S = 2.0
"""The pairing lease's expiry: a leader that dies is replaced within this and one attempt
(two thirds of a second), so pairing stops for less than 3 s."""
TICK_S = 0.5
"""How often the leader says it leads and each node looks for nodes that died (a node is
gone once its liveness key, refreshed every two thirds of a second, is 2 s old)."""
CALL_TIMEOUT_S = 10.0
ASK_TIMEOUT_S = 2.0
"""How long a node waits for the others to say how their games stand (or that they run no
such game)."""
ENDED_KEPT = 1024
"""Games of other nodes remembered after their end, so a late move still reaches the host
(which answers ``game_over``) rather than getting ``unknown_game``."""
ORPHAN_GRACE_S = 10.0
"""A game whose host is gone and that no node took over nor gave up after ``takeover_budget_s``
and this long (no leader all that time) is given up here: its seats on this node are closed
with 4010."""

_began = msgspec.json.Decoder(GameBegan)
_encoder = msgspec.json.Encoder()


class RemoteBot:
    """A bot connected to another node: game code sends it frames as to a connection."""

    __slots__ = ("name", "node", "_cluster")

    def __init__(self, name: str, node: str, cluster: ClusterNode) -> None:
        self.name = name
        self.node = node
        self._cluster = cluster

    @property
    def max_games(self) -> int:
        return self._cluster.capacity.get(self.name, 1)

    @property
    def reachable(self) -> bool:
        return self._cluster.bus.healthy

    def send(self, msg: Any) -> None:
        if isinstance(msg, bytes):
            out = ToBot(self.name, msgspec.Raw(msg))
        elif type(msg) is Decision:
            out = ToBot(self.name, msgspec.Raw(encode(msg)), msg.game_id, msg.request_id)
        elif type(msg) is Challenged:
            out = ToBot(self.name, msgspec.Raw(encode(msg)), challenge_id=msg.challenge_id)
        else:
            out = ToBot(self.name, msgspec.Raw(encode(msg)))
        self._cluster.bus.post(self.node, out)


class RemoteSpectator:
    """A connection of another node watching a game hosted here."""

    __slots__ = ("node", "conn", "watching", "_bus")

    def __init__(self, node: str, conn: int, bus: ClusterBus[Any]) -> None:
        self.node = node
        self.conn = conn
        self.watching: set[str] = set()
        self._bus = bus

    def send(self, msg: Any) -> None:
        self._bus.post(self.node, ToConn(self.conn, msgspec.Raw(msg if isinstance(msg, bytes) else encode(msg))))

    def send_watched(self, game_id: str, frame: bytes) -> None:
        self._bus.post(self.node, ToConn(self.conn, msgspec.Raw(frame), game_id))


class Asking:
    """A question to other nodes waiting for its answers: the nodes yet to answer, and (a
    :class:`GameAsked`) the first answer that knows the game, with the node that gave it."""

    __slots__ = ("future", "waiting")

    def __init__(self, future: asyncio.Future[tuple[str, GameTold] | None], waiting: set[str]) -> None:
        self.future = future
        self.waiting = waiting


class ClusterNode:
    """The cluster as this node sees it; ``bind(parts)`` hooks it into the server."""

    def __init__(self, url: str, node: str) -> None:
        self.node = node
        self.bus: ClusterBus[Any] = ClusterBus(url, node, ClusterMessage)
        self.presence = ClusterPresence(self.bus, self._replaced, self._arrived, self._left)
        self.lease = Lease(self.bus.redis, PAIRING, node, LEASE_S, gained=self._gained, lost=self._lost)
        self.games: dict[str, GameBegan] = {}
        """Running games hosted by other nodes, at the ply their hosts last told
        (:meth:`hear_out`)."""
        self.ended: OrderedDict[str, GameEnded] = OrderedDict()
        self._learned: set[str] = set()
        """Games of other nodes found before their ``game_began`` was heard here."""
        self._asks: dict[int, Asking] = {}
        self.capacity: dict[str, int] = {}
        self.leader: str | None = None
        self.seeking: set[str] = set()
        """Bots connected here that seek ladder games (sent again to a new leader)."""
        self._awaited: dict[tuple[str, str], int] = {}
        self._challenges: dict[str, str] = {}
        """Challenges to bots here, offered on other nodes: challenge id → that node."""
        self._spectators: dict[tuple[str, int], RemoteSpectator] = {}
        self._calls: dict[int, asyncio.Future[LadderAnswer]] = {}
        self._call_ids = itertools.count(1)
        self._tasks: list[asyncio.Task[None]] = []
        self._spawned: set[asyncio.Task[Any]] = set()
        self._table: LiveStandings | None = None
        self._parts: ServerParts | None = None
        self.takeover = Takeover(self)
        self._previous: list[GameBegan] = []
        """This node's games in the cluster's directory when it started (a previous life's)."""
        self._orphaned: dict[str, float] = {}
        """Games of other nodes whose host is gone, since when (loop time): they wait to be
        taken over."""
        self._gone: set[str] = set()
        """Nodes noticed gone (their bots forgotten), until they are alive again."""
        self._handlers: dict[type, Callable[[str, Any], None]] = {
            Capacity: self._on_capacity, ToBot: self._on_to_bot, ToConn: self._on_to_conn,
            FromBot: self._on_from_bot, Watching: self._on_watching, GameBegan: self._on_game_began,
            GameEnded: self._on_game_ended, LeaderIs: self._on_leader_is, Standings: self._on_standings,
            TournamentNews: self._on_tournament_news, PliesAsked: self._on_plies_asked,
            PliesTold: self._on_plies_told, GameAsked: self._on_game_asked, GameTold: self._on_game_told,
            Refused: self._on_refused, LadderCall: self._on_ladder_call, LadderAnswer: self._on_ladder_answer,
        }
        self.bus.subscribe(self._heard)
        self.bus.health_listeners.append(self._health_changed)
        self.bus.presumed_dead_listeners.append(self._presumed_dead)

    @property
    def parts(self) -> ServerParts:
        assert self._parts is not None, "bind(parts) first"
        return self._parts

    @property
    def healthy(self) -> bool:
        return self.bus.healthy

    @property
    def leading(self) -> bool:
        return self.lease.valid()

    def bind(self, parts: ServerParts) -> None:
        """Hook into the server (its :class:`~server.arena.Arena`): presence falls back to bots
        elsewhere, the manager to games elsewhere, the ladder publishes through the cluster."""
        self._parts = parts
        parts.presence.elsewhere = self
        parts.manager.elsewhere = self
        parts.manager.host = self.node
        parts.manager.journal = parts.manager.recorder
        parts.manager.listeners.append(self)
        parts.ladder.publish = self._publish_standings
        parts.ladder.may_act = self.lease.valid
        parts.tournaments.publish = self._publish_tournament
        parts.tournaments.may_act = self.lease.valid
        parts.challenges.held_elsewhere = self.challenge_node
        parts.challenges.forward = self.forward

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """Join: connect to Redis (raises :class:`ClusterUnavailable`), learn where bots and
        games are."""
        await self.bus.open()
        try:
            await self._load()
            await self.presence.forget_own()  # bots of this node's previous life
        except (RedisError, OSError) as e:
            await self.bus.close()
            raise ClusterUnavailable(f"Redis at {self.bus.url}: {e}") from None

    def run(self) -> None:
        """Once the server is ready: compete for the pairing lease, watch for nodes that die."""
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self.lease.run(), name=f"lease-{self.node}"),
            loop.create_task(self._tick(), name=f"cluster-tick-{self.node}"),
        ]

    async def _load(self) -> None:
        await self.presence.load()
        holder = await self.bus.redis.get(self.lease.key)
        if holder is not None and self.leader is None:
            self.leader = text_of(holder)
        self.capacity = {text_of(k): int(v) for k, v in (await self.bus.redis.hgetall(CAPACITY)).items()}
        alive = set(await self.bus.nodes())
        self.games = {}
        self._learned = set()
        self._previous = []
        for key, value in (await self.bus.redis.hgetall(GAMES)).items():
            try:
                began = _began.decode(value)
            except msgspec.DecodeError:
                log.warning("node %s: undecodable entry %r in %s dropped", self.node, key, GAMES)
                continue
            if began.host == self.node:
                self._previous.append(began)
            elif began.host in alive:
                self.games[began.game.game_id] = began

    def forget_previous(self) -> None:
        """At start, once this node took back its games of a previous life: the others it ran
        then (their end, or their start, was never stored) are lost."""
        for began in self._previous:
            if began.game.game_id not in self.parts.manager.running:
                self.lose_game(began, f"game {began.game.game_id} did not outlive this node's restart")
        self._previous = []

    def leave(self) -> None:
        """A clean stop: stop running this node's games without ending them (once this node
        is gone, the leader takes them over from their move logs)."""
        released = list(self.parts.manager.running)
        self.parts.manager.release_all()
        if released:
            log.warning("node %s leaves %d game(s) to be taken over", self.node, len(released))

    async def close(self) -> None:
        """Leave: the last frames go out first."""
        try:
            await asyncio.wait_for(self.bus.sent(), 2.0)
        except (TimeoutError, ClusterUnavailable):
            pass
        await cancel_and_wait(self._tasks)
        for task in list(self._spawned):
            task.cancel()
        await self.takeover.close()
        self._tasks = []
        await self.bus.close()

    def _spawn(self, coro: Any, what: str) -> None:
        spawn(self._spawned, coro, f"node {self.node}: {what}")

    async def _tick(self) -> None:
        """Every half second: the leader says it leads (and what the standings are, for nodes that
        joined since) and takes over the games of nodes that are gone; every node looks for
        nodes that died."""
        while True:
            await asyncio.sleep(TICK_S)
            try:
                if self.leading:
                    self.bus.post(None, LeaderIs(self.node))
                    self._publish_standings(self.parts.ladder.table)
                if self.healthy:
                    alive = await self._sweep()
                    if self.leading:
                        await self.takeover.sweep(alive)
            except (RedisError, OSError, ClusterUnavailable) as e:
                log.debug("node %s: cluster tick failed: %s", self.node, e)
            except Exception:
                log.exception("node %s: cluster tick failed", self.node)

    async def _sweep(self) -> set[str]:
        """Nodes that stopped refreshing their liveness are gone: forget their bots (their
        games wait to be taken over, and are given up here if nobody does in time). Returns
        the nodes alive."""
        alive = set(await self.bus.nodes())
        known = {p.node for p in self.presence.elsewhere().values()} | {g.host for g in self.games.values()}
        if self.leader is not None and self.leader not in alive:
            self.leader = None  # seeks wait for the next leader rather than go to a dead one
        self._gone &= known - alive
        for node in sorted(known - alive - {self.node} - self._gone):
            log.warning("node %s: node %s is gone", self.node, node)
            self._gone.add(node)
            for bot in self.presence.forget_node(node):
                self._left(bot)
            await self.presence.sweep()
            self.parts.ladder.wake()
        now = asyncio.get_running_loop().time()
        give_up = self.parts.settings.takeover_budget_s + ORPHAN_GRACE_S
        for game_id in [g for g in self._orphaned if g not in self.games]:
            del self._orphaned[game_id]
        for began in list(self.games.values()):
            game_id = began.game.game_id
            if began.host in alive:
                self._orphaned.pop(game_id, None)
            elif now - self._orphaned.setdefault(game_id, now) > give_up:
                self._host_lost(began, f"the node hosting game {game_id} stopped and nobody took the game over")
        return alive

    # ------------------------------------------------------------------ this node's bots

    async def attached(self, bot: str, conn: Connection) -> Place | None:
        """A bot said hello here: record it for the cluster (an older connection anywhere is
        closed). Without Redis it plays here only (``None``)."""
        try:
            self._post_capacity(bot, conn.max_games)
            return await self.presence.attach(bot, conn.id)
        except ClusterUnavailable as e:
            log.warning("node %s: bot %s is known here only: %s", self.node, bot, e)
            return None

    def detached(self, bot: str, place: Place | None) -> bool:
        """A bot's connection here closed. Whether the bot is still connected (elsewhere)."""
        self.seeking.discard(bot)
        if place is not None:
            self._spawn(self.presence.detach(bot, place), f"detaching bot {bot}")
        now = self.presence.place(bot)
        return now is not None and now.node != self.node

    def capacity_changed(self, bot: str, max_games: int) -> None:
        self._post_capacity(bot, max_games)

    def _post_capacity(self, bot: str, max_games: int) -> None:
        self.capacity[bot] = max_games
        self.bus.post_command(lambda pipe: pipe.hset(CAPACITY, bot, max_games))
        self.bus.post(None, Capacity(bot, max_games))

    def seek(self, bot: str, seeking: bool) -> None:
        """A bot here seeks (or stops): the ladder hears it here if this node leads, else the
        leader does (now, or once one is known: a new leader hears every seeking bot)."""
        ladder = self.parts.ladder
        if not self.leading and not self.healthy:
            raise Refusal("cluster_unavailable", "the ladder's leader cannot be reached now; seek again later")
        if seeking:
            self.seeking.add(bot)
        else:
            self.seeking.discard(bot)
        if self.leading:
            try:
                ladder.seek(bot) if seeking else ladder.unseek(bot)
            except Refusal:
                self.seeking.discard(bot)
                raise
            return
        if self.leader is not None:
            self.bus.post(self.leader, FromBot(bot, Seek() if seeking else Unseek()))

    def refused(self, bot: str, refusal: Refusal) -> None:
        """A protocol error drawn here, for the leader (it fails a qualifying bot)."""
        if self.leader is not None and self.leader != self.node and self.healthy:
            self.bus.post(self.leader, Refused(bot, refusal.code, refusal.message, refusal.game_id))

    # ------------------------------------------------------------------ Presence.elsewhere

    def get(self, bot: str) -> RemoteBot | None:
        place = self.presence.place(bot)
        if place is None or place.node == self.node:
            return None
        return RemoteBot(bot, place.node, self)

    def count(self) -> int:
        return len(self.presence.elsewhere())

    # ------------------------------------------------------------------ GameManager.elsewhere

    def host_of(self, game_id: str) -> str | None:
        began = self.games.get(game_id)
        if began is not None:
            return began.host
        ended = self.ended.get(game_id)
        return ended.host if ended is not None else None

    def forward(self, host: str, bot: str, message: ClientMessage) -> None:
        if not self.healthy:
            raise Refusal("cluster_unavailable", "the node hosting this game cannot be reached now",
                          game_id=getattr(message, "game_id", None), request_id=getattr(message, "request_id", None))
        self.bus.post(host, FromBot(bot, message))

    def awaits(self, bot: str, game_id: str, request_id: int) -> bool:
        return self._awaited.get((bot, game_id)) == request_id

    def running_count(self, bot: str) -> int:
        return sum(1 for g in self.games.values() if bot in g.game.players)

    def game_ids(self, bot: str) -> list[str]:
        return [game_id for game_id, g in self.games.items() if bot in g.game.players]

    def summaries(self) -> list[GameSummary]:
        return [g.game for g in self.games.values()]

    def watch(self, conn: Connection, game_id: str, host: str, on: bool) -> None:
        if on and not self.healthy:
            raise Refusal("cluster_unavailable", "the node hosting this game cannot be reached now", game_id=game_id)
        self.bus.post(host, Watching(conn.id, game_id, on))

    def summary_of(self, game_id: str) -> GameSummary | None:
        """A game of another node as last heard here: running (at the ply its host last
        told), or ended lately; ``None`` if not known here."""
        began = self.games.get(game_id)
        if began is not None:
            return began.game
        ended = self.ended.get(game_id)
        return ended.game if ended is not None else None

    async def learn_game(self, game_id: str) -> str | None:
        """The node that runs (or ran lately) ``game_id`` if another one does. A game not heard
        of yet may have started a moment ago: it is looked up in ``mandala:games``, then asked
        of every node, so one whose id anyone was given (the host knows it as soon as it
        starts) is found; ``None`` if no other node knows it."""
        host = self.host_of(game_id)
        if host is not None or not self.healthy:
            return host
        try:
            value = await self.bus.redis.hget(GAMES, game_id)
        except (RedisError, OSError):
            value = None
        if value is not None:
            try:
                began = _began.decode(value)
            except msgspec.DecodeError:
                began = None
            if began is not None and began.host != self.node:
                self._learn(began)
                return self.host_of(game_id)
        try:
            answer = await self._ask(None, game_id)
        except ClusterUnavailable:
            return None
        if answer is None:
            return None
        host, told = answer
        assert told.game is not None
        if told.game.status == "running":
            self._learn(GameBegan(host, told.game, told.epoch))
        elif game_id not in self.games:
            self._ended(GameEnded(host, told.game))
        return self.host_of(game_id)

    def _learn(self, began: GameBegan) -> None:
        game_id = began.game.game_id
        if game_id not in self.games and game_id not in self.ended:
            self.games[game_id] = began
            self._learned.add(game_id)

    async def game_as_it_stands(self, game_id: str) -> tuple[GameSummary, msgspec.Raw] | None:
        """A game another node runs (or ran lately), as it stands there, with its spectator
        view as the host encoded it; ``None`` if no other node knows it. A host that does not
        answer in time: the game as last heard here, without its view."""
        host = await self.learn_game(game_id)
        if host is None or host == self.node:
            return None
        try:
            answer = await self._ask(host, game_id, view=True)
        except ClusterUnavailable:
            known = self.games.get(game_id)
            return (known.game, NO_VIEW) if known is not None else None
        return (answer[1].game, answer[1].view) if answer is not None and answer[1].game is not None else None

    async def _ask(self, node: str | None, game_id: str, view: bool = False) -> tuple[str, GameTold] | None:
        """Ask ``node`` (``None``: every other node alive) how ``game_id`` stands: the first
        answer that knows it, with the node that gave it; ``None`` once all said they do not.
        Raises :class:`ClusterUnavailable` without Redis or an answer in time."""
        return await self._question(node, lambda call: GameAsked(call, game_id, view), f"how game {game_id} stands")

    async def hear_out(self) -> None:
        """Learn the ply every other node's games reached (storage and ``game_began`` keep a
        running game as it started): asked when a list is read, so a move costs nothing. Each
        node's answer comes after everything it published before (its games' starts and ends),
        so once all answered this node knows the running games as they stand. A node that does
        not answer within :data:`ASK_TIMEOUT_S` (or no Redis): its games as last heard."""
        try:
            await self._question(None, PliesAsked, "the plies of its games")
        except ClusterUnavailable:
            pass

    async def _question(self, node: str | None, message: Callable[[int], Any], what: str) -> tuple[str, GameTold] | None:
        """Post ``message(call)`` to ``node`` (``None``: every node alive) and wait for the
        answers (:meth:`_answered`). Raises :class:`ClusterUnavailable` without Redis, or
        when a node asked has not answered within :data:`ASK_TIMEOUT_S`."""
        if not self.healthy:
            raise ClusterUnavailable(f"node {self.node} cannot reach Redis")
        try:
            waiting = {node} if node is not None else set(await self.bus.nodes()) - {self.node}
        except (RedisError, OSError) as e:
            raise ClusterUnavailable(f"Redis at {self.bus.url}: {e}") from None
        if not waiting:
            return None
        call = next(self._call_ids)
        future: asyncio.Future[tuple[str, GameTold] | None] = asyncio.get_running_loop().create_future()
        self._asks[call] = Asking(future, waiting)
        try:
            self.bus.post(node, message(call))
            return await asyncio.wait_for(future, ASK_TIMEOUT_S)
        except TimeoutError:
            log.warning("node %s: %s did not say %s in time", self.node, ", ".join(sorted(waiting)), what)
            raise ClusterUnavailable(f"{', '.join(sorted(waiting))} did not answer") from None
        finally:
            self._asks.pop(call, None)

    async def published(self) -> None:
        """Wait until what this node posted so far is on Redis: a game it just started is in
        ``mandala:games`` and its ``game_began`` is out, so every node finds it."""
        try:
            await asyncio.wait_for(self.bus.sent(), ASK_TIMEOUT_S)
        except (TimeoutError, ClusterUnavailable) as e:
            log.warning("node %s: what it posted is not on Redis yet (%s)", self.node, e or "timed out")

    def challenge_node(self, challenge_id: str) -> str | None:
        return self._challenges.get(challenge_id)

    # ------------------------------------------------------------------ GameEvents (games hosted here)

    def game_started(self, room: GameRoom, taken_over: bool = False) -> None:
        began = GameBegan(self.node, room.summary(), room.epoch, taken_over)
        payload = _encoder.encode(began)
        self.bus.post_command(lambda pipe: pipe.hset(GAMES, room.id, payload))
        self.bus.post(None, began)

    def adopting(self, room: GameRoom) -> None:
        self.games.pop(room.id, None)
        self._learned.discard(room.id)
        self._orphaned.pop(room.id, None)
        for conn in self.parts.presence.connections:
            if room.id in conn.watching:
                room.spectators.add(conn)
        self.game_started(room, taken_over=True)

    def moved(self, room: GameRoom) -> None:
        began = self.games.get(room.id)
        if began is not None and began.host != self.node:
            self._follow(room.id, began.host)

    def _follow(self, game_id: str, host: str) -> None:
        """The connections here watching ``game_id`` watch it on ``host``, where it runs now
        (which sends each of them the game as it stands)."""
        for conn in self.parts.presence.connections:
            if game_id in conn.watching:
                self.bus.post(host, Watching(conn.id, game_id, True))

    def lose_game(self, began: GameBegan, why: str) -> None:
        """A game whose host is gone cannot go on: every node closes its seats (4010)."""
        log.warning("node %s: %s", self.node, why)
        ended = GameEnded(began.host, msgspec.structs.replace(began.game, status="aborted"), lost=True)
        self._on_game_ended(self.node, ended)  # here at once; the others when they hear it
        self.bus.post_command(lambda pipe: pipe.hdel(GAMES, began.game.game_id))
        self.bus.post(None, ended)

    def game_ended(self, room: GameRoom) -> None:
        self.bus.post_command(lambda pipe: pipe.hdel(GAMES, room.id))
        self.bus.post(None, GameEnded(self.node, room.summary()))
        for spectator in room.spectators:
            if isinstance(spectator, RemoteSpectator):
                self._spectators.pop((spectator.node, spectator.conn), None)

    def rated_game_stored(self, room: GameRoom) -> None:
        pass

    # ------------------------------------------------------------------ presence

    def _replaced(self, bot: str, conn_id: int) -> None:
        """A newer connection of ``bot`` elsewhere: close ours (4009), as on one node."""
        conn = self.parts.presence.get_local(bot)
        if conn is not None and conn.id == conn_id:
            self.parts.presence.detach(bot, conn)
            self.seeking.discard(bot)
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

    def _heard(self, sender: str, message: Any) -> None:
        handler = self._handlers.get(type(message))
        if handler is not None:
            handler(sender, message)

    def _on_capacity(self, sender: str, m: Capacity) -> None:
        self.capacity[m.bot] = m.max_games
        if self.leading:
            self.parts.ladder.wake()

    def _on_to_bot(self, sender: str, m: ToBot) -> None:
        conn = self.parts.presence.get_local(m.bot)
        if conn is None:
            return
        if m.request_id is not None and m.game_id is not None:
            self._awaited[(m.bot, m.game_id)] = m.request_id
        elif m.challenge_id is not None:
            self._challenges[m.challenge_id] = sender
        conn.send(bytes(m.frame))

    def _on_to_conn(self, sender: str, m: ToConn) -> None:
        conn = self.parts.presence.by_id.get(m.conn)
        if conn is None:
            return
        if m.watched is None:
            conn.send(bytes(m.frame))
        else:
            conn.send_watched(m.watched, bytes(m.frame))

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
                log.warning("node %s: %s forwarded %s for bot %s: ignored", self.node, sender, type(msg).__name__, bot)
        except Refusal as r:
            seat = parts.presence.get(bot)
            if seat is not None:
                seat.send(r.to_error())
            parts.ladder.refused(bot, r)

    def _on_watching(self, sender: str, m: Watching) -> None:
        key = (sender, m.conn)
        spectator = self._spectators.get(key)
        if m.on:
            if spectator is None:
                spectator = self._spectators[key] = RemoteSpectator(sender, m.conn, self.bus)
            try:
                self.parts.manager.watch(spectator, m.game_id)
            except Refusal as r:
                spectator.send(r.to_error())
        elif spectator is not None:
            room = self.parts.manager.lookup(m.game_id)
            if room is not None:
                room.unwatch(spectator)
            if not spectator.watching:
                del self._spectators[key]

    def _on_game_began(self, sender: str, m: GameBegan) -> None:
        if m.host == self.node:
            return
        game_id = m.game.game_id
        room = self.parts.manager.running.get(game_id)
        if room is not None and m.epoch <= room.epoch:
            return  # an old announcement of a game this node took over since
        known = self.games.get(game_id)
        if game_id in self._learned:
            self._learned.discard(game_id)
            known = None  # found a moment before its start was heard: /live hears it now
        self.games[game_id] = m
        self._orphaned.pop(game_id, None)
        if room is not None:
            room.lose()  # taken over while this node was paused: it runs there now (spectators follow)
        elif known is None and not m.taken_over:
            self.parts.live.publish(LiveGameStarted(m.game))
        elif m.taken_over:
            self._follow(game_id, m.host)

    def _on_game_ended(self, sender: str, m: GameEnded) -> None:
        if m.host == self.node:
            return
        game_id = m.game.game_id
        began = self.games.pop(game_id, None)
        self._learned.discard(game_id)
        if began is None:
            return
        self._ended(m)
        if m.lost:
            self._host_lost(began, f"game {game_id} was lost with its node")
        else:
            self._forget_game(m.game)
        self.parts.live.publish(LiveGameEnded(m.game))
        if self.leading:
            self.parts.ladder.wake()

    def _ended(self, m: GameEnded) -> None:
        self.ended[m.game.game_id] = m
        while len(self.ended) > ENDED_KEPT:
            self.ended.popitem(last=False)

    def _on_plies_asked(self, sender: str, m: PliesAsked) -> None:
        if sender != self.node:
            self.bus.post(sender, PliesTold(m.call, {g: room.ply for g, room in self.parts.manager.running.items()}))

    def _on_plies_told(self, sender: str, m: PliesTold) -> None:
        games = self.games
        replace = msgspec.structs.replace
        for game_id, ply in m.plies.items():
            began = games.get(game_id)
            if began is not None and began.host == sender and began.game.ply != ply:
                games[game_id] = replace(began, game=replace(began.game, ply=ply))
        self._answered(sender, m.call, None)

    def _on_game_asked(self, sender: str, m: GameAsked) -> None:
        if sender == self.node:
            return  # asked of every node: this one knew it did not know
        room = self.parts.manager.lookup(m.game_id)
        if room is None or room.lost:
            told = GameTold(m.call, None)
        else:
            view = msgspec.Raw(encode(room.spectator_view())) if m.view else NO_VIEW
            told = GameTold(m.call, room.summary(), room.epoch, view)
        self.bus.post(sender, told)

    def _on_game_told(self, sender: str, m: GameTold) -> None:
        self._answered(sender, m.call, (sender, m) if m.game is not None else None)

    def _answered(self, sender: str, call: int, knows: tuple[str, GameTold] | None) -> None:
        """``sender`` answered question ``call``: it is done at the first answer that knows
        the game asked about, or once every node asked has answered."""
        asking = self._asks.get(call)
        if asking is None or asking.future.done():
            return
        asking.waiting.discard(sender)
        if knows is not None or not asking.waiting:
            asking.future.set_result(knows)

    def _host_lost(self, began: GameBegan, why: str) -> None:
        """A game hosted elsewhere cannot go on: its host died or cannot be reached. Its
        seats here are closed (4010): on reconnecting, ``welcome`` lists what still runs."""
        game = began.game
        self.games.pop(game.game_id, None)
        self._forget_game(game)
        for bot in game.players:
            conn = self.parts.presence.get_local(bot)
            if conn is not None:
                log.warning("node %s: closing bot %s: %s", self.node, bot, why)
                conn.close(CLOSE_GAME_HOST_LOST, why[:120])

    def _forget_game(self, game: GameSummary) -> None:
        """A game hosted elsewhere is over here: no decision of it is awaited, nobody watches it."""
        self._learned.discard(game.game_id)
        for bot in game.players:
            self._awaited.pop((bot, game.game_id), None)
        for conn in self.parts.presence.connections:
            conn.watching.discard(game.game_id)

    # ------------------------------------------------------------------ the ladder's leader

    def _gained(self) -> None:
        self.leader = self.node
        self.bus.post(None, LeaderIs(self.node))
        self._spawn(self._lead(), "taking the ladder's lead")

    async def _lead(self) -> None:
        """Lead the ladder from what is stored; this node's seeking bots seek on it at once
        (the other nodes send theirs when they hear ``leader_is``)."""
        ladder = self.parts.ladder
        await ladder.lead()
        await self.parts.tournaments.lead()
        for bot in sorted(self.seeking):
            if ladder.leading and self.parts.presence.get_local(bot) is not None:
                try:
                    ladder.seek(bot)
                except Refusal as r:
                    self.seeking.discard(bot)
                    self.parts.presence.get_local(bot).send(r.to_error())  # type: ignore[union-attr]

    def _lost(self) -> None:
        if self.leader == self.node:
            self.leader = None
        self.parts.ladder.follow()
        self.parts.tournaments.follow()

    def _on_leader_is(self, sender: str, m: LeaderIs) -> None:
        if m.node == self.leader:
            return
        self.leader = m.node
        if m.node == self.node:
            return
        for bot in sorted(self.seeking):  # a new leader learns who seeks from the nodes
            self.bus.post(m.node, FromBot(bot, Seek()))

    def _publish_standings(self, table: LiveStandings) -> None:
        ladder = self.parts.ladder
        if self.healthy:
            places: dict[str, str] = {bot: place for bot, place in ladder.places.items() if place != "new"}
            self.bus.post(None, Standings(table, places, sorted(ladder.seeking)))
        else:
            self.parts.live.publish(table)

    def _on_standings(self, sender: str, m: Standings) -> None:
        if sender != self.node:
            if self.leading:
                return  # a leader that lost its lease late: this node's table wins
            ladder = self.parts.ladder
            ladder.table = m.table
            ladder.places = {bot: place for bot, place in m.places.items() if place in ("listed", "removed")}  # type: ignore[misc]
            ladder.seeking = set(m.seeking)
        if m.table != self._table:
            self._table = m.table
            self.parts.live.publish(m.table)

    def _publish_tournament(self, message: LiveTournament) -> None:
        if self.healthy:
            self.bus.post(None, TournamentNews(message))
        else:
            self.parts.live.publish(message)

    def _on_tournament_news(self, sender: str, m: TournamentNews) -> None:
        self.parts.live.publish(m.message)

    def _on_refused(self, sender: str, m: Refused) -> None:
        if self.leading:
            self.parts.ladder.refused(m.bot, Refusal(m.code, m.message, game_id=m.game_id))  # type: ignore[arg-type]

    async def call_leader(self, op: LadderOp, bot: str | None) -> LadderAnswer:
        """Have the leader carry out an organizer's control; its HTTP answer. Raises
        :class:`ClusterUnavailable` when there is no leader to answer."""
        if self.leader is None or not self.healthy:
            raise ClusterUnavailable("no node leads the ladder now")
        call = next(self._call_ids)
        future: asyncio.Future[LadderAnswer] = asyncio.get_running_loop().create_future()
        self._calls[call] = future
        try:
            self.bus.post(self.leader, LadderCall(call, op, bot))
            return await asyncio.wait_for(future, CALL_TIMEOUT_S)
        except TimeoutError:
            raise ClusterUnavailable(f"the ladder's leader ({self.leader}) did not answer") from None
        finally:
            self._calls.pop(call, None)

    def _on_ladder_call(self, sender: str, m: LadderCall) -> None:
        async def answer() -> None:
            status, body = await answer_of(self.parts.ladder, m.op, m.bot)
            self.bus.post(sender, LadderAnswer(m.call, status, body))

        self._spawn(answer(), f"the organizer's {m.op}")

    def _on_ladder_answer(self, sender: str, m: LadderAnswer) -> None:
        future = self._calls.get(m.call)
        if future is not None and not future.done():
            future.set_result(m)

    # ------------------------------------------------------------------ Redis lost and back

    def _health_changed(self, healthy: bool) -> None:
        if healthy:
            self._spawn(self._rejoin(), "rejoining the cluster")
            return
        parts = self.parts
        for room in list(parts.manager.running.values()):
            if any(self._elsewhere(bot) for bot in room.players):
                log.warning("node %s: game %s aborted: Redis is lost and a seat is on another node", self.node, room.id)
                room.abort()
        for began in list(self.games.values()):
            self._host_lost(began, "the cluster lost Redis: the node hosting your game cannot be reached")

    def _elsewhere(self, bot: str) -> bool:
        place = self.presence.place(bot)
        return place is not None and place.node != self.node and self.parts.presence.get_local(bot) is None

    def _presumed_dead(self) -> None:
        log.error("node %s was taken for dead (its liveness key had expired): checking its games", self.node)
        self._spawn(self._recover(), "recovering after being taken for dead")

    async def _recover(self) -> None:
        """Back from a pause long enough for the others to take this node for dead: drop the
        games another node took over meanwhile (their epoch moved on; one whose stored state
        cannot be read is kept: its next write tells), then announce the bots and the rest."""
        parts = self.parts
        try:
            stored = {g.game_id: g for g in await parts.storage.running_games()}
        except Exception as e:
            log.warning("node %s: could not read which games it still runs (%s)", self.node, e)
            stored = None
        if stored is not None:
            for room in list(parts.manager.running.values()):
                g = stored.get(room.id)
                if g is not None and (g.host != self.node or g.epoch != room.epoch):
                    room.lose()
        await self._rejoin()

    async def _rejoin(self) -> None:
        """Redis is back: learn the cluster again, and tell it this node's bots and games."""
        await self._load()
        parts = self.parts
        for bot, conn in list(parts.presence.local_bots()):
            place = await self.attached(bot, conn)
            if place is not None:
                conn.place = place
        for room in list(parts.manager.running.values()):
            self.game_started(room)
