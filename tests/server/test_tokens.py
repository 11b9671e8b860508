"""A bot's token: issued with its prefix, rotated (by the bot or the admin) while a game runs
over real WebSockets, revoked, raced, and never shown again: not in a log line, an error,
``/health``, ``/live``, a record, a replay or an export."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from arena_testkit import ADMIN, Harness, LiveStream, play_out, random_policy
from protocol.messages import PROTOCOL_VERSION, Decision, Error, GameStart, LiveGameEnded, OpponentAway, Welcome
from server.connections.auth import TOKEN_PATTERN, new_token

AUTH = {"Authorization": f"Bearer {ADMIN}"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def rotate(arena: Harness, bot: str, token: str, status: int = 200) -> dict[str, Any]:
    resp = await arena.client.post(f"/api/bots/{bot}/token", headers=bearer(token))
    body = await resp.json()
    assert resp.status == status, body
    return body  # type: ignore[no-any-return]


async def refused_hello(arena: Harness, token: str) -> tuple[Error, int | None]:
    client = await arena.ws()
    await client.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token})
    return await client.expect(Error), await client.closed()


def test_new_tokens_carry_the_prefix_and_never_begin_with_a_dash() -> None:
    tokens = {new_token() for _ in range(10_000)}
    assert len(tokens) == 10_000
    assert all(TOKEN_PATTERN.fullmatch(t) and t.startswith("mdl_") and len(t) == 47 for t in tokens)


async def test_a_rotation_mid_game_closes_the_old_connection_and_the_game_resumes_with_the_new_token(
        make_arena: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    arena = await make_arena(decision_ms=5000)
    old = await arena.create_bot("alice")
    alice, bob = await arena.connect(old), await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    pending = await alice.until(Decision)  # alice thinks; meanwhile her token is rotated
    body = await rotate(arena, "alice", old)
    assert set(body) == {"name", "token", "rotated"} and body["name"] == "alice"
    new = body["token"]
    assert TOKEN_PATTERN.fullmatch(new) and new != old
    assert await alice.closed() == 4011
    away = await bob.until(OpponentAway)
    assert away.game_id == game_id
    # The old token is refused at once, everywhere; the new one takes the game up where it was.
    err, code = await refused_hello(arena, old)
    assert (err.code, code) == ("bad_token", 4001)
    await rotate(arena, "alice", old, 401)
    again = await arena.ws()
    await again.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": new})
    welcome = await again.expect(Welcome)
    assert welcome.bot == "alice" and welcome.games == [game_id]
    assert (await again.expect(GameStart)).resumed
    asked = await again.until(Decision)
    assert asked.request_id == pending.request_id  # the same decision, asked again
    await again.send_move(asked, asked.legal[0])
    overs = await asyncio.gather(play_out(again, random_policy(1)), play_out(bob, random_policy(2)))
    result = overs[0][0].result
    assert result.end_reason in ("river", "deck", "no_moves", "turn_limit") and result == overs[1][0].result
    stored = await arena.get_json(f"/api/games/{game_id}")
    assert stored["status"] == "finished" and stored["result"]["scores"] == list(result.scores)
    assert "bot alice: token rotated by its owner from 127.0.0.1; the old one is refused from now on" in caplog.text


async def test_rotation_by_the_admin_revocation_and_every_refusal(make_arena: Any) -> None:
    arena = await make_arena()
    alice_token, bob_token = await arena.create_bot("alice"), await arena.create_bot("bob")
    client = arena.client
    cases: list[tuple[str, str, dict[str, str], int, str]] = [
        ("POST", "/api/bots/carol/token", AUTH, 404, "unknown_bot"),
        ("POST", "/api/bots/house/token", AUTH, 400, "house_bot"),
        ("DELETE", "/api/bots/house/token", AUTH, 400, "house_bot"),
        ("POST", "/api/bots/alice/token", {}, 401, "unauthorized"),
        ("POST", "/api/bots/alice/token", bearer("mdl_" + "x" * 43), 401, "bad_token"),
        ("POST", "/api/bots/alice/token", bearer(bob_token), 401, "bad_token"),  # another bot's token
        ("DELETE", "/api/bots/alice/token", {}, 401, "unauthorized"),
        ("DELETE", "/api/bots/alice/token", bearer(alice_token), 403, "forbidden"),  # only the admin revokes
    ]
    for method, path, headers, status, code in cases:
        resp = await client.request(method, path, headers=headers)
        body = await resp.json()
        assert (resp.status, body["error"]["code"]) == (status, code), (method, path, body)
    connected = await arena.connect(alice_token)  # every refusal above changed nothing
    # The admin rotates alice's token: her connection closes, the old token is refused.
    resp = await client.post("/api/bots/alice/token", headers=AUTH)
    assert resp.status == 200
    by_admin = (await resp.json())["token"]
    assert await connected.closed() == 4011
    assert (await refused_hello(arena, alice_token))[1] == 4001
    connected = await arena.connect(by_admin)
    # Revoked: closed, and no token of hers works until a new one is issued.
    resp = await client.delete("/api/bots/alice/token", headers=AUTH)
    assert resp.status == 200 and set(await resp.json()) == {"name", "revoked"}
    assert await connected.closed() == 4011
    assert (await refused_hello(arena, by_admin))[1] == 4001
    assert (await client.delete("/api/bots/alice/token", headers=AUTH)).status == 200  # again: nothing changes
    await rotate(arena, "alice", by_admin, 401)  # a revoked token cannot rotate itself back
    resp = await client.post("/api/bots/alice/token", headers=AUTH)
    await arena.connect((await resp.json())["token"])
    await arena.connect(bob_token)  # bob never changed


async def test_of_two_rotations_at_once_one_wins_and_the_other_is_told(make_arena: Any) -> None:
    arena = await make_arena()
    token = await arena.create_bot("alice")
    storage = arena.arena.storage
    real = storage.bot_by_name
    both_read = asyncio.Event()
    reads = 0

    async def read_together(name: str) -> Any:
        nonlocal reads
        row = await real(name)
        reads += 1
        if reads == 2:
            both_read.set()
        await both_read.wait()  # both requests have read the same token hash before either writes
        return row

    storage.bot_by_name = read_together  # type: ignore[method-assign]
    answers = await asyncio.gather(*[arena.client.post("/api/bots/alice/token", headers=bearer(token))
                                     for _ in range(2)])
    storage.bot_by_name = real  # type: ignore[method-assign]
    bodies = [await r.json() for r in answers]
    assert sorted(r.status for r in answers) == [200, 409]
    lost = next(b for r, b in zip(answers, bodies, strict=True) if r.status == 409)
    assert lost["error"]["code"] == "token_changed"
    won = next(b for r, b in zip(answers, bodies, strict=True) if r.status == 200)
    assert (await arena.connect(won["token"]))  # the winner's token is the bot's
    assert (await refused_hello(arena, token))[1] == 4001
    # Many at once, without help: exactly one wins, the others are refused with a typed error.
    answers = await asyncio.gather(*[arena.client.post("/api/bots/alice/token", headers=bearer(won["token"]))
                                     for _ in range(5)])
    codes = sorted([(r.status, (await r.json()).get("error", {}).get("code")) for r in answers],
                   key=lambda sc: (sc[0], sc[1] or ""))
    assert codes[0] == (200, None) and all(c in ((401, "bad_token"), (409, "token_changed")) for c in codes[1:])


async def test_a_hello_whose_token_is_retired_while_it_is_looked_up_is_refused(make_arena: Any) -> None:
    arena = await make_arena()
    token = await arena.create_bot("alice")
    storage = arena.arena.storage
    real = storage.bot_by_token_hash
    looked_up, go_on = asyncio.Event(), asyncio.Event()

    async def slow_lookup(token_hash: str) -> Any:
        row = await real(token_hash)  # found: the token is still alice's here
        looked_up.set()
        await go_on.wait()
        return row

    storage.bot_by_token_hash = slow_lookup  # type: ignore[method-assign]
    client = await arena.ws()
    await client.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token})
    await asyncio.wait_for(looked_up.wait(), 5)
    storage.bot_by_token_hash = real  # type: ignore[method-assign]
    await rotate(arena, "alice", token)  # retired before that hello took the connection
    go_on.set()
    assert (await client.expect(Error)).code == "bad_token"
    assert await client.closed() == 4001
    assert not arena.arena.presence.is_connected("alice")


async def test_a_token_sent_with_the_newline_of_its_file_is_refused_with_words_that_say_so(make_arena: Any) -> None:
    """``--token-file`` files hold the token and a newline; a bot that sends both is refused
    (a token is compared whole), with a message that names the white space instead of saying
    that no bot has the token. The token alone is welcome."""
    arena = await make_arena()
    token = await arena.create_bot("alice")
    for sent in (token + "\n", " " + token, token + "\r\n"):
        client = await arena.ws()
        await client.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": sent})
        refused = await client.expect(Error)
        assert (refused.code, refused.message) == (
            "bad_token", "no bot has this token: it has white space around it (the newline of its file?), "
                         "which no token holds; send the token alone")
        assert await client.closed() == 4001
    client = await arena.ws()
    await client.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": new_token() + "\n"})
    assert (await client.expect(Error)).message.startswith("no bot has this token: it has white space")
    client = await arena.ws()
    await client.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": new_token()})
    assert (await client.expect(Error)).message == "no bot has this token"
    client = await arena.ws()
    await client.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token})
    assert (await client.expect(Welcome)).bot == "alice"


async def test_tokens_never_reach_a_log_an_error_health_live_a_record_a_replay_or_an_export(
        make_arena: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    arena = await make_arena(decision_ms=5000)
    tokens = [await arena.create_bot("alice"), await arena.create_bot("bob")]
    seen: list[str] = []  # everything a client was sent or shown, but the answers that issue a token
    live = LiveStream(await arena.client.ws_connect("/live?games=all"))
    alice, bob = await arena.connect(tokens[0]), await arena.connect(tokens[1])
    game_id = await arena.start_game(["alice", "bob"])
    await alice.until(Decision)
    # Frames that carry the token and are refused while a decision waits: kept in the game's telemetry.
    await alice.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": tokens[0], "colour": "red"})
    assert (await alice.until(Error)).code == "invalid_message"
    await alice.ws.send_str('{"type": "hello", "protocol": 1, "token": "' + tokens[0])
    assert (await alice.until(Error)).code == "bad_json"
    await alice.ws.send_str(f'{{"type": "move", "game_id": "{game_id}", "request_id": "{tokens[0]}"}}')
    assert (await alice.until(Error)).code == "invalid_message"
    await alice.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": tokens[0]})
    assert (await alice.until(Error)).code == "already_authenticated"
    # Rotated mid-game; rotations and hellos with the old token refused; the game played out.
    rotated = await arena.client.post("/api/bots/alice/token", headers=bearer(tokens[0]))
    tokens.append((await rotated.json())["token"])
    assert await alice.closed() == 4011
    for _ in range(2):
        seen.append(await (await arena.client.post("/api/bots/alice/token", headers=bearer(tokens[0]))).text())
        client = await arena.ws()
        await client.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": tokens[0]})
        await client.closed()
        seen += client.raw
    again = await arena.connect(tokens[2])
    await asyncio.gather(play_out(again, random_policy(3)), play_out(bob, random_policy(4)))
    while (await live.next_of(LiveGameEnded)).game.game_id != game_id:
        pass
    await live.close()
    seen += live.raw
    seen.append(await (await arena.client.delete("/api/bots/bob/token", headers=AUTH)).text())
    resp = await arena.client.post("/api/bots/bob/token", headers=AUTH)
    tokens.append((await resp.json())["token"])
    for path in ["/health", "/api/bots", "/api/bots/alice", "/api/bots/bob", "/api/ladder", "/api/games",
                 f"/api/games/{game_id}", f"/api/games/{game_id}/record", f"/api/games/{game_id}/replay",
                 f"/api/games/{game_id}/replay?seat=1", "/api/games/export", f"/api/games/{game_id}/replay?seat=0"]:
        resp = await arena.client.get(path)
        assert resp.status == 200, path
        seen.append(await resp.text())
    assert seen[-1].count('"code":"invalid_message"') == 2 and seen[-1].count('"code":"bad_json"') == 1
    assert seen[-1].count("(hidden)") == 3  # each refused frame as it was sent, less the token
    seen += alice.raw + bob.raw + again.raw
    text = "\n".join(seen) + caplog.text
    assert len(tokens) == 4 and "alice" in text
    for token in tokens:
        assert token not in text
