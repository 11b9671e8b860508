"""Challenges: declined, expired, refused (unknown, offline, self), busy, withdrawn by leaving."""

from __future__ import annotations

from arena_testkit import ADMIN, Harness, wait_until
from protocol.messages import Challenged, ChallengeDeclined, ChallengeSent, Error, GameStart


async def test_declined_challenge(make_arena) -> None:
    arena: Harness = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    await a.send({"type": "challenge", "opponent": "bob"})
    sent = await a.expect(ChallengeSent)
    got = await b.expect(Challenged)
    assert got.challenge_id == sent.challenge_id and got.expires_ms == sent.expires_ms == 30000
    await b.send({"type": "decline", "challenge_id": got.challenge_id})
    declined = await a.expect(ChallengeDeclined)
    assert (declined.challenge_id, declined.reason) == (sent.challenge_id, "declined")
    await b.send({"type": "accept", "challenge_id": got.challenge_id})
    assert (await b.error()).code == "unknown_challenge"
    assert await a.ping() == [] and await b.ping() == []  # no game started
    assert arena.arena.manager.running == {}


async def test_expired_challenge(make_arena) -> None:
    arena = await make_arena(challenge_expiry_s=0.3)
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    await a.send({"type": "challenge", "opponent": "bob"})
    sent = await a.expect(ChallengeSent)
    assert sent.expires_ms == 300
    got = await b.expect(Challenged)
    declined = await a.expect(ChallengeDeclined, timeout=3)
    assert (declined.challenge_id, declined.reason) == (sent.challenge_id, "expired")
    await b.send({"type": "accept", "challenge_id": got.challenge_id})
    err = await b.error()
    assert err.code == "unknown_challenge"


async def test_challenge_refusals(make_arena) -> None:
    arena = await make_arena()
    a = await arena.bot("alice")
    await arena.create_bot("sleepy")  # registered, never connects
    for opponent, code in [("nobody", "unknown_bot"), ("sleepy", "bot_offline"), ("alice", "challenge_self"),
                           ("ALICE", "challenge_self")]:
        await a.send({"type": "challenge", "opponent": opponent})
        err = await a.error()
        assert err.code == code, (opponent, err)
    # The house bot is never connected: its refusal says what it plays instead.
    await a.send({"type": "challenge", "opponent": "House"})
    err = await a.error()
    assert err.code == "bot_offline" and err.message.startswith("house, the house bot, plays qualification games")
    assert arena.arena.challenges.pending == {}
    # Nor does the organizer's POST /api/games seat it: the refusal says so, not "not connected".
    resp = await arena.client.post("/api/games", json={"players": ["alice", "house"]},
                                   headers={"Authorization": f"Bearer {ADMIN}"})
    assert resp.status == 409 and (await resp.json())["error"] == {
        "code": "bot_offline", "message": "house, the house bot, plays qualification games and the tournaments it is "
                                          "entered in, not an organizer's games"}
    assert await arena.get_json("/api/games?status=running") == []


async def test_only_the_challenged_bot_may_answer_and_names_ignore_case(make_arena) -> None:
    arena = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    c = await arena.bot("carol")
    await a.send({"type": "challenge", "opponent": "BOB"})
    sent = await a.expect(ChallengeSent)
    assert sent.opponent == "bob"
    await b.expect(Challenged)
    for who in (a, c):
        await who.send({"type": "accept", "challenge_id": sent.challenge_id})
        assert (await who.error()).code == "unknown_challenge"
    await b.send({"type": "accept", "challenge_id": sent.challenge_id})
    start_a, start_b = await a.expect(GameStart), await b.expect(GameStart)
    assert start_a.game_id == start_b.game_id and {start_a.seat, start_b.seat} == {0, 1}
    assert not start_a.rated


async def test_busy_bot_declines_at_once_and_leaving_withdraws(make_arena) -> None:
    arena = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")  # max_games 1
    c = await arena.bot("carol")
    await arena.start_game(["bob", "carol"])
    await a.send({"type": "challenge", "opponent": "bob"})
    declined = await a.expect(ChallengeDeclined)
    assert declined.reason == "busy"
    # Raising capacity makes room.
    await b.send({"type": "capacity", "max_games": 2})
    await b.ping()
    await a.send({"type": "challenge", "opponent": "bob"})
    sent = await a.expect(ChallengeSent)
    await b.until(Challenged)
    await b.close()
    gone = await a.expect(ChallengeDeclined)
    assert (gone.challenge_id, gone.reason) == (sent.challenge_id, "offline")
    assert arena.arena.challenges.pending == {}
    del c


async def test_spectators_cannot_challenge(make_arena) -> None:
    arena = await make_arena()
    await arena.bot("alice")
    s = await arena.connect(None)
    await s.send({"type": "challenge", "opponent": "alice"})
    err = await s.expect(Error)
    assert err.code == "spectator"


async def test_open_challenges_are_capped_per_bot(make_arena) -> None:
    arena = await make_arena(max_open_challenges=2, challenge_expiry_s=5)
    a = await arena.bot("alice")
    b = await arena.bot("bob", max_games=4)
    for _ in range(2):
        await a.send({"type": "challenge", "opponent": "bob"})
        await a.expect(ChallengeSent)
        await b.expect(Challenged)
    await a.send({"type": "challenge", "opponent": "bob"})
    err = await a.expect(Error)
    assert (err.code, err.limit) == ("rate_limited", "challenges")
    assert err.retry_after is not None and 0 < err.retry_after <= 5
    assert await b.ping() == []  # bob was not bothered a third time


async def test_answering_a_challenge_whose_challenger_left_is_bot_offline(make_arena) -> None:
    """PROTOCOL.md §5.4: the challenge is void, and its opponent hears why; it no longer
    counts against the challenger's open challenges when it comes back."""
    arena = await make_arena(max_open_challenges=1)
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    await a.send({"type": "challenge", "opponent": "bob"})
    sent = await a.expect(ChallengeSent)
    challenged = await b.expect(Challenged)
    await a.close()
    await wait_until(lambda: not arena.arena.presence.is_connected("alice"), 5, "alice gone")
    a2 = await arena.connect(arena.tokens["alice"])
    await a2.send({"type": "challenge", "opponent": "bob"})  # its one open challenge: the void one does not count
    again = await a2.expect(ChallengeSent)
    assert (await b.expect(Challenged)).challenge_id == again.challenge_id != sent.challenge_id
    await b.send({"type": "accept", "challenge_id": challenged.challenge_id})
    err = await b.expect(Error)
    assert (err.code, err.message) == ("bot_offline", "alice left after it challenged you: the challenge is void")
    assert await a2.ping() == []  # the new alice hears nothing of the old challenge
    await b.send({"type": "accept", "challenge_id": challenged.challenge_id})
    assert (await b.expect(Error)).code == "unknown_challenge"  # answered once: gone
    await b.send({"type": "accept", "challenge_id": again.challenge_id})
    assert (await b.until(GameStart)).players[0].name in ("alice", "bob")


async def test_the_game_of_an_accepted_challenge_names_it_in_game_start(make_arena) -> None:
    """Both seats' ``game_start`` carry the challenge that was accepted, also when a seat is
    told the game again after a reconnect; other games carry none."""
    arena: Harness = await make_arena()
    a = await arena.bot("alice", max_games=2)
    b = await arena.bot("bob", max_games=2)
    await a.send({"type": "challenge", "opponent": "bob"})
    sent = await a.expect(ChallengeSent)
    await b.send({"type": "accept", "challenge_id": (await b.expect(Challenged)).challenge_id})
    starts = [await a.until(GameStart), await b.until(GameStart)]
    assert {(s.kind, s.challenge_id) for s in starts} == {("challenge", sent.challenge_id)}
    await a.close()
    again = await arena.connect(arena.tokens["alice"], max_games=2)
    resumed = await again.until(GameStart)
    assert (resumed.game_id, resumed.resumed, resumed.challenge_id) == (starts[0].game_id, True, sent.challenge_id)
    admin = await arena.start_game(["alice", "bob"])
    other = await again.until(GameStart)
    assert (other.game_id, other.kind, other.challenge_id) == (admin, "admin", None)
