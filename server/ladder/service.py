"""The ladder as it runs: who seeks, where each bot stands, and the pairing of games.

Everything here runs on the event loop. The pairing loop wakes at once after a game's end or
a bot's return, and at least every ``pairing_interval_s``; it never starts a game from inside
another game's step. A pass runs in slices of about ``PAIRING_SLICE_S`` (``run_in_slices``),
checking each game again before it starts, so ten thousand bots seeking at once after a restart
never hold the games' clocks and frames for more than a few milliseconds; and the next pass
waits nine times as long as the last held the loop, so pairing takes at most a tenth of it
however often bots seek or leave. Its parts: qualification against the house bot
(``qualification.py``), the standings table (``standings.py``), who plays whom
(``matchmaking.py`` below ``pairing_large_from`` active bots, ``large.py`` from there).

- **Qualification.** A bot not yet listed qualifies first (``qualification.py``); when it
  passes, it is listed here, stored so it survives restarts.
- **Duplicate pairs.** A ladder pairing is two rated games on the same deal (``pairs.py``)
  with the seats swapped. The return game starts when the first ends, once both bots are
  connected with a free slot (even if they stopped seeking or the ladder was paused, so pairs
  stay whole); an aborted first game drops the pair.
- **Standings.** Recomputed (coalesced) after each change and pushed to the live stream
  (``standings.py``).
- **Tournament games first.** A bot's slots held for its due tournament games (``held``, the
  tournament director's) are not free: no new pair, qualification game or return game takes
  them.
- **Fair time.** With ``ladder_games_per_hour`` a bot that started that many ladder games in
  the last hour is not paired until the oldest is an hour old; pairing prefers the pair whose
  busier bot started fewer games lately.
- **Leading.** On one node the ladder always leads. In a cluster only the node holding the
  pairing lease does (:meth:`Ladder.lead`): it loads the ladder from storage, pairs, has each
  game started on the node of one of its seats (``GameManager.place_game``) and computes the
  standings; the others (:meth:`Ladder.follow`) keep the standings it broadcasts. A new leader
  starts from what is stored: pairs whose return game was still to come are not continued,
  and qualification starts again for a bot in the middle of it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from protocol.messages import Error, GameKind, LadderState, LadderStatus, LiveGameEnded, LiveStandings

from ..common.callbacks import spawn
from ..common.clock import seconds_since, utc_now
from ..common.logs import about
from ..common.refusal import Refusal
from ..config import Settings
from ..connections.presence import Presence
from ..connections.ratelimit import WindowLimiter
from ..games.deals import Deal
from ..games.forfeits import forfeit_ended, forfeit_row
from ..games.house import HouseBot
from ..games.manager import GameManager
from ..games.room import GameRoom
from ..ratings.bradley_terry import Z95
from ..storage import GameRow, NameTaken, Storage
from ..storage.base import LadderStanding, score_of_seat0
from .large import WAIT_SLACK, Field
from .matchmaking import Meetings, RecentGames, Seeker, next_wait_end, pair_round
from .pairs import Pair
from .qualification import Qualifier
from .standings import Standings
from .tally import Tally

log = logging.getLogger(__name__)

PAIRING_SLICE_S = 0.001
"""The pairing gives the event loop its turn after this long (plus one step of its work), so
that a pass over thousands of seekers never holds the games' clocks and frames for more than a
few milliseconds (``run_in_slices``)."""


PASS_GAP = 9.0
"""After a pass that held the loop for ``t``, the next waits ``PASS_GAP·t``: pairing takes at
most a tenth of the loop's time, however often it is woken."""
GATHER = 512
"""Bots looked at between two yields of a pass."""

PAIR_SWEEP_S = 60.0
"""How often the leader closes the pairs open in storage that it does not continue
(:meth:`Ladder.close_stale_pairs`; also when it takes the lead)."""

HOLD_S = 1.0
"""After a game is refused for a reason of the cluster's or the database's (a node that cannot
be reached, storage failing), no game starts for this long: the refusal would come again at
once, pair after pair, each logged."""


async def run_in_slices(steps: Iterable[object], budget_s: float) -> float:
    """Run ``steps`` (a generator that yields after each bounded piece of work), letting the
    loop run other tasks whenever ``budget_s`` has passed since it last did, so no stretch is
    longer than ``budget_s`` and one piece. Returns the time the steps held the loop."""
    clock = time.perf_counter
    start = clock()
    until = start + budget_s
    away = 0.0
    for _ in steps:
        now = clock()
        if now >= until:
            await asyncio.sleep(0)
            back = clock()
            away += back - now
            until = back + budget_s
    return clock() - start - away


HOUSE_TOKEN_HASH = "house:no-token"
"""The house bot's stored token hash: no token hashes to it, so nobody can connect as the house."""


class Ladder:
    """The running ladder: its bots' places, who seeks, the duplicate pairs under way, and the
    pairing loop; qualification and the standings are parts of it."""

    def __init__(
        self,
        settings: Settings,
        storage: Storage,
        presence: Presence,
        manager: GameManager,
        publish: Callable[[Any], None],
    ) -> None:
        self.settings = settings
        self.storage = storage
        self.presence = presence
        self.manager = manager
        self.publish = publish
        self.announce_end: Callable[[LiveGameEnded], None] = publish
        """Where a forfeited return game's end goes once stored: ``/live`` (in a cluster, every
        node's)."""
        self.leading = False
        self.may_act: Callable[[], bool] = lambda: True
        """Checked before each pairing: in a cluster, whether this node's lease still holds."""
        self.held: Callable[[str], int] = lambda bot: 0
        """Slots of a bot kept for its due tournament games (the director's holds): they are
        not the ladder's to fill."""
        self.paused = False
        self.places: dict[str, LadderStanding] = {}
        self.seeking: set[str] = set()
        self.pairs: dict[str, Pair] = {}
        self.pairings: Counter[str] = Counter()
        """Duplicate pairs made here, by kind (``ladder``, ``qualification``), for ``GET /metrics``."""
        self.returns: list[Pair] = []
        """Pairs whose first game is over and whose return game waits for its bots."""
        self.last_opponent: dict[str, str] = {}
        self.meetings = Meetings()
        """Ladder games between each two bots since the last ratings reset, counted from the
        moment a pair starts (a game that is not played after all is taken off again)."""
        self.recent = RecentGames()
        """Ladder games each bot started in the last hour (for ``ladder_games_per_hour``)."""
        self.free_since: dict[str, float] = {}
        """Loop time each free, seeking, listed bot became free (how long it has waited)."""
        self._wait_timer: asyncio.TimerHandle | None = None
        self._held_until = 0.0
        """Loop time before which no game starts (:data:`HOLD_S`)."""
        self.tally = Tally()
        """Wins, draws and losses of each pair of bots since the last ratings reset (from
        storage at the start, then each rated game as it is stored)."""
        self.rng = random.Random()
        self.seek_limit = WindowLimiter(settings.seeks_per_minute, 60.0)
        """Seeks and unseeks of each bot in the last minute (``admit_seek``)."""
        self.field = Field(settings.elo_initial)
        """What the large ladder's policy knows of each bot (``large.py``)."""
        self._fed: LiveStandings | None = None
        """The standings table last given to the field."""
        self.house = HouseBot(settings.house_bot, manager.play)
        self.qualification = Qualifier(settings, self.house.name, self._tell, self._stop_seeking, self._passed)
        self.standings = Standings(settings, storage, presence, manager.recorder, self)
        self._wake = asyncio.Event()
        self._loop_task: asyncio.Task[None] | None = None
        self._leads = 0
        """How many times this node took the lead: a load of the ladder's state that a newer lead
        overtook (the lease lost and won again meanwhile) starts no pairing loop."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self._ids = itertools.count(1)
        self._stopped = False
        self._told_unavailable: set[str] = set()
        """Seeking bots told, in this outage, that no game starts until storage is back."""

    @property
    def table(self) -> LiveStandings:
        """The standings as last computed here, or (following) as the leader last sent them."""
        return self.standings.table

    @table.setter
    def table(self, table: LiveStandings) -> None:
        self.standings.table = table

    # ------------------------------------------------------------------ lifecycle

    async def start(self, lead: bool = True) -> None:
        """Seat the house bot and listen to games; then lead (one node), or wait to be told."""
        await self._reserve_house_name()
        self.manager.house[self.house.name] = self.house
        self.manager.listeners.append(self)
        self.manager.recorder.listeners.append(self._storage_changed)
        if lead:
            await self.lead()

    async def lead(self) -> None:
        """Load the ladder's state from storage and start pairing."""
        self.follow()
        self.leading = True
        self._stopped = False
        self._leads += 1
        lead = self._leads
        # Each read is kept only if no newer lead began meanwhile, which reads everything again.
        places = {b.name: b.ladder for b in await self.storage.list_bots()}
        if self._overtaken(lead):
            return
        self.places = places
        self._seeks_again()
        paused = await self.storage.get_setting("paused") == "1"
        if self._overtaken(lead):
            return
        self.paused = paused
        async with self.manager.recorder.rating_lock:  # no rated game stored meanwhile goes uncounted
            tally = Tally(await self.storage.pair_tallies())
            if self._overtaken(lead):
                return
            self.tally = tally
        await run_in_slices(self._count_meetings(lead), PAIRING_SLICE_S)
        if self._overtaken(lead):
            return
        await self._count_recent()
        if self._overtaken(lead):
            return
        await self.refresh_standings()
        if self._overtaken(lead):
            return
        await self.close_stale_pairs()
        if self._overtaken(lead):
            return
        self._loop_task = asyncio.get_running_loop().create_task(self._pairing_loop(), name="ladder-pairing")
        log.info("this node leads the ladder")

    def _overtaken(self, lead: int) -> bool:
        """Whether the lead that began as the ``lead``-th was lost since (and maybe won again)."""
        return not self.leading or self._leads != lead

    def _seeks_again(self) -> None:
        """The seeks heard while the places were read were judged on the places known before
        (none on a node that just started): judge them on the stored ones. A listed bot does not
        qualify; a removed one does not seek."""
        for bot in sorted(self.seeking):
            place = self.place(bot)
            if place == "new":
                continue
            self.qualification.bots.pop(bot, None)
            if place == "removed":
                self.seeking.discard(bot)
            self._tell(bot)

    def follow(self) -> None:
        """Stop pairing (another node leads): forget what only the leader keeps. Games
        running here play on; their ends change nothing the leader counts on."""
        self.leading = False
        if self._wait_timer is not None:
            self._wait_timer.cancel()
            self._wait_timer = None
        if self._loop_task is not None:
            self._loop_task.cancel()
            self._loop_task = None
        self.seeking.clear()
        self.qualification.bots.clear()
        self.pairs.clear()
        self.returns.clear()
        self.free_since.clear()

    async def _reserve_house_name(self) -> None:
        name = self.settings.house_bot
        row = await self.storage.bot_by_name(name)
        if row is None:
            try:
                await self.storage.create_bot(name, HOUSE_TOKEN_HASH, utc_now(), self.settings.elo_initial)
            except NameTaken:
                row = await self.storage.bot_by_name(name)
        if row is not None and row.token_hash != HOUSE_TOKEN_HASH:
            raise RuntimeError(f"a registered bot is named {row.name!r}, the house bot's name: set house_bot to another")

    async def stop(self) -> None:
        self._stopped = True
        if self._wait_timer is not None:
            self._wait_timer.cancel()
        if self._loop_task is not None:
            self._loop_task.cancel()
        self.standings.stop()
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # ------------------------------------------------------------------ what bots say

    def place(self, bot: str) -> LadderStanding:
        return self.places.get(bot, "new")

    def state(self, bot: str) -> LadderState:
        place = self.place(bot)
        if place != "new":
            return place
        return self.qualification.state(bot)

    def status(self, bot: str, message: str | None = None) -> LadderStatus:
        state = self.state(bot)
        left = self.qualification.left(bot, state)
        if message is None:
            message = {
                "qualifying": f"qualifying: {left} game(s) against {self.house.name} to play before you are listed",
                "listed": "listed: you are on the ladder",
                "failed": "qualification failed: seek again to retry",
                "removed": "removed from the ladder by the organizer",
            }[state]
        if self.paused and state != "removed":
            message += " (the ladder is paused)"
        return LadderStatus(bot in self.seeking, state, self.paused, left, message)

    def _tell(self, bot: str, message: str | None = None) -> None:
        conn = self.presence.get(bot)
        if conn is not None:
            conn.send(self.status(bot, message))

    def admit_seek(self, bot: str) -> None:
        """Refuse a ``seek`` or ``unseek`` beyond ``seeks_per_minute`` (a bot that flaps): the
        refused message changes nothing and wakes nothing. Per bot, whatever its connection."""
        retry = self.seek_limit.hit(bot, asyncio.get_running_loop().time())
        if retry is not None:
            raise Refusal("rate_limited", f"more than {self.settings.seeks_per_minute} seek and unseek messages a minute",
                          limit="seeks", retry_after=round(retry, 3))

    def seek(self, bot: str) -> None:
        if bot == self.house.name:
            raise Refusal("removed", "the house bot does not play on the ladder")
        if self.place(bot) == "removed":
            raise Refusal("removed", "the organizer removed this bot from the ladder")
        self.seeking.add(bot)
        if self.place(bot) == "new":
            self.qualification.begin(bot)
        self._tell(bot)
        if self.manager.recorder.failing is not None:
            self._unavailable(bot)
        self.changed()

    def unseek(self, bot: str) -> None:
        self.seeking.discard(bot)
        self._tell(bot)
        self.changed()

    def bot_arrived(self, bot: str) -> None:
        """A new connection of ``bot`` said hello, here or on another node of a cluster. It
        seeks once it sends ``seek``: a seek of the connection it replaced, or of one lost with
        its node before the cluster noticed, does not carry over (PROTOCOL.md §18.1)."""
        self.seeking.discard(bot)
        self.changed()

    def bot_left(self, bot: str) -> None:
        """A bot that leaves stops seeking; its opponents in unfinished pairs are free for
        other pairings at once (the return game waits ``return_wait_s`` for it, unreserved)."""
        self.seeking.discard(bot)
        self.free_since.pop(bot, None)
        self.changed()
        self.wake()

    def refused(self, bot: str, refusal: Refusal) -> None:
        """A bot drew an ``error``: during qualification, a protocol break fails it."""
        self.qualification.refused(bot, refusal)

    def _stop_seeking(self, bot: str) -> None:
        self.seeking.discard(bot)

    def _storage_changed(self) -> None:
        """Storage failed or came back: seeking bots hear that no game starts meanwhile
        (once per outage); when it is back, pairing resumes at once."""
        if self.manager.recorder.failing is None:
            self._told_unavailable.clear()
            self.wake()
            return
        for bot in sorted(self.seeking):
            self._unavailable(bot)

    def _unavailable(self, bot: str) -> None:
        conn = self.presence.get(bot)
        if conn is None or bot in self._told_unavailable:
            return
        self._told_unavailable.add(bot)
        recorder = self.manager.recorder
        conn.send(Error("storage_unavailable",
                        f"the server cannot record games right now ({recorder.failing}): no ladder game starts "
                        "until storage is back; you stay seeking and are paired as soon as it is",
                        retry_after=recorder.retry_after))

    # ------------------------------------------------------------------ organizer

    async def set_paused(self, paused: bool) -> None:
        await self.storage.put_setting("paused", "1" if paused else "0")
        self.paused = paused
        self.standings.paused_changed()
        for bot in self.seeking | set(self.qualification.bots):
            self._tell(bot)

    async def remove(self, bot: str) -> None:
        """Off the ladder for good: no new games, gone from the standings; games stay stored."""
        await self.storage.set_ladder(bot, "removed")
        self.places[bot] = "removed"
        self.seeking.discard(bot)
        self.qualification.bots.pop(bot, None)
        self.free_since.pop(bot, None)
        for pair in [p for p in self.pairs.values() if bot in p.players and p.kind == "ladder"]:
            pair.given_up = True  # its first game, if running, plays on; no return game follows
        for pair in [p for p in self.returns if bot in p.players]:
            self._drop_return(pair, f"{bot} was removed")
        self._tell(bot)
        self.changed()
        self.wake()

    async def restore(self, bot: str) -> None:
        """Back from removal as a new bot: it qualifies again at its next ``seek`` (a failed
        qualification before its removal is forgotten)."""
        await self.storage.set_ladder(bot, "new")
        self.places[bot] = "new"
        self.qualification.failed.discard(bot)
        self._tell(bot)
        self.changed()

    async def reset_ratings(self) -> None:
        """Every bot back to no rated game. A pair whose first game is over no longer counts
        that game, so its return game must not count alone (one game on a deal, the deal's
        luck in it): one still to start is dropped, one running here is played unrated."""
        async with self.manager.recorder.rating_lock:
            await self.storage.reset_ratings(self.settings.elo_initial)
            for pair in [p for p in self.returns if p.kind == "ladder"]:
                self._drop_return(pair, "ratings reset")
            for pair in [p for p in self.pairs.values() if p.kind == "ladder" and len(p.games) == 2]:
                room = self.manager.running.get(pair.games[1])
                if room is not None:
                    room.rated = False
            self.tally = Tally(await self.storage.pair_tallies())
            for _ in self._count_meetings():  # the totals were just reset: a few at most
                pass
        self.changed()

    def _count_meetings(self, lead: int | None = None) -> Iterator[None]:
        """Meetings from the stored rated games since the last reset, plus the pairs under way;
        a slice of the pairs at a time (hundreds of thousands at ten thousand bots). Stops if
        the ``lead``-th lead was overtaken meanwhile (the newer one counts them afresh)."""
        self.meetings.clear()
        self.field.reset()
        self._fed = None
        counts = self.tally.counts
        for n, (a, b) in enumerate(list(counts)):
            c = counts[a, b]
            games = c[0] + c[1] + c[2]
            self.meetings.add(a, b, games=games)
            self.field.played_before(a, b, games)
            if n % (4 * GATHER) == 4 * GATHER - 1:
                yield
                if lead is not None and self._overtaken(lead):
                    return
        for pair in self.pairs.values():
            if pair.kind == "ladder":
                self.meetings.add(*pair.players, games=2 - len(pair.games) + self._running(pair))

    async def _count_recent(self) -> None:
        """The ladder games of the last hour, from storage, on the loop's clock."""
        games = await self.storage.ladder_games_since(utc_now(self.recent.window))
        self.recent.clear()
        now = asyncio.get_running_loop().time()
        for a, b, started in games:
            at = now - seconds_since(started)
            self.recent.add(a, at)
            self.recent.add(b, at)

    def _running(self, pair: Pair) -> int:
        """The pair's games running now, on any node."""
        running = set(self.manager.game_ids_of(pair.players[0]))
        return sum(1 for game_id in pair.games if game_id in running)

    # ------------------------------------------------------------------ games (GameEvents)

    def game_started(self, room: GameRoom) -> None:
        pass

    def game_ended(self, room: GameRoom) -> None:
        if room.kind == "qualification":
            self.qualification.game_ended(room)
        pair = self.pairs.get(room.pair_id or "")
        if pair is not None:
            if room.status == "aborted" and pair.kind == "ladder":
                self.meetings.add(*pair.players, games=-1)  # no game after all
            if len(pair.games) == 1 and room.status == "finished" and self._pair_goes_on(pair):
                pair.first_ended = asyncio.get_running_loop().time()
                self.returns.append(pair)
            else:
                self._end_pair(pair)
        self._wake.set()

    def _end_pair(self, pair: Pair) -> None:
        """The pair plays no more games (both played, or one that cannot start or is given up):
        a game it will not play is no meeting, the large ladder's field knows it is over (a
        newcomer placed by it is free for its next pair), and the bot a qualification pair was
        for may start its next one."""
        self.pairs.pop(pair.id, None)
        if pair.games:  # its first game's record is held while the pair is open in storage
            self.manager.recorder.close_pair(pair.id)
        if pair.kind == "ladder":
            if len(pair.games) < 2:
                self.meetings.add(*pair.players, games=len(pair.games) - 2)
            self.field.ended(*pair.players)
        q = self.qualification.of(pair)
        if q is not None:
            q.pair = None

    def _pair_goes_on(self, pair: Pair) -> bool:
        """A ladder pair does while neither bot was removed (since it was paired: one restored
        meanwhile does not bring it back); a qualification pair while its bot still qualifies."""
        if pair.kind == "qualification":
            return self.qualification.of(pair) is not None
        return not pair.given_up and all(self.place(b) == "listed" for b in pair.players)

    def _passed(self, bot: str) -> None:
        spawn(self._tasks, self._list(bot), f"listing bot {bot}")

    async def _list(self, bot: str) -> None:
        """List a bot that passed qualification; while storage fails, keep trying to store it."""
        self.places[bot] = "listed"
        log.info("bot %s qualified: listed on the ladder", bot, extra=about(bot=bot))
        self._tell(bot)
        self.changed()
        recorder = self.manager.recorder
        while not self._stopped and self.places.get(bot) == "listed":
            try:
                # A qualifying bot is stored as new: an organizer's removal stored meanwhile stands.
                await self.storage.set_ladder(bot, "listed", only_from="new")
                return
            except Exception as e:
                recorder.faults.note(f"listing bot {bot}", e)
                await asyncio.sleep(recorder.retry_after)

    def rated_game_stored(self, room: GameRoom) -> None:
        self._rated_row_stored(room.to_row(record=False))

    def _rated_row_stored(self, row: GameRow) -> None:
        """A rated game is in the database (played, or a return game forfeited): its result
        joins the pairs' totals in memory, as it joined the stored ones."""
        self.tally.add(row.players[0], row.players[1], score_of_seat0(row.result))
        self.field.result(row.players[0], row.players[1], score_of_seat0(row.result))
        self.changed()

    # ------------------------------------------------------------------ pairing

    async def _pairing_loop(self) -> None:
        """Pass after pass, each in slices (``run_in_slices``); after a pass that held the loop
        for ``t``, the next waits at least ``PASS_GAP·t`` (at most ``pairing_interval_s``), so
        pairing never takes more than a tenth of the loop, however often bots seek or leave."""
        rest = 0.0
        loop = asyncio.get_running_loop()
        swept = loop.time()
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), self.settings.pairing_interval_s)
            except TimeoutError:
                pass
            if rest > 0.0:
                await asyncio.sleep(rest)
            self._wake.clear()
            held = 0.0
            try:
                held = await run_in_slices(self._pass(), PAIRING_SLICE_S)
            except Exception:
                log.exception("ladder pairing failed")
            rest = min(PASS_GAP * held, self.settings.pairing_interval_s)
            if loop.time() - swept >= PAIR_SWEEP_S and self.manager.recorder.failing is None:
                swept = loop.time()
                try:
                    await self.close_stale_pairs()
                except Exception as e:
                    self.manager.recorder.faults.note("closing the pairs not continued", e)

    def wake(self) -> None:
        self._wake.set()

    async def close_stale_pairs(self) -> None:
        """Close the pairs open in storage that this ladder does not continue, so their first
        games' records are held no more (``server/games/holds.py``): those of the node that
        led before, or of this one before a restart (a new leader starts no return game of
        theirs), and any whose close was lost. One whose return game runs stays open: its end
        closes it."""
        for pair in await self.storage.open_pairs():
            if pair.pair_id in self.pairs or not self.leading:
                continue
            if pair.return_game is not None:
                row = await self.storage.get_game(pair.return_game)
                if row is not None and row.status == "running":
                    continue
            log.info("pair %s is not continued: its first game's record is no longer held", pair.pair_id)
            self.manager.recorder.close_pair(pair.pair_id)

    def free(self, bot: str) -> int:
        """Games the bot may start now for new pairs: its open slots less those held for its
        tournament games and those kept for return games whose other bot is connected."""
        reserved = sum(1 for p in self.returns if bot in p.players and self._others_here(p, bot))
        return self.manager.open_slots(bot) - self.held(bot) - reserved

    def _reserved(self) -> dict[str, int]:
        """Each bot's slots kept for return games (``free``'s, for every bot in one go)."""
        reserved: dict[str, int] = {}
        for pair in self.returns:
            for bot in pair.players:
                if self._others_here(pair, bot):
                    reserved[bot] = reserved.get(bot, 0) + 1
        return reserved

    def _others_here(self, pair: Pair, bot: str) -> bool:
        """Whether the pair's other bot is here (only then is ``bot``'s slot kept for it)."""
        return all(self.manager.can_play(b) for b in pair.players if b != bot)

    def _return_missed(self, pair: Pair) -> None:
        """A bot of a ladder pair stayed away past ``return_wait_s``: it loses the return game
        by forfeit (rated), so that leaving after a first game won keeps nothing of the deal's
        luck. Both away, or a qualification pair: the return game is dropped."""
        away = [b for b in pair.players if not self.manager.can_play(b)]
        wait = f"{self.settings.return_wait_s:g} s"
        if pair.kind != "ladder" or len(away) != 1:
            self._drop_return(pair, f"{' and '.join(away) or 'a bot'} away for {wait}")
            return
        row = forfeit_row(pair.return_players, pair.deal, away, kind="ladder", rated=True, pair_id=pair.id)
        log.info("pair %s: %s, away for %s, forfeits the return game %s", pair.id, away[0], wait, row.game_id)
        self.returns.remove(pair)
        pair.games.append(row.game_id)
        self._end_pair(pair)
        # Counted like a played rated game once stored: the pairs' totals, which the rating and
        # W/D/L are computed from, have it as storage does (and as a restart reads them).
        self.manager.recorder.finish(row, durable=lambda: self.announce_end(forfeit_ended(row)),
                                     stored=lambda: self._rated_row_stored(row))

    def _drop_return(self, pair: Pair, why: str) -> None:
        """Give up a pair's return game: the first game stays rated and counts as any other."""
        log.info("pair %s: return game dropped (%s)", pair.id, why)
        self.returns.remove(pair)
        self._end_pair(pair)

    def pair_now(self) -> None:
        """Start what can start now, in one go (the pairing loop runs the same pass in slices)."""
        for _ in self._pass():
            pass

    def _may_start(self) -> bool:
        return (not self._stopped and self.manager.recorder.failing is None and self.leading and self.may_act()
                and asyncio.get_running_loop().time() >= self._held_until)

    def _pass(self) -> Iterator[None]:
        """Start what can start: return games first, then (unless paused) qualification
        games and new ladder pairs, each in slots no tournament game holds. Nothing starts
        while storage fails. Yields between bounded pieces of work; whatever the loop did
        meanwhile, each game is checked again before it starts."""
        if not self._may_start():
            return
        now = asyncio.get_running_loop().time()
        left: dict[str, int] = {}
        """Slots not yet given to an earlier return game in this pass (returns go first come,
        first served, each keeping its slots until it can start)."""
        for pair in list(self.returns):
            if self.pairs.get(pair.id) is not pair or len(pair.games) != 1:
                continue  # started or dropped while this pass gave the loop its turn
            if not self._pair_goes_on(pair):
                self._drop_return(pair, "a bot left the ladder")
            elif all(self.manager.can_play(b) for b in pair.players):
                for b in pair.players:
                    left.setdefault(b, self.manager.open_slots(b) - self.held(b))
                # Slots are counted again too: a tournament game may have taken one since.
                ready = all(left[b] >= 1 and self.manager.open_slots(b) - self.held(b) >= 1 for b in pair.players)
                for b in pair.players:
                    left[b] -= 1
                if ready:
                    self.returns.remove(pair)
                    self._start(pair, pair.return_players)
                    yield
                    if not self._may_start():
                        return
            elif now - pair.first_ended > self.settings.return_wait_s:
                self._return_missed(pair)
        if self.paused:
            return
        for bot, q in list(self.qualification.due(self.seeking)):
            if self.qualification.bots.get(bot) is q and q.pair is None and bot in self.seeking and self.free(bot) > 0:
                q.pair = self._new_pair((bot, self.house.name), "qualification")
                self._start(q.pair, q.pair.players)
                yield
                if not self._may_start() or self.paused:
                    return
        yield from self._pair_ladder(now)

    def _pair_ladder(self, now: float) -> Iterator[None]:
        """New ladder pairs among the listed seeking bots: by ``matchmaking.pair_round`` while
        fewer than ``pairing_large_from`` bots are active, as many rounds as bots have free
        slots; from there by the large ladder's policy (``large.py``), one pair per free bot
        per pass. Wake again when a waiting bot's wait runs out. Seeking bots still in
        qualification count as active opponents that are busy; a bot at its games-per-hour
        limit is not active (nobody waits for it)."""
        limit = self.settings.ladder_games_per_hour
        active: list[str] = []
        for n, b in enumerate(list(self.seeking)):
            if self.place(b) == "listed" and self.presence.is_connected(b) and self.recent.may_start(b, now, limit):
                active.append(b)
            if n % GATHER == GATHER - 1:
                yield
        if not self._may_start() or self.paused:
            return
        qualifying = [b for b in self.qualification.bots if b in self.seeking]
        if len(active) + len(qualifying) < self.settings.pairing_large_from:
            yield from self._pair_small(sorted(active), qualifying, now)
        else:
            yield from self._pair_large(active, now)

    def _pair_small(self, active: list[str], qualifying: list[str], now: float) -> Iterator[None]:
        """Everyone meets everyone (``matchmaking.pair_round``), round after round."""
        limit = self.settings.ladder_games_per_hour
        seekers: list[Seeker] = []
        for _ in range(self.settings.max_games):
            active = [b for b in active if b in self.seeking and self.presence.is_connected(b)]
            free = [b for b in active if self.free(b) > 0 and self.recent.may_start(b, now, limit)]
            for b in [b for b in self.free_since if b not in free]:
                del self.free_since[b]
            seekers = [
                Seeker(b, self.standings.ratings.get(b, self.settings.elo_initial), self.last_opponent.get(b),
                       now - self.free_since.setdefault(b, now), self.recent.count(b, now))
                for b in free
            ]
            # Bots still qualifying count as busy: they are about to join, and the fast ones
            # must not pile up games against each other meanwhile.
            busy = [b for b in active if b not in free] + qualifying
            pairs = pair_round(seekers, busy, self.meetings, self.rng, self.settings.pairing_spread,
                               self.settings.pairing_wait_s, 2 * self.settings.pairing_max_lead)
            if not pairs:
                break
            for a, b in pairs:
                if all(self._still_free(x, now) for x in (a, b)):
                    self._begin(a, b, now)
                yield
                if not self._may_start() or self.paused:
                    return
        self._wait_for(next_wait_end([s for s in seekers if s.name in self.free_since], self.settings.pairing_wait_s))

    def _pair_large(self, active: list[str], now: float) -> Iterator[None]:
        """The large ladder's policy over the free active bots (``large.Field.pairing``)."""
        yield from self._feed_field()
        reserved = self._reserved()
        free: list[str] = []
        for n, b in enumerate(active):
            if self.manager.open_slots(b) - self.held(b) - reserved.get(b, 0) > 0:
                free.append(b)
            if n % GATHER == GATHER - 1:
                yield
        chosen = set(free)
        for b in [b for b in self.free_since if b not in chosen]:
            del self.free_since[b]
        waited = [now - self.free_since.setdefault(b, now) for b in free]
        started = 0
        for batch in self.field.pairing(free, waited, self.meetings, self.rng, self.settings.pairing_wait_s):
            for p in batch:
                if not (self._may_start() and not self.paused):
                    return
                if all(self._still_free(b, now, reserved) for b in (p.a, p.b)):
                    self.field.started(p)
                    self._begin(p.a, p.b, now)
                    started += 1
                    yield
            yield
        wait_s = self.settings.pairing_wait_s
        self._wait_for(min((wait_s - w for b, w in zip(free, waited, strict=True)
                            if w < wait_s - WAIT_SLACK and b in self.free_since), default=None))
        if started:
            self.wake()  # bots with more free slots play another pair in the next pass

    def _still_free(self, bot: str, now: float, reserved: dict[str, int] | None = None) -> bool:
        """Whether ``bot`` may still start a pair this pass (the loop may have run since it was
        chosen: a tournament game took its slot, it stopped seeking or left). ``reserved``: the
        slots kept for return games as the pass counted them (``_reserved``), else as they are."""
        slots = self.free(bot) if reserved is None else self.manager.open_slots(bot) - self.held(bot) - reserved.get(bot, 0)
        return (bot in self.seeking and self.place(bot) == "listed" and self.presence.is_connected(bot) and slots > 0
                and self.recent.may_start(bot, now, self.settings.ladder_games_per_hour))

    def _feed_field(self) -> Iterator[None]:
        """The standings' fit, as last computed, to the large policy (when it changed)."""
        table = self.standings.table
        if table is self._fed:
            return
        self._fed = table
        rows = table.standings
        for start in range(0, len(rows), GATHER):
            self.field.update((s.bot, s.rating, (s.high - s.low) / (2 * Z95), s.games) for s in rows[start:start + GATHER])
            yield

    def _begin(self, a: str, b: str, now: float) -> None:
        """Start a new ladder pair of ``a`` and ``b``."""
        self.last_opponent[a], self.last_opponent[b] = b, a
        self.free_since.pop(a, None)
        self.free_since.pop(b, None)
        self.meetings.add(a, b, games=2)
        pair = self._new_pair((a, b), "ladder")
        if self._start(pair, pair.players):
            self.recent.add(a, now, 2)
            self.recent.add(b, now, 2)

    def _wait_for(self, left: float | None) -> None:
        """Pair again when the first waiting bot's wait runs out (``left`` seconds from now)."""
        if self._wait_timer is not None:
            self._wait_timer.cancel()
            self._wait_timer = None
        if left is not None:
            self._wait_timer = asyncio.get_running_loop().call_later(left, self.wake)

    def _new_pair(self, bots: tuple[str, str], kind: GameKind) -> Pair:
        """A pair on a fresh random deal, seats drawn at random (not started yet)."""
        seats = list(bots)
        self.rng.shuffle(seats)
        deal = Deal(first_player=self.rng.choice((0, 1)), reshuffle_seed=self.rng.getrandbits(63))
        pair = Pair(f"{kind[0]}{next(self._ids)}-{secrets.token_urlsafe(4)}", (seats[0], seats[1]), deal, kind)
        self.pairs[pair.id] = pair
        self.pairings[kind] += 1
        return pair

    def _start(self, pair: Pair, players: tuple[str, str]) -> bool:
        """Start the pair's next game where it is to run (in a cluster, on a node of its seats:
        its end comes back here as any game's, aborted if it never started there). A game
        that cannot start ends the pair, as an aborted one would; one refused by the cluster or
        the database holds every start for :data:`HOLD_S`. Whether it started."""
        try:
            game_id = self.manager.place_game(players, pair.deal, rated=pair.kind == "ladder", kind=pair.kind,
                                              pair_id=pair.id)
        except Refusal as r:
            self._end_pair(pair)
            if r.code in ("cluster_unavailable", "storage_unavailable"):
                held = self._held_until > 0.0
                self._held_until = asyncio.get_running_loop().time() + HOLD_S
                self._wait_for(HOLD_S)
                if held:
                    return False  # logged when the hold began
                log.info("pair %s: game not started (%s); no game starts for %g s", pair.id, r.message, HOLD_S)
            else:
                log.info("pair %s: game not started (%s)", pair.id, r.message)
            return False
        self._held_until = 0.0
        pair.games.append(game_id)
        q = self.qualification.of(pair)
        if q is not None:
            q.games.add(game_id)
        return True

    # ------------------------------------------------------------------ standings

    def changed(self) -> None:
        """Something the standings show changed: recompute and push them, coalesced."""
        if self._stopped or not self.leading:
            return
        self.standings.changed()

    async def refresh_standings(self) -> LiveStandings:
        """Compute the standings now and push them."""
        return await self.standings.refresh()
