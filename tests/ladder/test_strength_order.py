"""Bots of known strength on the ladder end up in that order: random < greedy < search.

Three bots from ``mandala_client.bots`` seek on a real server, play their qualification
against the house bot and then rated duplicate pairs against each other until every two of
them have met ``MEETINGS`` times. Offline, greedy beats random in 99% of games and search at
300 iterations a move beats greedy in 93.5% (``mandala match``, docs/writing-a-bot.md); the test checks
the standings' order, the game counts, and that each interval contains its rating.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import msgspec

from arena_testkit import Harness, play
from mandala_client.bots import GreedyBot, RandomBot, SearchBot

MEETINGS = 8
FAST = {"pairing_interval_s": 0.05}


async def test_standings_follow_strength(make_arena: Any) -> None:
    arena: Harness = await make_arena(**FAST)
    bots = {"random": RandomBot(seed=1), "greedy": GreedyBot(seed=2), "search": SearchBot(seed=3, iterations=300)}
    clients = {name: await arena.bot(name, max_games=2) for name in bots}
    for client in clients.values():
        await client.send({"type": "seek"})
    tasks = [asyncio.create_task(play(clients[n], bots[n])) for n in bots]
    ladder = arena.arena.ladder
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 240
        while True:
            await asyncio.sleep(0.5)  # poll the standings; the deadline bounds the wait
            for task in tasks:
                if task.done():
                    task.result()  # a bot that failed fails the test with its error
            met = Counter({frozenset((a, b)): n for a, b, n in ladder.tally.games()})
            if len(met) == 3 and min(met.values()) >= MEETINGS:
                break
            assert loop.time() < deadline, f"too slow: {met}"
    finally:
        for task in tasks:
            task.cancel()
    table = await ladder.refresh_standings()
    order = [s.bot for s in table.standings]
    assert order == ["search", "greedy", "random"], msgspec.to_builtins(table)
    for s in table.standings:
        assert s.low < s.rating < s.high
        assert s.wins + s.draws + s.losses == s.games
    by = {s.bot: s for s in table.standings}
    assert by["search"].rating > by["greedy"].rating > by["random"].rating
