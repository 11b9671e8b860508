"""A cancelled tournament's last ``tournament`` event on ``/live`` (PROTOCOL.md §18.7, §21.4):
the games the cancellation aborted are over, so it lists none running, as
``GET /api/tournaments/{id}`` does. Nothing is pushed about the tournament after it, and a
fresh start repeats it to every new viewer, so a wrong one would stay on the page."""

from __future__ import annotations

from typing import Any

import msgspec
from tournament_kit import create, post

from arena_testkit import Harness, LiveStream, wait_until
from protocol.messages import GameOver, GameStart
from protocol.tournaments import LiveTournament, TournamentView


async def test_the_cancelled_tournament_pushed_to_live_has_no_game_running(make_arena: Any) -> None:
    arena: Harness = await make_arena(decision_ms=60_000)
    ann, ben = await arena.bot("ann"), await arena.bot("ben")
    tid = (await create(arena, participants=["ann", "ben"], games_per_pairing=2))["tournament_id"]
    await post(arena, f"/api/tournaments/{tid}/start")
    start = await ann.until(GameStart)
    await ben.until(GameStart)  # the game runs, nobody moves
    live = LiveStream(await arena.client.ws_connect("/live"))

    async def cancelled_view(stream: LiveStream) -> TournamentView:
        while True:
            msg = await stream.next_of(LiveTournament, timeout=10)
            if msg.tournament.tournament_id == tid and msg.tournament.state == "cancelled":
                return msg.tournament

    await post(arena, f"/api/tournaments/{tid}/cancel")
    aborted = await ann.until(GameOver)
    assert (aborted.game_id, aborted.result.end_reason) == (start.game_id, "aborted")
    await wait_until(lambda: not arena.arena.manager.running, 5, "the cancelled tournament's game still runs")
    read = await arena.get_json(f"/api/tournaments/{tid}")
    assert (read["state"], read["progress"]["running"], read["running"]) == ("cancelled", 0, [])

    pushed = await cancelled_view(live)
    assert (pushed.progress.running, pushed.running) == (0, [])
    assert msgspec.to_builtins(pushed.progress) == read["progress"]
    # A viewer arriving later gets the same in its fresh start.
    late = LiveStream(await arena.client.ws_connect("/live"))
    again = await cancelled_view(late)
    assert (again.progress.running, again.running) == (0, [])
    await live.close()
    await late.close()
