"""The environment sees exactly what the arena shows: real games are played on a real server
(real WebSockets, every frame decoded and validated by the protocol's types), then replayed
in the PettingZoo environment from their records, and at every ply the environment's
observation, mask and raw view for each seat equal what the same functions make from the
frames the server sent that seat (each ``decision`` and each ``update``)."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from arena_testkit import Harness, gather, play_out, random_policy
from mandala import Move, move_from_dict
from mandala_client.env import AGENTS, action_mask, action_of, encode, env
from protocol.messages import Decision, GameOver, Update

GAMES = 4


def _move(played: Any) -> Move:
    d = msgspec.to_builtins(played)
    d.pop("player")
    return move_from_dict(d)


def _frames(frames: list[Any], game_id: str) -> tuple[dict[int, Decision], dict[int, Update], GameOver]:
    """One seat's decisions by request id (the ply), its updates by ply, and the game's end."""
    decisions = {f.request_id: f for f in frames if isinstance(f, Decision) and f.game_id == game_id}
    updates = {f.ply: f for f in frames if isinstance(f, Update) and f.game_id == game_id}
    (over,) = [f for f in frames if isinstance(f, GameOver) and f.game_id == game_id]
    return decisions, updates, over


def _same(obs: dict[str, Any], observation: Any, mask: Any) -> None:
    assert obs["observation"].dtype == np.float32 and obs["action_mask"].dtype == np.int8
    assert np.array_equal(obs["observation"], observation)
    assert np.array_equal(obs["action_mask"], mask)


async def test_env_observations_equal_what_the_server_sends_each_seat_decision_by_decision(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    clients = [await arena.bot("alice"), await arena.bot("bob")]
    compared_decisions = compared_updates = 0
    for g in range(GAMES):
        players = ["alice", "bob"] if g % 2 == 0 else ["bob", "alice"]
        game_id = await arena.start_game(players)
        await gather(play_out(clients[0], random_policy(10 + g)), play_out(clients[1], random_policy(20 + g)))
        # by seat: the frames of the client sitting there
        seats = [clients[0], clients[1]] if g % 2 == 0 else [clients[1], clients[0]]
        decisions, updates, overs = zip(*(_frames(c.frames, game_id) for c in seats), strict=True)
        record = overs[0].record
        assert record == overs[1].record

        e = env()
        e.reset(options={"deck": record.deck, "first_player": record.first_player, "reshuffles": record.reshuffles})
        for seat, agent in enumerate(AGENTS):  # before the first move: the first update
            assert e.view(agent) == updates[seat][0].view
            mask = action_mask(decisions[seat][0].legal) if 0 in decisions[seat] else np.zeros(151, np.int8)
            _same(e.observe(agent), encode(updates[seat][0].view), mask)
        ply = 0
        for agent in e.agent_iter():
            obs, _reward, terminated, truncated, info = e.last()
            if terminated or truncated:
                result = overs[0].result
                assert info["end_reason"] == result.end_reason and info["scores"] == result.scores
                assert info["winner"] == (None if result.winner is None else AGENTS[result.winner])
                e.step(None)
                continue
            seat = AGENTS.index(agent)
            played = record.moves[ply]
            assert played.player == seat, f"ply {ply}: the environment asks {agent}, the record has seat {played.player}"
            decision = decisions[seat][ply]  # the server's decision for this ply, to this seat
            assert decision.seat == seat and e.view(agent) == decision.view
            _same(obs, encode(decision.view), action_mask(decision.legal))
            assert ply not in decisions[1 - seat], "a decision went to the seat not on move"
            compared_decisions += 1
            e.step(action_of(_move(played)))
            ply += 1
            for s, a in enumerate(AGENTS):  # after the move: each seat's update
                if a not in e.agents:
                    continue
                update = updates[s][ply]
                assert e.view(a) == update.view
                next_decision = decisions[s].get(ply)
                mask = action_mask(next_decision.legal) if next_decision is not None else np.zeros(151, np.int8)
                _same(e.observe(a), encode(update.view), mask)
                compared_updates += 1
        assert ply == len(record.moves) and e.agents == []
    assert compared_decisions >= GAMES * 40 and compared_updates >= 2 * compared_decisions
