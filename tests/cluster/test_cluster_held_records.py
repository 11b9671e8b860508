"""A ladder pair's two games on two nodes, over a real Redis and PostgreSQL: the first game's
record is held on every node until the return game, run by the other node, is over
(PROTOCOL.md §12.1). The rule reads PostgreSQL, so a node that never ran either game answers as
the one that did."""

from __future__ import annotations

from typing import Any

import msgspec

from arena_testkit import Harness, gather, play_out, random_policy, wait_until
from conftest import MakeCluster
from protocol.messages import GameStart, LadderStatus


async def held(node: Harness, game_id: str) -> dict[str, Any]:
    resp = await node.client.get(f"/api/games/{game_id}/record")
    body = await resp.json()
    assert (resp.status, body["error"]["code"]) == (409, "record_held"), body
    return body["error"]["record_held"]  # type: ignore[no-any-return]


async def test_a_pairs_first_record_is_held_on_every_node_until_the_return_game_on_another_node_is_over(
        make_cluster: MakeCluster) -> None:
    n1, n2, n3 = await make_cluster(3, pairing_interval_s=0.05, pairing_wait_s=0.2)
    cluster = n1.arena.cluster
    assert cluster is not None
    await wait_until(lambda: cluster.leading, 10, "n1 never took the pairing lease")
    await wait_until(lambda: all(n.arena.cluster and n.arena.cluster.leader == "n1" for n in (n2, n3)), 5,
                     "a node did not learn who leads")
    ladder = n1.arena.ladder
    holding: set[str] = set()
    ladder.held = lambda bot: 1 if bot in holding else 0  # as the director holds a bot's slot
    for name in ("ann", "ben"):
        await n1.create_bot(name)
        await n1.arena.storage.set_ladder(name, "listed")
        ladder.places[name] = "listed"
    ann, ben = await n1.connect(n1.tokens["ann"]), await n2.connect(n1.tokens["ben"])
    for c in (ann, ben):
        await c.send({"type": "seek"})
        assert (await c.until(LadderStatus)).state == "listed"
    first, _ = await gather(ann.until(GameStart, timeout=10), ben.until(GameStart, timeout=10))
    holding.update(("ann", "ben"))  # the return game waits until they are let go
    (over_a,), (over_b,) = await gather(play_out(ann, random_policy(1)), play_out(ben, random_policy(2)))
    pair = {"pair_id": first.pair_id, "tournament_id": None, "slot": None, "game_id": None}
    for over in (over_a, over_b):
        assert (over.record.deck, over.record.reshuffles) == ([], []) and msgspec.to_builtins(over.record_held) == pair
    for node in (n1, n2, n3):
        assert await held(node, first.game_id) == pair

    holding.clear()
    ladder.wake()
    back, _ = await gather(ann.until(GameStart, timeout=10), ben.until(GameStart, timeout=10))
    assert back.pair_id == first.pair_id
    for node in (n1, n2, n3):
        await node.arena.manager.flush()  # the return game's start row is stored (by its host)
    for node in (n1, n2, n3):
        assert await held(node, first.game_id) == {**pair, "game_id": back.game_id}
    (ret_a,), (ret_b,) = await gather(play_out(ann, random_policy(3)), play_out(ben, random_policy(4)))
    assert len(ret_a.record.deck) == 108 and ret_a.record_held is None and ret_b.record == ret_a.record
    for node in (n1, n2, n3):
        record = await node.get_json(f"/api/games/{first.game_id}/record")
        assert (record["deck"], record["first_player"]) == (ret_a.record.deck, ret_a.record.first_player)
    # Each game was hosted by the node of one of its seats, the seats swapped: one each.
    rows = [await n3.arena.storage.get_game(g) for g in (first.game_id, back.game_id)]
    assert sorted(r.host or "" for r in rows if r is not None) == ["n1", "n2"]
