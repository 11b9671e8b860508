"""A return game forfeited by the bot that stayed away (PROTOCOL.md §18.3) is a rated game
like any other: the standings' W/D/L and Bradley–Terry rating count it, from the moment it is
stored, as they count it after a restart (which reads the pairs' totals from storage)."""

from __future__ import annotations

from typing import Any

from test_held_records import away, exported, first_game_played

from arena_testkit import Harness, LiveStream, wait_until
from protocol.messages import LiveGameEnded


async def test_a_forfeited_return_game_counts_in_the_standings_at_once(make_arena: Any) -> None:
    arena: Harness = await make_arena(pairing_interval_s=60, return_wait_s=0.2)
    a, b, first, _ = await first_game_played(arena)
    ladder = arena.arena.ladder
    viewer = LiveStream(await arena.client.ws_connect("/live?games=all"))
    await viewer.batch()  # the fresh start
    await away(arena, {"bot01": b})

    def forfeited() -> bool:
        ladder.pair_now()  # the pass that forfeits the return game waited for too long
        return first.pair_id not in ladder.pairs

    await wait_until(forfeited, 5, "the return game was not forfeited")
    await arena.arena.manager.flush()
    _, games = await exported(arena)
    pair_games = [g for g in games.values() if g["pair_id"] == first.pair_id]
    assert sorted(g["result"]["end_reason"] == "forfeit" for g in pair_games) == [False, True]

    # What the stored games say: each bot's wins, draws and losses over the pair's two games.
    expected: dict[str, list[int]] = {"bot00": [0, 0, 0], "bot01": [0, 0, 0]}
    for g in pair_games:
        winner = g["result"]["winner"]
        for seat, bot in enumerate(g["players"]):
            expected[bot][1 if winner is None else 0 if winner == seat else 2] += 1
    assert expected["bot00"][0] >= 1 and expected["bot01"][2] >= 1  # bot00 won the forfeit

    await ladder.standings.refresh()
    rows = {r["bot"]: r for r in (await arena.get_json("/api/ladder"))["standings"]}
    for bot, (w, d, lost) in expected.items():
        row = rows[bot]
        assert (row["games"], row["wins"], row["draws"], row["losses"]) == (2, w, d, lost), row
    # The totals in memory are the stored ones: a restart would show the same table.
    stored = await arena.arena.storage.pair_tallies()
    assert {k: tuple(v) for k, v in ladder.tally.counts.items()} == {k: tuple(v) for k, v in stored.items()}
    # Its end reached a viewer following every game on /live, as a played game's does.
    (forfeit,) = [g for g in pair_games if g["result"]["end_reason"] == "forfeit"]
    ended = (await viewer.next_of(LiveGameEnded)).game
    assert (ended.game_id, ended.pair_id, ended.rated) == (forfeit["game_id"], first.pair_id, True)
    assert ended.result is not None and ended.result.end_reason == "forfeit"
    await viewer.close()
    await a.close()
