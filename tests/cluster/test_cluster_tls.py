"""Tokens and TLS in a cluster: a bot's token rotated on one node while the bot plays on
another (closed there with 4011, the old token refused on every node at once, the game resumed
with the new token on another node and finished), and ``deploy/haproxy.cfg`` terminating TLS in
front of plain nodes (a certificate authority made in the test), telling them by
``X-Forwarded-Proto`` that a request came by TLS."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import aiohttp

from arena_testkit import ADMIN, WsClient, free_port, gather, play_out, random_policy, wait_until
from conftest import MakeCluster
from mandala_client import Client
from protocol.messages import PROTOCOL_VERSION, Challenged, Decision, Error, GameStart, OpponentAway, Welcome
from test_chaos import HAPROXY, ROOT, haproxy_or_skip
from test_cluster_games import bots_on
from tls_kit import Ca


async def test_a_rotation_on_one_node_closes_the_bot_on_another_and_its_game_resumes_with_the_new_token(
        make_cluster: MakeCluster) -> None:
    n1, n2 = await make_cluster(2, decision_ms=30_000)
    bots = await bots_on([n1, n2], {"alice": 1, "bob": 0})
    alice, bob = bots["alice"], bots["bob"]
    old_token = n1.tokens["alice"]
    await bob.send({"type": "challenge", "opponent": "alice"})
    offer = await alice.until(Challenged)
    await alice.send({"type": "accept", "challenge_id": offer.challenge_id})
    start = await alice.until(GameStart)
    assert start.game_id in n1.arena.manager.running  # hosted by the challenger's node, alice on the other
    bob_play = asyncio.create_task(play_out(bob, random_policy(2), timeout=30))
    pending = await alice.until(Decision)
    # Rotated through n1 with alice's own token, while she thinks on n2.
    resp = await n1.client.post("/api/bots/alice/token", headers={"Authorization": f"Bearer {old_token}"})
    assert resp.status == 200
    new_token = (await resp.json())["token"]
    assert await alice.closed() == 4011
    for node in (n1, n2):  # the old token is refused on every node at once
        client = await node.ws()
        await client.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": old_token})
        assert (await client.expect(Error)).code == "bad_token" and await client.closed() == 4001
    # Back with the new token, on the node that hosts the game this time.
    again = WsClient(await n1.client.ws_connect("/ws"))
    await again.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": new_token})
    assert (await again.expect(Welcome)).games == [start.game_id]
    asked = await again.until(Decision)
    assert asked.request_id == pending.request_id
    await again.send_move(asked, asked.legal[0])
    overs = await gather(play_out(again, random_policy(1), timeout=30), bob_play)
    assert overs[0][0].result == overs[1][0].result and overs[0][0].result.end_reason != "timeout"
    stored = await n2.get_json(f"/api/games/{start.game_id}")
    assert stored["status"] == "finished"
    assert any(isinstance(f, OpponentAway) for f in bob.frames)


async def test_a_token_retired_while_redis_was_lost_closes_the_connection_when_it_is_back(
        make_cluster: MakeCluster) -> None:
    n1, n2 = await make_cluster(2)
    bots = await bots_on([n1, n2], {"alice": 1})
    token = n1.tokens["alice"]
    assert n2.arena.cluster is not None
    # As if the news never came: the hash changes in storage without a word on the bus.
    storage = n1.arena.storage
    row = await storage.bot_by_name("alice")
    assert row is not None and await storage.replace_token_hash("alice", row.token_hash, "revoked:by-hand")
    await n2.arena.cluster.bots.check_tokens()  # what n2 does when Redis is back
    assert await bots["alice"].closed() == 4011
    client = await n2.ws()
    await client.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token})
    assert await client.closed() == 4001


class TlsProxy:
    """``deploy/haproxy.cfg`` with TLS on (``CLUSTER_TLS_CERT``) in front of ``nodes``."""

    def __init__(self, nodes: list[str], pem: Path | None, log: Path) -> None:
        self.port = free_port()
        scheme = "https" if pem else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        env = {**os.environ, "CLUSTER_HOST": "127.0.0.1", "CLUSTER_PORT": str(self.port),
               "CLUSTER_STATS_PORT": str(free_port())}
        if pem is not None:
            env["CLUSTER_TLS_CERT"] = str(pem)
        nodes = nodes + nodes[-1:] * (3 - len(nodes))  # the file names three nodes
        env.update({f"CLUSTER_NODE{i + 1}": address for i, address in enumerate(nodes)})
        self.log = log.open("ab")
        check = subprocess.run([HAPROXY, "-c", "-f", str(ROOT / "deploy" / "haproxy.cfg")], env=env,
                               capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stdout + check.stderr
        self.proc = subprocess.Popen([HAPROXY, "-db", "-f", str(ROOT / "deploy" / "haproxy.cfg")], env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self.log.close()


async def answers(http: aiohttp.ClientSession, url: str, **kw: Any) -> bool:
    try:
        async with http.get(url + "/health", **kw) as resp:
            return resp.status == 200
    except aiohttp.ClientError:
        return False


class First:
    def choose(self, view: Any, legal: list[Any]) -> Any:
        return legal[0]


async def test_haproxy_terminates_tls_in_front_of_plain_nodes_and_says_so(make_cluster: MakeCluster,
                                                                         tmp_path: Path) -> None:
    haproxy_or_skip()
    ca = Ca(tmp_path / "ca")
    issued = ca.issue("proxy")
    pem = tmp_path / "proxy-with-key.pem"
    pem.write_bytes(issued.cert.read_bytes() + issued.key.read_bytes())
    nodes = await make_cluster(2, trust_forwarded_for=True, require_tls=True)
    addresses = [f"127.0.0.1:{n.client.port}" for n in nodes]
    secure, plain = TlsProxy(addresses, pem, tmp_path / "tls.log"), TlsProxy(addresses, None, tmp_path / "plain.log")
    try:
        async with aiohttp.ClientSession() as http:
            await wait_until(lambda: answers(http, secure.url, ssl=ca.client_context()), 15, "HAProxy (TLS) is not up")
            await wait_until(lambda: answers(http, plain.url), 15, "HAProxy (plain) is not up")
            tokens = {}
            for name in ("alice", "bob"):
                async with http.post(secure.url + "/api/bots", json={"name": name},
                                     headers={"Authorization": f"Bearer {ADMIN}"}, ssl=ca.client_context()) as resp:
                    assert resp.status == 201
                    tokens[name] = (await resp.json())["token"]
            wss = secure.url.replace("https", "wss", 1) + "/ws"
            bob = Client(First(), url=wss, token=tokens["bob"], ca_file=str(ca.file), games=1)
            alice = Client(First(), url=wss, token=tokens["alice"], ca_file=str(ca.file), challenge="bob", games=1)
            bob_task = asyncio.create_task(bob.run())
            await asyncio.wait_for(bob.connected.wait(), 10)
            alice_task = asyncio.create_task(alice.run())
            await asyncio.wait_for(alice.connected.wait(), 10)
            held = [c for n in nodes for c in n.arena.presence.connections if c.bot in ("alice", "bob")]
            assert len(held) == 2 and all(c.tls for c in held)  # X-Forwarded-Proto: https reached the nodes
            games = await asyncio.wait_for(asyncio.gather(alice_task, bob_task), 60)
            assert [len(g) for g in games] == [1, 1] and games[0][0].result == games[1][0].result
            # Through the plain frontend a client cannot claim TLS: HAProxy sets the header itself.
            spectator = WsClient(await http.ws_connect(plain.url.replace("http", "ws", 1) + "/ws",
                                                       headers={"X-Forwarded-Proto": "https"}))
            await spectator.send({"type": "hello", "protocol": PROTOCOL_VERSION})
            await spectator.expect(Welcome)
            watched = [c for n in nodes for c in n.arena.presence.connections if c.bot is None]
            assert len(watched) == 1 and not watched[0].tls
            await spectator.close()
    finally:
        secure.stop()
        plain.stop()

