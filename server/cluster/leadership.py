"""The ladder's leader: which node holds the pairing lease, and what passes between it and the
others. The leader pairs and runs the tournaments; every other node sends it its bots' seeks
and the protocol errors they draw, shows the standings and tournament news it publishes, and
forwards it the organizer's controls (carried out by :mod:`server.ladder.controls`)."""

from __future__ import annotations

import asyncio
import itertools
import secrets
from collections.abc import Callable, Coroutine
from typing import Any

from protocol.messages import LiveGameEnded, LiveStandings, Seek, Unseek
from protocol.tournaments import LiveTournament

from ..common.refusal import Refusal
from ..ladder.controls import LadderOp, answer_of
from .bus import ClusterBus, ClusterUnavailable
from .lease import Lease
from .messages import FromBot, LadderAnswer, LadderCall, LeaderIs, LiveNews, Refused, Standings
from .parts import ServerParts
from .presence import text_of

PAIRING = "pairing"
LEASE_S = 2.0
"""The pairing lease's expiry: a leader that dies is replaced within this and one attempt
(two thirds of a second), so pairing stops for less than 3 s."""
CALL_TIMEOUT_S = 10.0


class Leadership:
    """The pairing lease as this node sees it: who leads (``leader``), whether this node does,
    and the bots here that seek (sent again to each new leader)."""

    def __init__(self, node: str, bus: ClusterBus[Any], parts: ServerParts,
                 spawn: Callable[[Coroutine[Any, Any, Any], str], None]) -> None:
        self.node = node
        self.bus = bus
        self.parts = parts
        self.lease = Lease(bus.redis, PAIRING, node, LEASE_S, gained=self._gained, lost=self._lost)
        self.leader: str | None = None
        self.leader_term: str | None = None
        """The term of the leader's lead last heard (:class:`LeaderIs`)."""
        self.term = ""
        """This node's own lead's term, while it leads."""
        self.seeking: set[str] = set()
        """Bots connected here that seek ladder games (sent again to a new leader)."""
        self._calls: dict[int, asyncio.Future[LadderAnswer]] = {}
        self._call_ids = itertools.count(1)
        self._table: LiveStandings | None = None
        self._spawn = spawn
        self._leads = 0
        """How many times this node gained the lease: a lead whose ladder load the lease's loss
        (and maybe a new gain) overtook goes no further."""

    @property
    def leading(self) -> bool:
        return self.lease.valid()

    def handlers(self) -> dict[type, Callable[[str, Any], None]]:
        """What this part hears on the bus, by the message's type."""
        return {LeaderIs: self._on_leader_is, Standings: self._on_standings,
                LiveNews: self._on_live_news, Refused: self._on_refused,
                LadderCall: self._on_ladder_call, LadderAnswer: self._on_ladder_answer}

    async def load(self) -> None:
        """At start, and when Redis is back: the lease's holder leads, until told otherwise."""
        holder = await self.bus.redis.get(self.lease.key)
        # This node's own name on a lease it does not hold is a former life of it (killed, then
        # started again before the lease expired): nobody leads until the lease is taken.
        if holder is not None and self.leader is None and (text_of(holder) != self.node or self.lease.held):
            self.leader = text_of(holder)

    def announce(self) -> None:
        """Each tick, if this node leads: say so, and what the standings are (for the nodes
        that joined since)."""
        if self.leading:
            self.bus.post(None, LeaderIs(self.node, self.term))
            self.publish_standings(self.parts.ladder.table)

    def alive_now(self, alive: set[str]) -> None:
        """A leader no longer alive leads no more: seeks wait for the next one rather than go
        to a dead one."""
        if self.leader is not None and self.leader not in alive:
            self.leader = None

    # ------------------------------------------------------------------ the lease

    def _gained(self) -> None:
        self.leader = self.node
        self.term = self.leader_term = secrets.token_hex(4)
        self.bus.post(None, LeaderIs(self.node, self.term))
        self._spawn(self._lead(), "taking the ladder's lead")

    async def _lead(self) -> None:
        """Lead the ladder from what is stored; this node's seeking bots seek on it at once
        (the other nodes send theirs when they hear ``leader_is``)."""
        parts = self.parts
        ladder = parts.ladder
        self._leads += 1
        lead = self._leads
        await ladder.lead()
        if lead != self._leads or not self.lease.held:
            return  # the lease was lost meanwhile: the tournaments are not this node's to run
        await parts.tournaments.lead()
        for bot in sorted(self.seeking):
            if ladder.leading and parts.presence.get_local(bot) is not None:
                try:
                    ladder.seek(bot)
                except Refusal as r:
                    self.seeking.discard(bot)
                    parts.presence.get_local(bot).send(r.to_error())  # type: ignore[union-attr]

    def _lost(self) -> None:
        if self.leader == self.node:
            self.leader = None
        self.parts.ladder.follow()
        self.parts.tournaments.follow()

    def _on_leader_is(self, sender: str, m: LeaderIs) -> None:
        if (m.node, m.term) == (self.leader, self.leader_term):
            return
        self.leader, self.leader_term = m.node, m.term
        if m.node == self.node:
            return
        # A new leader, or a new lead of the same one (it lost the lease and took it again:
        # its ladder knows no seeker), learns who seeks from the nodes.
        for bot in sorted(self.seeking):
            self.bus.post(m.node, FromBot(bot, Seek()))

    # ------------------------------------------------------------------ this node's bots, to the leader

    def seek(self, bot: str, seeking: bool) -> None:
        """A bot here seeks (or stops): the ladder hears it here if this node leads, else the
        leader does (now, or once one is known: a new leader hears every seeking bot)."""
        ladder = self.parts.ladder
        if not self.leading and not self.bus.healthy:
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
        if self.leader is not None and self.leader != self.node and self.bus.healthy:
            self.bus.post(self.leader, Refused(bot, refusal.code, refusal.message, refusal.game_id))

    def _on_refused(self, sender: str, m: Refused) -> None:
        if self.leading:
            self.parts.ladder.refused(m.bot, Refusal(m.code, m.message, game_id=m.game_id))  # type: ignore[arg-type]

    # ------------------------------------------------------------------ what the leader publishes

    def publish_standings(self, table: LiveStandings) -> None:
        """The ladder's ``publish``: every node shows the leader's table (this one alone
        without Redis)."""
        ladder = self.parts.ladder
        if self.bus.healthy:
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

    def publish_live(self, message: LiveTournament | LiveGameEnded) -> None:
        """The director's ``publish`` and the ends of the forfeits the leader stores: every
        node's ``/live`` hears them."""
        if self.bus.healthy:
            self.bus.post(None, LiveNews(message))
        else:
            self.parts.live.publish(message)

    def _on_live_news(self, sender: str, m: LiveNews) -> None:
        self.parts.live.publish(m.message)

    # ------------------------------------------------------------------ the organizer's controls

    async def call_leader(self, op: LadderOp, bot: str | None) -> LadderAnswer:
        """Have the leader carry out an organizer's control; its HTTP answer. Raises
        :class:`ClusterUnavailable` when there is no leader to answer."""
        if self.leader is None or not self.bus.healthy:
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
        if not self.leading:  # the sender's word of the leader is stale: the control is not this node's
            self.bus.post(sender, LadderAnswer(m.call, 503, {
                "error": "cluster_unavailable", "message": f"node {self.node} does not lead the ladder now: try again"}))
            return

        async def answer() -> None:
            status, body = await answer_of(self.parts.ladder, m.op, m.bot)
            self.bus.post(sender, LadderAnswer(m.call, status, body))

        self._spawn(answer(), f"the organizer's {m.op}")

    def _on_ladder_answer(self, sender: str, m: LadderAnswer) -> None:
        future = self._calls.get(m.call)
        if future is not None and not future.done():
            future.set_result(m)
