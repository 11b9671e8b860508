"""Finished games per second: P pairs of instant bots (first legal move, at once) playing
challenge games against ``mandala serve`` pinned to core 0, for S seconds, over real sockets.

    python bench/games.py [--repo DIR] [--pairs 10] [--seconds 10] [--port 8101]

``--repo`` runs the server from another checkout (``git worktree add /tmp/old REV``), so two
versions are compared in the same run; the machine is noisy, so compare ratios. Prints one
JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

SERVE = "import sys; from mandala_cli.main import main; sys.exit(main(sys.argv[1:]))"
ADMIN = "bench-admin"


async def bot(http: aiohttp.ClientSession, url: str, token: str, opponent: str | None, done: list[int]) -> None:
    """Answer every decision with the first legal move; the challenger challenges again after
    each game; the other accepts."""
    async with http.ws_connect(url.replace("http", "ws", 1) + "/ws") as ws:
        await ws.send_json({"type": "hello", "protocol": 1, "token": token, "max_games": 1})
        if opponent:
            await ws.send_json({"type": "challenge", "opponent": opponent})
        async for frame in ws:
            msg: dict[str, Any] = json.loads(frame.data)
            kind = msg["type"]
            if kind == "decision":
                await ws.send_json({"type": "move", "game_id": msg["game_id"], "request_id": msg["request_id"],
                                    "move": msg["legal"][0]})
            elif kind == "challenged":
                await ws.send_json({"type": "accept", "challenge_id": msg["challenge_id"]})
            elif opponent and kind in ("game_over", "challenge_declined"):
                done[0] += kind == "game_over"
                await ws.send_json({"type": "challenge", "opponent": opponent})


async def measure(url: str, pairs: int, seconds: float) -> float:
    async with aiohttp.ClientSession() as http:
        for _ in range(400):
            try:
                async with http.get(url + "/health") as resp:
                    if resp.status == 200:
                        break
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
        tokens = []
        for i in range(2 * pairs):
            async with http.post(url + "/api/bots", json={"name": f"b{i}"},
                                 headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
                tokens.append((await resp.json())["token"])
        done = [0]
        tasks = [asyncio.create_task(bot(http, url, tokens[2 * i + 1], None, done)) for i in range(pairs)]
        await asyncio.sleep(0.5)
        tasks += [asyncio.create_task(bot(http, url, tokens[2 * i], f"b{2 * i + 1}", done)) for i in range(pairs)]
        await asyncio.sleep(2)  # warm up
        start, t0 = done[0], time.monotonic()
        await asyncio.sleep(seconds)
        rate = (done[0] - start) / (time.monotonic() - t0)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--port", type=int, default=8101)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "bench.toml"
        config.write_text("messages_per_second = 100000.0\nburst = 100000\n")
        repo = args.repo.resolve()
        env = {**os.environ, "MANDALA_ADMIN_TOKEN": ADMIN, "PYTHONPATH": f"{repo}:{repo}/clients/python"}
        pin = ["taskset", "-c", "0"] if (os.cpu_count() or 1) > 1 else []
        server = subprocess.Popen([*pin, sys.executable, "-c", SERVE, "serve", "--port", str(args.port),
                                   "--db", str(Path(tmp) / "bench.db"), "--config", str(config)],
                                  env=env, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            rate = asyncio.run(measure(f"http://127.0.0.1:{args.port}", args.pairs, args.seconds))
        finally:
            server.terminate()
            server.wait()
    print(json.dumps({"repo": str(repo), "pairs": args.pairs, "seconds": args.seconds, "games_per_s": round(rate, 1)}))


if __name__ == "__main__":
    main()
