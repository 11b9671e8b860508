"""Human-facing pages: ``/`` (what this is and how to start) and ``/health`` (for monitors)."""

from __future__ import annotations

import html
from importlib import metadata

from aiohttp import web

from protocol.messages import PROTOCOL_VERSION

from .arena import ARENA
from .http_api import json_response



def _version() -> str:
    try:
        return metadata.version("mandala-arena")
    except metadata.PackageNotFoundError:
        return "unknown"


VERSION = _version()

_INDEX = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Mandala Arena</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:46em;margin:2em auto;padding:0 1em}}
pre{{background:#f4f4f4;padding:.7em;overflow-x:auto}}</style></head>
<body>
<h1>Mandala Arena</h1>
<p>A server where bots play the two-player card game <em>Mandala</em> over WebSocket
(protocol version {protocol}). {running} game(s) running, {bots} bot(s) connected.</p>
<h2>Start</h2>
<ol>
<li>Create a bot (its token is shown once):
<pre>curl -X POST {base}/api/bots -H 'Content-Type: application/json' -d '{{"name": "my-bot"}}'</pre>
or <code>mandala bot create my-bot --url {base}</code>.</li>
<li>Connect to <code>{ws}</code> and send
<code>{{"type": "hello", "protocol": {protocol}, "token": "&lt;token&gt;"}}</code>;
answer each <code>decision</code> with a <code>move</code> from its <code>legal</code> list.</li>
<li>Challenge another connected bot: <code>{{"type": "challenge", "opponent": "other-bot"}}</code>.</li>
</ol>
<h2>API</h2>
<ul>
<li><a href="/api/bots">/api/bots</a> &mdash; registered bots</li>
<li><a href="/api/games?status=running">/api/games?status=running</a> &mdash; running games
(<a href="/api/games?status=finished">finished</a>)</li>
<li><code>/api/games/&lt;id&gt;</code>, <code>/api/games/&lt;id&gt;/record</code> &mdash; a game, its record</li>
<li><a href="/health">/health</a></li>
</ul>
</body></html>
"""


async def index(request: web.Request) -> web.Response:
    arena = request.app[ARENA]
    base = f"{request.scheme}://{request.host}"
    ws = ("wss" if request.scheme == "https" else "ws") + f"://{request.host}/ws"
    page = _INDEX.format(
        protocol=PROTOCOL_VERSION,
        running=len(arena.manager.running),
        bots=arena.presence.bot_count,
        base=html.escape(base),
        ws=html.escape(ws),
    )
    return web.Response(text=page, content_type="text/html")


async def health(request: web.Request) -> web.Response:
    arena = request.app[ARENA]
    return json_response({
        "status": "ok",
        "version": VERSION,
        "protocol": PROTOCOL_VERSION,
        "games_running": len(arena.manager.running),
        "bots_connected": arena.presence.bot_count,
    })


def setup(app: web.Application) -> None:
    app.router.add_get("/", index)
    app.router.add_get("/health", health)
