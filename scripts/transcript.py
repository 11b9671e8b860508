"""Capture a real transcript: the frames one bot sees in a short game on a real server.

``python scripts/transcript.py [--full]`` starts a server in-process (temporary database,
loopback, a free port), creates two bots over HTTP, connects both and a spectator over
WebSocket, has the admin start a game between them on a fixed deal (``mandala.Game.new(seed=101)``)
and lets the bots play a fixed list of moves until ``bob`` resigns. It prints every frame
``alice`` sent (``→``) and received (``←``), one per line, views abbreviated as in PROTOCOL.md
§9.2 (``--full``: complete frames as JSON lines). PROTOCOL.md's transcript and examples come
from this; rerun it after a protocol change and compare.

``capture()`` returns everything as data, for tests or other renderings.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

import mandala
from mandala.cards import COLORS
from protocol.messages import PROTOCOL_VERSION
from server.app import create_app
from server.config import Settings

SEED = 101
"""The deal: ``mandala.Game.new(seed=SEED)``. Its mandala 0 is completed on the 4th move."""

SCRIPT: list[dict[str, Any]] = [
    {"type": "field", "mandala": 0, "color": "purple", "count": 2},  # alice
    {"type": "field", "mandala": 0, "color": "red", "count": 2},  # bob
    {"type": "field", "mandala": 0, "color": "yellow", "count": 1},  # alice
    {"type": "mountain", "mandala": 0, "color": "black"},  # bob: completes mandala 0
    {"type": "claim", "color": "orange"},  # alice picks first (R11)
    {"type": "claim", "color": "green"},  # bob
    {"type": "claim", "color": "black"},  # alice, then her turn (R15)
    {"type": "mountain", "mandala": 0, "color": "yellow"},  # alice
]
"""The moves, by ply; at the decision after the last one, ``bob`` resigns."""

Frame = tuple[str, dict[str, Any]]


async def _bot(
    session: aiohttp.ClientSession, url: str, token: str, name: str, log: list[Frame] | None, go: asyncio.Event
) -> None:
    """Play the script for one bot; log its frames if ``log`` is given."""
    async with session.ws_connect(url) as ws:

        async def send(msg: dict[str, Any]) -> None:
            if log is not None:
                log.append(("→", msg))
            await ws.send_str(json.dumps(msg))

        await send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token, "max_games": 1, "client": f"{name}-bot/0.1 (python)"})
        async for frame in ws:
            msg = json.loads(frame.data)
            if log is not None:
                log.append(("←", msg))
            if msg["type"] == "decision":
                await go.wait()
                ply = msg["request_id"]
                if ply < len(SCRIPT):
                    await send({"type": "move", "game_id": msg["game_id"], "request_id": ply, "move": SCRIPT[ply]})
                else:
                    await send({"type": "resign", "game_id": msg["game_id"]})
            elif msg["type"] == "game_over":
                return


async def _spectator(session: aiohttp.ClientSession, url: str, game_id: str, log: list[dict[str, Any]], ready: asyncio.Event) -> None:
    async with session.ws_connect(url) as ws:
        await ws.send_str(json.dumps({"type": "hello", "protocol": PROTOCOL_VERSION}))
        await ws.receive()  # welcome
        await ws.send_str(json.dumps({"type": "watch", "game_id": game_id}))
        async for frame in ws:
            msg = json.loads(frame.data)
            log.append(msg)
            ready.set()
            if msg["type"] == "game_over":
                return


async def capture() -> dict[str, Any]:
    """Run the game; return alice's frames, the spectator's, and the HTTP answers."""
    with tempfile.TemporaryDirectory() as tmp:
        admin = "transcript-admin-token"
        app = create_app(Settings(db=str(Path(tmp) / "transcript.db"), admin_token=admin))
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        base, ws_url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/ws"
        http: dict[str, Any] = {}
        try:
            async with aiohttp.ClientSession() as s:
                tokens = {}
                for name in ("alice", "bob"):
                    async with s.post(f"{base}/api/bots", json={"name": name}) as r:
                        body = await r.json()
                        http.setdefault("create_bot", (r.status, body))
                        tokens[name] = body["token"]
                alice_log: list[Frame] = []
                spectator_log: list[dict[str, Any]] = []
                go, watching = asyncio.Event(), asyncio.Event()
                bots = [
                    asyncio.create_task(_bot(s, ws_url, tokens["alice"], "alice", alice_log, go)),
                    asyncio.create_task(_bot(s, ws_url, tokens["bob"], "bob", None, go)),
                ]
                for _ in range(100):  # both connected
                    async with s.get(f"{base}/api/bots") as r:
                        listed = await r.json()
                    if all(b["connected"] for b in listed):
                        break
                    await asyncio.sleep(0.02)
                http["list_bots"] = (r.status, listed)
                deck = [COLORS[c] for c in mandala.Game.new(seed=SEED).deck_order]
                game = {"players": ["alice", "bob"], "first_player": 0, "deck": deck, "reshuffle_seed": SEED}
                async with s.post(f"{base}/api/games", json=game, headers={"Authorization": f"Bearer {admin}"}) as r:
                    http["create_game"] = (r.status, await r.json())
                game_id = http["create_game"][1]["game_id"]
                spectator = asyncio.create_task(_spectator(s, ws_url, game_id, spectator_log, watching))
                await asyncio.wait_for(watching.wait(), 10)
                go.set()
                await asyncio.wait_for(asyncio.gather(*bots, spectator), 30)
                for key, path in (
                    ("list_games", "/api/games?limit=1"),
                    ("get_game", f"/api/games/{game_id}"),
                    ("record", f"/api/games/{game_id}/record"),
                    ("health", "/health"),
                ):
                    async with s.get(base + path) as r:
                        http[key] = (r.status, await r.json())
        finally:
            await runner.cleanup()
    return {"alice": alice_log, "spectator": spectator_log, "http": http, "tokens": tokens, "game_id": game_id}


def _short_view(v: dict[str, Any]) -> dict[str, Any]:
    keep: dict[str, Any] = {"phase": v["phase"], "to_move": v["to_move"], "turns": v["turns"], "…": "…"}
    if v.get("destruction"):
        keep["destruction"] = v["destruction"]
    if v.get("private"):
        keep["private"] = {"hand": {k: n for k, n in v["private"]["hand"].items() if n}, "…": "…"}
    return keep


def abbreviate(direction: str, msg: dict[str, Any]) -> str:
    """One frame as a transcript line: views cut to a few fields, long lists shortened."""
    msg = copy.deepcopy(msg)
    if isinstance(msg.get("view"), dict):
        msg["view"] = _short_view(msg["view"])
    if msg["type"] == "decision" and len(msg["legal"]) > 4:
        msg["legal"] = msg["legal"][:2] + [f"… {len(msg['legal']) - 2} more"]
    if msg["type"] == "game_over":
        r = msg["record"]
        msg["record"] = {"deck": ["…108 colors…"], "reshuffles": r["reshuffles"], "first_player": r["first_player"],
                         "moves": [f"…{len(r['moves'])} moves…"]}
    text = json.dumps(msg, ensure_ascii=False)
    text = text.replace(', "…": "…"', ", …")
    text = re.sub(r'\["…([^"]*)…"\]', r"[…\1…]", text)
    text = re.sub(r'"… (\d+) more"', r"… \1 more", text)
    return f"{direction} {text}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/transcript.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="complete frames as JSON lines (direction, frame)")
    args = parser.parse_args(argv)
    result = asyncio.run(capture())
    for direction, msg in result["alice"]:
        if args.full:
            print(json.dumps([direction, msg], ensure_ascii=False))
        else:
            print(abbreviate(direction, msg))
    return 0


if __name__ == "__main__":
    sys.exit(main())
