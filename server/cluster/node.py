"""This node's part in a cluster: its life (join, tick, leave), and what the bus brings handed
to the part it is for. The parts, each in a module of its own:

- :mod:`.bots`: where bots are; a bot connected to another node as a seat here
  (:class:`~.bots.RemoteBot`);
- :mod:`.remote_games`: where games run; the games other nodes host, as the game manager sees
  them, and this node's games as the others hear of them;
- :mod:`.leadership`: the ladder's leader (the pairing lease) and what passes between it and
  the other nodes;
- :mod:`.takeover`: the games of a node that died, rebuilt from their move logs.

A game runs on the node that started it (its *host*), with its clock, its request ids and its
record, exactly as on one node. Its seats may be connected anywhere: the host sends a seat's
frames to the node that holds the connection, which writes them as they came; that node sends
what the bot says about the game back to the host. Every node knows every running game's host
from ``game_began`` and ``game_ended`` broadcasts (and the hash ``mandala:games``, read at
start), every bot's node from presence, and the pairing leader from ``leader_is``. The ladder
runs on the node holding the pairing lease; the others pass it their bots' seeks and the
organizer's controls, and answer ``GET /api/ladder`` and ``/live`` with the standings it
broadcasts. The leader only decides the ladder's and the tournaments' games: each is hosted by
the node of one of its seats (the rule is in :mod:`.remote_games`), so their work spreads over
the nodes and a node's death moves only the games it hosted.

Faults: Redis lost — games whose seats this node holds both go on; a game with a seat on
another node is aborted by its host, and a bot here whose game another node hosts is closed
with 4010 (its game is gone from here; on reconnecting, ``welcome`` lists what still runs);
no game or challenge across nodes starts (``cluster_unavailable``). When Redis is back the
node announces its bots and games again. A node that dies: its bots count as gone, and its
games are taken over by the ladder's leader from their move logs; a node that stops (SIGTERM)
leaves its games to be taken over the same way. A node that finds it was taken for dead (its
liveness key expired while it was paused) drops the games another node took meanwhile, then
announces its bots and games again.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Coroutine
from typing import Any

import msgspec
from redis.exceptions import RedisError

from protocol.messages import GameSummary

from ..common.callbacks import cancel_and_wait, spawn
from ..common.logs import about
from ..common.refusal import Refusal
from ..connections.connection import Connection
from ..ladder.controls import LadderOp
from .bots import ClusterBots
from .bus import ClusterBus, ClusterUnavailable
from .leadership import Leadership
from .lease import Lease
from .messages import ClusterMessage, GameBegan, LadderAnswer
from .parts import ServerParts
from .presence import ClusterPresence, Place
from .remote_games import HEAR_OUT_S, RemoteGames
from .takeover import Takeover

log = logging.getLogger(__name__)

TICK_S = 0.5
"""How often the leader says it leads and each node looks for nodes that died (a node is
gone once its liveness key, refreshed every two thirds of a second, is 2 s old)."""


class ClusterNode:
    """The cluster as this node sees it; ``bind(parts)`` hooks it into the server."""

    # Made by bind(), which has the server's parts they work with.
    parts: ServerParts
    bots: ClusterBots
    remote_games: RemoteGames
    leadership: Leadership

    def __init__(self, url: str, node: str) -> None:
        self.node = node
        self.bus: ClusterBus[Any] = ClusterBus(url, node, ClusterMessage)
        self.takeover = Takeover(self)
        self._handlers: dict[type, Callable[[str, Any], None]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._spawned: set[asyncio.Task[Any]] = set()
        self._previous: list[GameBegan] = []
        """This node's games in the cluster's directory when it started (a previous life's)."""
        self._gone: set[str] = set()
        """Nodes noticed gone (their bots forgotten), until they are alive again."""
        self._back_at = -math.inf
        """When Redis last came back (the loop's clock): the others' liveness keys could not be
        refreshed while it was lost, so none is judged until one liveness period has passed."""
        self._heard_out_at = -math.inf
        """When this node last asked the others which games they run (the loop's clock)."""

    def bind(self, parts: ServerParts) -> None:
        """Hook into the server (its :class:`~server.arena.Arena`): presence falls back to bots
        elsewhere, the manager to games elsewhere, the ladder publishes through the cluster."""
        self.parts = parts
        self.leadership = leadership = Leadership(self.node, self.bus, parts, self._spawn)
        leading = leadership.lease.valid
        self.remote_games = games = RemoteGames(self.node, self.bus, parts, leading, self._spawn)
        self.bots = bots = ClusterBots(self.node, self.bus, parts, leading=leading, unseek=leadership.seeking.discard,
                                       asked=games.asked, refused=leadership.refused,
                                       latest_epoch=games.latest_epoch, spawn=self._spawn)
        self._handlers = bots.handlers() | games.handlers() | leadership.handlers()
        self.bus.subscribe(self._heard)
        self.bus.health_listeners.append(self._health_changed)
        self.bus.presumed_dead_listeners.append(self._presumed_dead)
        parts.presence.elsewhere = bots
        parts.manager.elsewhere = games
        parts.manager.host = self.node
        parts.manager.journal = parts.manager.recorder
        parts.manager.listeners.append(games)
        parts.ladder.publish = leadership.publish_standings
        parts.ladder.announce_end = leadership.publish_live
        parts.ladder.may_act = leading
        parts.tournaments.publish = parts.tournaments.announce_end = leadership.publish_live
        parts.tournaments.may_act = leading
        parts.challenges.held_elsewhere = bots.challenge_node
        parts.challenges.forward = games.forward

    @property
    def healthy(self) -> bool:
        return self.bus.healthy

    @property
    def leading(self) -> bool:
        return self.leadership.leading

    @property
    def leader(self) -> str | None:
        """The node that leads the ladder, as far as this node has heard."""
        return self.leadership.leader

    @property
    def lease(self) -> Lease:
        return self.leadership.lease

    @property
    def presence(self) -> ClusterPresence:
        return self.bots.presence

    @property
    def games(self) -> dict[str, GameBegan]:
        """The running games other nodes host, as last heard here."""
        return self.remote_games.games

    @property
    def games_starting(self) -> int:
        """The games this node (as the ladder's leader) asked other nodes to start and has not
        yet heard started or given up."""
        return len(self.remote_games.placing)

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
        await self.bots.load()
        await self.leadership.load()
        self._previous = await self.remote_games.load()

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
        self.takeover.leaving = True  # until it is gone, it must not take them back
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

    def _spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        spawn(self._spawned, coro, f"node {self.node}: {what}")

    async def _tick(self) -> None:
        """Every half second: the leader says it leads (and what the standings are, for nodes that
        joined since) and takes over the games of nodes that are gone; every node looks for
        nodes that died."""
        while True:
            await asyncio.sleep(TICK_S)
            try:
                self.leadership.announce()
                back_for = asyncio.get_running_loop().time() - self._back_at
                if self.healthy and back_for > self.bus.alive_s:
                    alive = await self._sweep()
                    if self.leading:
                        await self.takeover.sweep(alive)
                    now = asyncio.get_running_loop().time()
                    if now - self._heard_out_at >= HEAR_OUT_S:  # ends this node missed are found
                        self._heard_out_at = now
                        self._spawn(self.remote_games.hear_out(), "asking the others which games they run")
            except (RedisError, OSError, ClusterUnavailable) as e:
                log.debug("node %s: cluster tick failed: %s", self.node, e)
            except Exception:
                log.exception("node %s: cluster tick failed", self.node)

    async def _sweep(self) -> set[str]:
        """Nodes that stopped refreshing their liveness are gone: forget their bots (their
        games wait to be taken over, and are given up here if nobody does in time). Returns
        the nodes alive."""
        # Where the bots are, as known before asking who is alive: while the answer comes, a
        # node taken for dead may come back and announce its bots again, which are not gone.
        places = self.presence.elsewhere()
        alive = set(await self.bus.nodes())
        known = {p.node for p in places.values()} | {g.host for g in self.games.values()}
        self.leadership.alive_now(alive)
        self._gone &= known - alive
        for node in sorted(known - alive - {self.node} - self._gone):
            log.warning("node %s: node %s is gone", self.node, node)
            self._gone.add(node)
            await self.bots.node_gone(node, places)
            self.parts.ladder.wake()
        self.remote_games.sweep(alive)
        return alive

    def _heard(self, sender: str, message: Any) -> None:
        """What the bus brings, to the part it is for."""
        handler = self._handlers.get(type(message))
        if handler is not None:
            handler(sender, message)

    # ------------------------------------------------------------------ for the HTTP layer and takeover
    # What the server and takeover call on the node, done by the part it concerns.

    async def attached(self, bot: str, conn: Connection) -> Place | None:
        return await self.bots.attached(bot, conn)

    def detached(self, bot: str, place: Place | None) -> bool:
        return self.bots.detached(bot, place)

    def capacity_changed(self, bot: str, max_games: int) -> None:
        self.bots.capacity_changed(bot, max_games)

    async def token_retired(self, bot: str, token_hash: str) -> None:
        await self.bots.token_retired(bot, token_hash)

    def seek(self, bot: str, seeking: bool) -> None:
        self.leadership.seek(bot, seeking)

    def refused(self, bot: str, refusal: Refusal) -> None:
        self.leadership.refused(bot, refusal)

    async def call_leader(self, op: LadderOp, bot: str | None) -> LadderAnswer:
        return await self.leadership.call_leader(op, bot)

    def host_of(self, game_id: str) -> str | None:
        return self.remote_games.host_of(game_id)

    def summaries(self) -> list[GameSummary]:
        return self.remote_games.summaries()

    async def learn_game(self, game_id: str) -> str | None:
        return await self.remote_games.learn_game(game_id)

    async def game_as_it_stands(self, game_id: str) -> tuple[GameSummary, msgspec.Raw] | None:
        return await self.remote_games.game_as_it_stands(game_id)

    async def published(self) -> None:
        await self.remote_games.published()

    def lose_game(self, began: GameBegan, why: str) -> None:
        self.remote_games.lose_game(began, why)

    # ------------------------------------------------------------------ Redis lost and back

    def _health_changed(self, healthy: bool) -> None:
        if healthy:
            self._back_at = asyncio.get_running_loop().time()
            self._spawn(self._rejoin(), "rejoining the cluster")
            return
        for room in list(self.parts.manager.running.values()):
            if any(self.bots.held_elsewhere(bot) for bot in room.players):
                log.warning("node %s: game %s aborted: Redis is lost and a seat is on another node", self.node, room.id,
                            extra=about(game=room.id))
                room.abort()
        for began in list(self.games.values()):
            self.remote_games.host_lost(began, "the cluster lost Redis: the node hosting your game cannot be reached")

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
            place = await self.bots.attached(bot, conn)
            if place is None:
                continue
            if parts.presence.get_local(bot) is conn:
                conn.place = place
            else:  # it closed (or was replaced) meanwhile: its goodbye went before this attachment
                try:
                    await self.presence.detach(bot, place)
                except ClusterUnavailable as e:
                    log.warning("node %s: bot %s left while Redis failed again: %s", self.node, bot, e,
                                extra=about(bot=bot))
        try:  # the bots that left while Redis was lost: their goodbye could not reach it
            await self.presence.forget_own({bot: conn.id for bot, conn in parts.presence.local_bots()})
        except ClusterUnavailable as e:
            log.warning("node %s: could not forget the bots that left while Redis was lost: %s", self.node, e)
        for room in list(parts.manager.running.values()):
            self.remote_games.game_started(room)
        # Its games the map still lists that it runs no more: their removal was lost with Redis.
        self.remote_games.unlist([b.game.game_id for b in self._previous if b.game.game_id not in parts.manager.running])
        try:
            await self.bots.check_tokens()
        except Exception as e:  # storage failing too: such a connection stays until it closes
            log.warning("node %s: could not check its bots' tokens: %s", self.node, e)
