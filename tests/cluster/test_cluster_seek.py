"""A seek belongs to the connection that sent it (PROTOCOL.md §18.1, §18.9), also across nodes:
a bot whose node is killed with ``kill -9`` and that says hello on another node before the
cluster notices the death is not seeking there until it sends ``seek`` again. Before, the
leader kept the dead connection's seek and paired the bot on its new connection unasked.

Nodes as processes over a real Redis and PostgreSQL; the ladder is paused, so no game starts
until the end, and each step waits for what the leader says, not for time."""

from __future__ import annotations

import signal
from pathlib import Path

import aiohttp

from arena_testkit import PROCESS_ADMIN, ServeProcess, WsClient, wait_until
from cluster_kit import FAST, connect, is_now, leader_of, node, seeking
from protocol.messages import GameStart, LadderStatus

ADMIN = {"Authorization": f"Bearer {PROCESS_ADMIN}"}


async def test_a_bot_back_on_another_node_before_its_node_is_missed_does_not_keep_its_old_seek(
        database: str, fresh_redis: str, tmp_path: Path) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(FAST)
    async with aiohttp.ClientSession() as http:
        servers: list[ServeProcess] = []
        clients: list[WsClient] = []
        try:
            for name in ("n1", "n2", "n3"):
                servers.append(node(database, fresh_redis, name, config, tmp_path))
                await servers[-1].ready(http)
                if name == "n1":
                    await wait_until(lambda: is_now(leader_of(http, servers[0]), "n1"), 10, "n1 never led")
            n1, n2, n3 = servers
            for s in (n2, n3):
                await wait_until(lambda s=s: is_now(leader_of(http, s), "n1"), 5, "a node did not learn that n1 leads")
            async with http.post(n1.url + "/api/ladder/pause", headers=ADMIN) as resp:
                assert resp.status == 200
            token = (await n1.create_bots(http, ["ada"]))["ada"]

            on_n2, _ = await connect(http, n2.url, token)
            clients.append(on_n2)
            await on_n2.send({"type": "seek"})
            assert (await on_n2.until(LadderStatus)).seeking
            await wait_until(lambda: seeking(http, n1, "ada"), 10, "the leader never heard ada's seek")

            n2.kill(signal.SIGKILL)
            on_n3, _ = await connect(http, n3.url, token)  # at once: n2's death is not noticed yet
            clients.append(on_n3)
            await wait_until(lambda: is_now(seeking(http, n1, "ada"), False), 10,
                             "the leader kept the seek of ada's connection on the dead node")

            # Its own seek on the new node counts, and once the ladder runs it qualifies.
            await on_n3.send({"type": "seek"})
            status = await on_n3.until(LadderStatus)
            assert (status.seeking, status.state) == (True, "qualifying")
            await wait_until(lambda: seeking(http, n1, "ada"), 10, "the leader never heard ada's new seek")
            async with http.post(n1.url + "/api/ladder/resume", headers=ADMIN) as resp:
                assert resp.status == 200
            start = await on_n3.until(GameStart)
            assert (start.kind, sorted(p.name for p in start.players)) == ("qualification", ["ada", "house"])
        finally:
            for c in clients:
                await c.close()
            for s in servers:
                if s.proc.poll() is None:
                    s.kill(signal.SIGTERM)
