"""Games across nodes: the games other nodes host, as this node knows them (the manager's
``GamesElsewhere``: where each runs, moves and watching forwarded to its host, how it stands
asked of its host), and the games hosted here as the other nodes hear of them (their
``GameEvents``: starts and ends on Redis and the bus, spectators on other nodes). A game whose
host is gone and that nobody takes over is lost here too: its seats here are closed (4010).

**Where the leader's games run.** The ladder's leader only decides games (ladder pairs,
qualification, tournaments); each is hosted by a node that holds one of its seats: of the
nodes its seats are connected to, the one hosting fewer running games as the leader knows
them (its starts still on their way included), and on a tie seat 0's node (a duplicate pair's
two games swap seats, so a tie splits the pair between the two nodes); the house bot has no
node, so a qualification game runs on its bot's node. The leader asks that node with
:class:`~.messages.StartGame` (:meth:`RemoteGames.place`); the node starts it through its own
manager (its row, move log, clock and frames are there) and the cluster hears its start and
end as any game's. On the leader, the end of every game hosted elsewhere reaches the ladder
and the director as a :class:`~server.games.room.PlayedElsewhere` (a finished rated one as
stored first), as a game here reaches them. A game not started within
:data:`PLACE_TIMEOUT_S` (its node died or cannot be reached), or refused by its node (a seat
gone meanwhile), reaches them aborted: the pairing is not made, its slots are free again, and
the ladder pairs anew. A node's death takes over only its own games.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import Counter, OrderedDict
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import msgspec
from redis.exceptions import RedisError

import mandala
from protocol.messages import CLOSE_GAME_HOST_LOST, ClientMessage, GameSummary, LiveGameEnded, LiveGameStarted

from ..common.clock import utc_now
from ..common.logs import about
from ..common.refusal import Refusal
from ..connections.connection import Connection, encode
from ..games.room import PlayedElsewhere
from ..games.seams import GameSetup
from ..games.summary import game_summary
from .bots import RemoteBot, RemoteSpectator
from .bus import PREFIX, ClusterBus, ClusterUnavailable
from .messages import (
    NO_VIEW,
    AbortGame,
    FromBot,
    GameAsked,
    GameBegan,
    GameEnded,
    GameNotStarted,
    GameTold,
    PliesAsked,
    PliesTold,
    StartGame,
    Watching,
)
from .parts import ServerParts

if TYPE_CHECKING:
    from ..games.room import GameRoom

log = logging.getLogger(__name__)

GAMES = f"{PREFIX}:games"
"""Hash: the running games of the cluster, game id → ``game_began`` as JSON."""
ASK_TIMEOUT_S = 2.0
"""How long a node waits for the others to say how their games stand (or that they run no
such game)."""
ENDED_KEPT = 1024
"""Games of other nodes remembered after their end, so a late move still reaches the host
(which answers ``game_over``) rather than getting ``unknown_game``."""
HEAR_OUT_S = 10.0
"""How often a node asks the others which games they run (:meth:`RemoteGames.hear_out`): a game
whose end it did not hear (a message Redis did not take) is ended here within about this long."""
ORPHAN_GRACE_S = 10.0
"""A game whose host is gone and that no node took over nor gave up after ``takeover_budget_s``
and this long (no leader all that time) is given up here: its seats on this node are closed
with 4010."""

PLACE_TIMEOUT_S = 5.0
"""How long the leader waits to hear that a node it asked to start a game did (or could not):
then the game is given up (aborted there, should it start after all) and its pairing is not
made. Longer than a dead node takes to be found and its stored games taken over (about 3 s),
so a game its node stored before dying runs on after a takeover rather than being given up."""

_began = msgspec.json.Decoder(GameBegan)
_encoder = msgspec.json.Encoder()


class Asking:
    """A question to other nodes waiting for its answers: the nodes yet to answer, and (a
    :class:`GameAsked`) the first answer that knows the game, with the node that gave it."""

    __slots__ = ("future", "waiting")

    def __init__(self, future: asyncio.Future[tuple[str, GameTold] | None], waiting: set[str]) -> None:
        self.future = future
        self.waiting = waiting


class Placing:
    """A game the leader asked another node to start, until it hears it began (or not)."""

    __slots__ = ("setup", "host", "since")

    def __init__(self, setup: GameSetup, host: str, since: float) -> None:
        self.setup = setup
        self.host = host
        self.since = since


class RemoteGames:
    """The cluster's games for this node: ``GamesElsewhere`` for the manager, and one of its
    listeners (``GameEvents``) for the games hosted here. ``leading()`` says whether this node
    leads the ladder (a game's end may free its bots to pair, and the ladder and the director
    hear the ends of games hosted elsewhere)."""

    def __init__(self, node: str, bus: ClusterBus[Any], parts: ServerParts, leading: Callable[[], bool],
                 spawn: Callable[[Coroutine[Any, Any, Any], str], None]) -> None:
        self.node = node
        self.bus = bus
        self.parts = parts
        self._leading = leading
        self.games: dict[str, GameBegan] = {}
        """Running games hosted by other nodes, at the ply their hosts last told
        (:meth:`hear_out`); changed only through :meth:`_put` and :meth:`_pop`, which keep the
        counts below."""
        self.placing: dict[str, Placing] = {}
        """Games this node (leading) asked another node to start, not yet heard of."""
        self.hosted: Counter[str] = Counter()
        """Games each other node runs or was asked to start (the placement rule's measure)."""
        self._playing: Counter[str] = Counter()
        """Games each bot plays on other nodes, or was placed in there."""
        self.ended: OrderedDict[str, GameEnded] = OrderedDict()
        self._learned: set[str] = set()
        """Games of other nodes found before their ``game_began`` was heard here."""
        self._asks: dict[int, Asking] = {}
        self._call_ids = itertools.count(1)
        self._awaited: dict[tuple[str, str], int] = {}
        """The decision each game hosted elsewhere awaits of a bot here: (bot, game) → request id."""
        self._spectators: dict[tuple[str, int], RemoteSpectator] = {}
        self._orphaned: dict[str, float] = {}
        """Games of other nodes whose host is gone, since when (loop time): they wait to be
        taken over."""
        self._alive: set[str] | None = None
        """The nodes alive at the last sweep (``None`` before the first)."""
        self._checking: set[str] = set()
        """Games whose host said it runs them no more, their rows being read (:meth:`_end_unheard`)."""
        self._spawn = spawn

    @property
    def healthy(self) -> bool:
        return self.bus.healthy

    def handlers(self) -> dict[type, Callable[[str, Any], None]]:
        """What this part hears on the bus, by the message's type."""
        return {Watching: self._on_watching, GameBegan: self._on_game_began, GameEnded: self._on_game_ended,
                PliesAsked: self._on_plies_asked, PliesTold: self._on_plies_told,
                GameAsked: self._on_game_asked, GameTold: self._on_game_told,
                StartGame: self._on_start_game, GameNotStarted: self._on_game_not_started,
                AbortGame: self._on_abort_game}

    # ------------------------------------------------------------------ the games known, counted

    def _put(self, began: GameBegan) -> None:
        """Know ``began``'s game runs on its host (replacing what was known of it)."""
        game_id = began.game.game_id
        self._pop(game_id)
        self.games[game_id] = began
        self._count(began.host, began.game.players, 1)

    def _pop(self, game_id: str) -> GameBegan | None:
        began = self.games.pop(game_id, None)
        if began is not None:
            self._count(began.host, began.game.players, -1)
        return began

    def _placed(self, game_id: str) -> Placing | None:
        """Forget a game asked of another node (it began, was refused or given up)."""
        placing = self.placing.pop(game_id, None)
        if placing is not None:
            self._count(placing.host, placing.setup.players, -1)
        return placing

    def _count(self, host: str, players: Any, n: int) -> None:
        self.hosted[host] += n
        for bot in players:
            self._playing[bot] += n
            if not self._playing[bot]:
                del self._playing[bot]
        if not self.hosted[host]:
            del self.hosted[host]

    async def load(self) -> list[GameBegan]:
        """Read the cluster's running games (at start, and when Redis is back): those of the
        other nodes are known here from now on, a game whose host is gone as one known before
        its host went (it waits to be taken over: :meth:`sweep`). Returns this node's own,
        which it ran in a previous life if it just started.

        What was known is dropped before the read, so what the bus brings while the map is on
        its way is kept, and an entry older than it is not (:meth:`_outdated`): a game that
        ended meanwhile does not come back as running, nor one taken over meanwhile to its
        former host. Nor is an entry dropped for its host's liveness key, which may lapse and
        come back while the map is read (a node back from a pause, a Redis restarted empty)."""
        self.games = {}
        self.hosted = Counter()
        self._playing = Counter()
        for placing in self.placing.values():
            self._count(placing.host, placing.setup.players, 1)
        self._learned = set()
        own: list[GameBegan] = []
        for key, value in (await self.bus.redis.hgetall(GAMES)).items():
            try:
                began = _began.decode(value)
            except msgspec.DecodeError:
                log.warning("node %s: undecodable entry %r in %s dropped", self.node, key, GAMES)
                continue
            if began.host == self.node:
                own.append(began)
            elif not self._outdated(began):
                self._put(began)
        return own

    def sweep(self, alive: set[str]) -> None:
        """Each tick: a game whose host is not alive waits to be taken over; one that nobody
        took over nor gave up in time is lost here. Spectators of other nodes that watch
        nothing here any more (their games ended, their watch was refused) are forgotten, and
        those of nodes gone stop watching."""
        self._alive = alive
        self._sweep_spectators(alive)
        now = asyncio.get_running_loop().time()
        for game_id in [g for g, p in self.placing.items() if now - p.since > PLACE_TIMEOUT_S]:
            placing = self.placing[game_id]
            if placing.host in alive:
                self.bus.post(placing.host, AbortGame(game_id, "its start was not heard of in time"))
            self._not_started(game_id, f"{placing.host} did not start it within {PLACE_TIMEOUT_S:g} s")
        give_up = self.parts.settings.takeover_budget_s + ORPHAN_GRACE_S
        for game_id in [g for g in self._orphaned if g not in self.games]:
            del self._orphaned[game_id]
        for began in list(self.games.values()):
            game_id = began.game.game_id
            if began.host in alive:
                self._orphaned.pop(game_id, None)
            elif now - self._orphaned.setdefault(game_id, now) > give_up:
                self.host_lost(began, f"the node hosting game {game_id} stopped and nobody took the game over")

    def _sweep_spectators(self, alive: set[str]) -> None:
        for key, spectator in list(self._spectators.items()):
            if spectator.node not in alive:
                for game_id in list(spectator.watching):
                    room = self.parts.manager.lookup(game_id)
                    if room is not None:
                        room.unwatch(spectator)
                spectator.watching.clear()
            if not spectator.watching:
                del self._spectators[key]

    def asked(self, bot: str, game_id: str, request_id: int) -> None:
        """The host of ``game_id`` asked a decision of ``bot`` (connected here)."""
        self._awaited[(bot, game_id)] = request_id

    # ------------------------------------------------------------------ GameManager.elsewhere

    def host_of(self, game_id: str) -> str | None:
        began = self.games.get(game_id)
        if began is not None:
            return began.host
        ended = self.ended.get(game_id)
        return ended.host if ended is not None else None

    def latest_epoch(self, game_id: str) -> int:
        """The newest epoch of ``game_id`` this node knows of: the game's room here (running,
        or ended lately), its host's ``game_began`` or ``game_ended``; 0 if none. A takeover's
        ``game_began`` leaves its new host before any frame of the game at that epoch, so a
        frame of an older epoch that comes after one of the new host's was queued by a former
        host."""
        return max((k.epoch for k in self._known(game_id) if k is not None), default=0)

    def _known(self, game_id: str) -> tuple[GameRoom | None, GameBegan | None, GameEnded | None]:
        """What this node knows of ``game_id``: its room here (running, or ended lately), its
        host's ``game_began`` and its ``game_ended``, each with the epoch it tells of."""
        return self.parts.manager.lookup(game_id), self.games.get(game_id), self.ended.get(game_id)

    def _outdated(self, began: GameBegan) -> bool:
        """Whether this node knows ``began``'s game at its epoch or a later one (:meth:`_known`):
        an entry of ``mandala:games`` read over an await may be older than what the bus
        brought meanwhile, and must not replace it."""
        return any(k is not None and k.epoch >= began.epoch for k in self._known(began.game.game_id))

    def _running_epoch(self, game_id: str) -> int | None:
        room = self.parts.manager.running.get(game_id)
        return room.epoch if room is not None else None

    def forward(self, host: str, bot: str, message: ClientMessage) -> None:
        if not self.healthy:
            raise Refusal("cluster_unavailable", "the node hosting this game cannot be reached now",
                          game_id=getattr(message, "game_id", None), request_id=getattr(message, "request_id", None))
        self.bus.post(host, FromBot(bot, message))

    def paces(self, bot: str, game_id: str, request_id: int) -> bool:
        key = (bot, game_id)
        if self._awaited.get(key) != request_id:
            return False
        del self._awaited[key]  # one answer a decision goes uncharged
        return True

    def running_count(self, bot: str) -> int:
        """The bot's games on other nodes, those asked of a node and not yet begun included."""
        return self._playing.get(bot, 0)

    def game_ids(self, bot: str) -> list[str]:
        return ([game_id for game_id, g in self.games.items() if bot in g.game.players]
                + [game_id for game_id, p in self.placing.items() if bot in p.setup.players])

    def place(self, setup: GameSetup) -> bool:
        host = self.host_for(setup.players)
        if host == self.node:
            return False
        if not self.healthy:
            raise Refusal("cluster_unavailable", f"node {host}, which is to host the game, cannot be reached now")
        self.placing[setup.game_id] = Placing(setup, host, asyncio.get_running_loop().time())
        self._count(host, setup.players, 1)
        self.bus.post(host, StartGame(setup))
        log.debug("node %s: game %s (%s) placed on %s: %s vs %s", self.node, setup.game_id, setup.kind, host,
                  *setup.players, extra=about(game=setup.game_id))
        return True

    def host_for(self, players: tuple[str, str]) -> str:
        """The placement rule (see the module's docstring): of the nodes holding the seats,
        the one hosting fewer games; on a tie, seat 0's; this node if no seat has a node."""
        nodes = [n for n in (self._node_of(bot) for bot in players) if n is not None]
        return min(nodes, key=self._hosting) if nodes else self.node

    def _hosting(self, node: str) -> int:
        return len(self.parts.manager.running) if node == self.node else self.hosted.get(node, 0)

    def _node_of(self, bot: str) -> str | None:
        """The node ``bot`` is connected to (``None``: none, or an in-process seat)."""
        presence = self.parts.presence
        if presence.get_local(bot) is not None:
            return self.node
        seat = presence.get(bot)
        return seat.node if isinstance(seat, RemoteBot) else None

    def abort(self, host: str, game_id: str, why: str) -> None:
        if self.healthy:
            self.bus.post(host, AbortGame(game_id, why))

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
            self._ended(GameEnded(host, told.game, epoch=told.epoch))
        return self.host_of(game_id)

    def _learn(self, began: GameBegan) -> None:
        if not self._outdated(began):
            self._put(began)
            self._learned.add(began.game.game_id)

    async def game_as_it_stands(self, game_id: str) -> tuple[GameSummary, msgspec.Raw] | None:
        """A game another node runs (or ran lately), as it stands there, with its spectator
        view as the host encoded it; ``None`` if no other node knows it. A host that does not
        answer in time: the game as last heard here, without its view."""
        host = await self.learn_game(game_id)
        if host is None or host == self.node:
            return None
        known = self.games.get(game_id)
        as_last_heard = (known.game, NO_VIEW) if known is not None else None
        if self._alive is not None and host not in self._alive:
            return as_last_heard  # a dead host answers nobody: no need to wait for it
        try:
            answer = await self._ask(host, game_id, view=True)
        except ClusterUnavailable:
            return as_last_heard
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

    def adopting(self, room: GameRoom) -> None:
        self._pop(room.id)
        self._placed(room.id)  # its node stored it, then died before the start was heard
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

    # ------------------------------------------------------------------ GameEvents (games hosted here)

    def game_started(self, room: GameRoom, taken_over: bool = False) -> None:
        began = GameBegan(self.node, room.summary(), room.epoch, taken_over)
        payload = _encoder.encode(began)
        self.bus.post_command(lambda pipe: pipe.hset(GAMES, room.id, payload))
        self.bus.post(None, began)

    def unlist(self, game_ids: list[str]) -> None:
        """Take out of ``mandala:games`` games this node hosted and runs no more."""
        if game_ids:
            self.bus.post_command(lambda pipe: pipe.hdel(GAMES, *game_ids))

    def game_ended(self, room: GameRoom) -> None:
        self.bus.post_command(lambda pipe: pipe.hdel(GAMES, room.id))
        self.bus.post(None, GameEnded(self.node, room.summary(), slot=room.slot, first_player=room.game.first_player,
                                      epoch=room.epoch))

    def rated_game_stored(self, room: GameRoom) -> None:
        pass

    # ------------------------------------------------------------------ a game lost with its host

    def lose_game(self, began: GameBegan, why: str) -> None:
        """A game whose host is gone cannot go on: every node closes its seats (4010)."""
        log.warning("node %s: %s", self.node, why)
        ended = GameEnded(began.host, msgspec.structs.replace(began.game, status="aborted"), lost=True,
                          epoch=began.epoch)
        self._on_game_ended(self.node, ended)  # here at once; the others when they hear it
        self.bus.post_command(lambda pipe: pipe.hdel(GAMES, began.game.game_id))
        self.bus.post(None, ended)

    def host_lost(self, began: GameBegan, why: str) -> None:
        """A game hosted elsewhere cannot go on: its host died or cannot be reached. Its
        seats here are closed (4010): on reconnecting, ``welcome`` lists what still runs."""
        game = began.game
        self._pop(game.game_id)
        self._forget_game(game)
        for bot in game.players:
            conn = self.parts.presence.get_local(bot)
            if conn is not None:
                log.warning("node %s: closing bot %s: %s", self.node, bot, why, extra=about(bot=bot))
                conn.close(CLOSE_GAME_HOST_LOST, why[:120])

    def _forget_game(self, game: GameSummary) -> None:
        """A game hosted elsewhere is over here: no decision of it is awaited, nobody watches it."""
        self._learned.discard(game.game_id)
        for bot in game.players:
            self._awaited.pop((bot, game.game_id), None)
        for conn in self.parts.presence.connections:
            conn.watching.discard(game.game_id)

    # ------------------------------------------------------------------ what the bus brings

    def _on_watching(self, sender: str, m: Watching) -> None:
        key = (sender, m.conn)
        spectator = self._spectators.get(key)
        if m.on:
            if spectator is None:
                spectator = self._spectators[key] = RemoteSpectator(sender, m.conn, self.bus, self._running_epoch)
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
        if known is not None and m.epoch < known.epoch:
            return  # a former host announcing again a game another node took over since
        if game_id in self._learned:
            self._learned.discard(game_id)
            known = None  # found a moment before its start was heard: /live hears it now
        self._placed(game_id)
        self._put(m)
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
        began = self._pop(game_id)
        placed = self._placed(game_id)
        self._learned.discard(game_id)
        self._ended(m)  # even unknown here: a read of the map under way must not find it running
        if began is None and placed is None:
            return
        if began is not None:
            if m.lost:
                self.host_lost(began, f"game {game_id} was lost with its node")
            else:
                self._forget_game(m.game)
            self.parts.live.publish(LiveGameEnded(m.game))
        if self._leading():
            self._decided_game_ended(PlayedElsewhere(m.game, slot=m.slot, first_player=m.first_player, host=m.host,
                                                     decision_ms=self.parts.settings.decision_ms))
            self.parts.ladder.wake()

    def _decided_game_ended(self, room: PlayedElsewhere) -> None:
        """The leader's ladder and director hear a game hosted elsewhere end as they hear one
        here: a finished rated game as stored (its host stored it, ratings and pair totals,
        before it said it ended), then its end."""
        parts = self.parts
        deciders = (parts.ladder, parts.tournaments)
        if room.rated and room.status == "finished":
            for decider in deciders:
                try:
                    decider.rated_game_stored(room)
                except Exception:
                    log.exception("node %s: a listener failed on the stored rated game %s", self.node, room.id,
                                  extra=about(game=room.id))
        for decider in deciders:
            try:
                decider.game_ended(room)
            except Exception:
                log.exception("node %s: a listener failed on the end of game %s", self.node, room.id,
                              extra=about(game=room.id))

    # ------------------------------------------------------------------ games the leader decided

    def _on_start_game(self, sender: str, m: StartGame) -> None:
        """The leader asks this node to host a game: start it, or say why not."""
        setup = m.setup
        manager = self.parts.manager
        gone = [bot for bot in setup.players if not manager.can_play(bot)]
        try:
            if gone:
                raise Refusal("bot_offline", f"{' and '.join(gone)} left before the game started")
            manager.start_game(setup.players, setup.deal, rated=setup.rated, kind=setup.kind, pair_id=setup.pair_id,
                               decision_ms=setup.decision_ms, tournament=setup.tournament, game_id=setup.game_id)
        except Refusal as r:
            self._refuse_start(sender, setup, r.code, r.message)
        except (ValueError, mandala.SetupError) as e:
            self._refuse_start(sender, setup, "bad_setup", str(e))

    def _refuse_start(self, leader: str, setup: GameSetup, code: str, message: str) -> None:
        log.info("node %s: game %s for %s not started: %s", self.node, setup.game_id, leader, message,
                 extra=about(game=setup.game_id))
        self.bus.post(leader, GameNotStarted(setup.game_id, code, message))

    def _on_game_not_started(self, sender: str, m: GameNotStarted) -> None:
        placing = self.placing.get(m.game_id)
        if placing is not None and placing.host == sender:
            self._not_started(m.game_id, f"{sender} did not start it: {m.message}")

    def _not_started(self, game_id: str, why: str) -> None:
        """A game asked of another node will not run: the ladder and the director (if this
        node leads) hear it ended aborted, and its bots' slots are free again."""
        placing = self._placed(game_id)
        if placing is None:
            return
        log.warning("node %s: game %s (%s, %s vs %s) not started: %s", self.node, game_id, placing.setup.kind,
                    *placing.setup.players, why, extra=about(game=game_id))
        if not self._leading():
            return
        setup = placing.setup
        game = GameSummary(game_id=game_id, players=list(setup.players), kind=setup.kind, rated=setup.rated,
                           pair_id=setup.pair_id, status="aborted", started=utc_now(), ended=utc_now(), ply=0,
                           result=None, tournament_id=setup.tournament_id)
        self._decided_game_ended(PlayedElsewhere(game, slot=setup.slot, first_player=setup.deal.first_player,
                                                 host=placing.host,
                                                 decision_ms=setup.decision_ms or self.parts.settings.decision_ms))
        self.parts.ladder.wake()

    def _on_abort_game(self, sender: str, m: AbortGame) -> None:
        room = self.parts.manager.running.get(m.game_id)
        if room is not None:
            log.warning("node %s: game %s aborted for %s: %s", self.node, m.game_id, sender, m.why,
                        extra=about(game=m.game_id))
            room.abort()

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
        told = 0
        for game_id, ply in m.plies.items():
            began = games.get(game_id)
            if began is not None and began.host == sender:
                told += 1
                if began.game.ply != ply:
                    games[game_id] = replace(began, game=replace(began.game, ply=ply))
        # A game the host no longer runs, whose end was not heard here (the host says what it
        # runs after all it published before): its announcement was lost with a batch Redis failed on.
        # Looked for only when the host runs fewer of them than this node knows of.
        known = self.hosted.get(sender, 0) - sum(1 for p in self.placing.values() if p.host == sender)
        missing = [g for g in games.values() if g.host == sender and g.game.game_id not in m.plies] if told < known else []
        for began in missing:
            game_id = began.game.game_id
            if game_id not in self._checking:
                self._checking.add(game_id)
                self._spawn(self._end_unheard(began), f"reading game {game_id}")
        self._answered(sender, m.call, None)

    async def _end_unheard(self, began: GameBegan) -> None:
        """End here, as its stored row says, a game its host runs no more and whose end this node
        did not hear. A row still running is a game released by a host that stops, for another
        node to take over: it is left as it is."""
        game_id = began.game.game_id
        try:
            row = await self.parts.storage.get_game(game_id)
        finally:
            self._checking.discard(game_id)
        if row is None or row.status == "running" or self.games.get(game_id) is not began:
            return  # not over, or heard of meanwhile (its end, or another host)
        log.warning("node %s: game %s ended on %s unheard of here (a message Redis did not take): ended as stored",
                    self.node, game_id, began.host, extra=about(game=game_id))
        self._on_game_ended(began.host, GameEnded(began.host, game_summary(row), slot=row.slot,
                                                  first_player=row.first_player, epoch=began.epoch))

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
