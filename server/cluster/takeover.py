"""Games that outlive their node: another node rebuilds them from their move logs.

In a cluster every move is stored in its game's move log (``game_moves``) before it takes
effect (``server/games/room.py``), and each running game's row names its host and its *epoch*.
Whoever takes a game over moves it to the next epoch in the same transaction that reads its
log (:meth:`~server.storage.base.Storage.claim_game`); from then on the database refuses
every move or end the former host tries to store at the old epoch, so however long that
host was paused and whatever it believes, exactly one node applies the game's moves.

Who takes games over:

- **the ladder's leader** (the node holding the pairing lease), for every game stored as
  running whose host is not alive (its liveness key expired, or it left): it looks on each
  cluster tick (every half second), so a game is running again within about 3 s of its
  node's death (2 s for the key to expire, then a tick); a game is claimed on the first
  attempt, or retried with backoff for ``takeover_budget_s`` (30 s), after which it is given
  up: its seats are closed with 4010, and it is stored ``aborted`` as soon as the database
  takes it;
- **a node that starts**, for its own games of a previous life (a restart quicker than its
  liveness key's expiry, which nobody else noticed).

The rebuilt game asks the decision that was due again with a full clock and a request id of
the new epoch (``server/games/room.py``, :data:`~server.games.room.REQUEST_EPOCH`); its seats get
``game_start`` with ``resumed: true`` and their view first, wherever they are connected;
spectators follow it to its new host. A game the cluster knew of whose host died before
storing its start is lost the same way (4010), at once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from mandala import RecordError

from ..common.callbacks import spawn
from ..common.clock import utc_now
from ..common.logs import about
from ..storage.base import RunningGame
from .bus import ClusterBus
from .lease import Lease
from .messages import GameBegan
from .parts import ServerParts

log = logging.getLogger(__name__)

RETRY_MIN_S, RETRY_MAX_S = 0.05, 1.0


class TakingNode(Protocol):
    """What taking games over needs of this node's part in the cluster (the cluster node):
    named here, so that this module does not import the node that holds it."""

    @property
    def node(self) -> str: ...

    @property
    def parts(self) -> ServerParts: ...

    @property
    def bus(self) -> ClusterBus[Any]: ...

    @property
    def lease(self) -> Lease:
        """The pairing lease: only its holder takes over other nodes' games."""

    @property
    def games(self) -> dict[str, GameBegan]:
        """The running games other nodes host, as this node knows them."""

    def forget_previous(self) -> None: ...

    def lose_game(self, began: GameBegan, why: str) -> None: ...


class Takeover:
    """This node's part in taking over games (see the module's docstring)."""

    def __init__(self, cluster: TakingNode) -> None:
        self.cluster = cluster
        self.taking: set[str] = set()
        """Games this node is claiming now."""
        self.given_up: dict[str, int] = {}
        """Games given up (their seats told), by the epoch to store them aborted at."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self.leaving = False
        """This node stops: it leaves its games to another node and takes none over (those it
        just released, stored as running here and running nowhere, would look orphaned)."""

    @property
    def node(self) -> str:
        return self.cluster.node

    async def adopt_own(self) -> int:
        """At start: take back this node's games of a previous life; how many were stored
        as running here."""
        mine = [g for g in await self.cluster.parts.storage.running_games() if g.host == self.node]
        self.taking.update(g.game_id for g in mine)
        await asyncio.gather(*(self._take(g, lambda: True) for g in mine))
        self.cluster.forget_previous()
        return len(mine)

    async def sweep(self, alive: set[str]) -> None:
        """The leader's look, each tick: claim every running game whose host is not alive;
        a game the cluster knew whose host is gone and that is not stored as running is lost.
        Not while Redis is younger than a liveness key (restarted empty: the living nodes'
        keys may not be back yet), nor once this node is leaving."""
        parts = self.cluster.parts
        if self.leaving or await self.cluster.bus.data_age_s() < self.cluster.bus.alive_s * 1.5:
            return
        try:
            stored: list[RunningGame] | None = await parts.storage.running_games()
        except Exception as e:  # storage fails: take over what the cluster knows, retrying
            log.debug("node %s: reading the running games failed: %s", self.node, e)
            stored = None
        orphans = [g for g in stored or () if g.host is None or g.host not in alive or g.host == self.node]
        if stored is None:
            orphans = [RunningGame(b.game.game_id, b.host, b.epoch) for b in self.cluster.games.values()
                       if b.host not in alive]
        else:
            running = {g.game_id for g in stored}
            for began in list(self.cluster.games.values()):
                game_id = began.game.game_id
                if began.host not in alive and game_id not in running and game_id not in self.taking:
                    self.cluster.lose_game(began, f"the node hosting game {game_id} stopped before it was stored")
        for g in orphans:
            if g.game_id in self.taking or g.game_id in self.given_up or g.game_id in parts.manager.running:
                continue
            self.taking.add(g.game_id)
            spawn(self._tasks, self._take(g, self._may_take), f"taking over game {g.game_id}")

    def _may_take(self) -> bool:
        return self.cluster.lease.valid() and not self.leaving

    async def _take(self, g: RunningGame, allowed: Any) -> None:
        """Claim ``g`` and run it here; retried while storage fails, given up after
        ``takeover_budget_s`` (stop early if ``allowed()`` turns false: the lease was lost)."""
        parts = self.cluster.parts
        budget = parts.settings.takeover_budget_s
        loop = asyncio.get_running_loop()
        deadline, backoff = loop.time() + budget, RETRY_MIN_S
        try:
            while True:
                if not allowed():
                    return
                try:
                    claim = await parts.storage.claim_game(g.game_id, g.epoch, self.node)
                    break
                except Exception as e:
                    if loop.time() + backoff > deadline:
                        log.error("node %s: game %s: its move log could not be read for %g s (%s): given up",
                                  self.node, g.game_id, budget, e, extra=about(game=g.game_id))
                        self._give_up(g.game_id, g.epoch, "its move log could not be read")
                        return
                    if backoff == RETRY_MIN_S:
                        log.warning("node %s: taking over game %s failed (%s); retrying for up to %g s",
                                    self.node, g.game_id, e, budget, extra=about(game=g.game_id))
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, RETRY_MAX_S)
            if claim is None:
                return  # another node took it, or it ended
            try:
                parts.manager.adopt(claim)
            except RecordError as e:
                log.error("node %s: game %s cannot be rebuilt: %s", self.node, g.game_id, e.message,
                          extra=about(game=g.game_id))
                self._give_up(g.game_id, claim.row.epoch, "its move log does not replay")
        finally:
            self.taking.discard(g.game_id)

    def _give_up(self, game_id: str, epoch: int, why: str) -> None:
        """Tell the cluster the game is lost (its seats are closed with 4010) and store it
        aborted once storage takes it."""
        began = self.cluster.games.get(game_id)
        if began is not None:
            self.cluster.lose_game(began, f"game {game_id} could not be taken over: {why}")
        self.given_up[game_id] = epoch
        spawn(self._tasks, self._abandon(game_id, epoch), f"aborting game {game_id}")

    async def _abandon(self, game_id: str, epoch: int) -> None:
        backoff = RETRY_MIN_S
        try:
            while True:
                try:
                    await self.cluster.parts.storage.abandon_game(game_id, epoch, utc_now())
                    return
                except Exception as e:
                    log.debug("node %s: storing game %s aborted failed: %s", self.node, game_id, e,
                              extra=about(game=game_id))
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, RETRY_MAX_S)
        finally:
            self.given_up.pop(game_id, None)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
