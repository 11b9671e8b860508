"""``mandala-bot``: connect one bot to a Mandala Arena server and play.

::

    mandala-bot --url ws://127.0.0.1:8080/ws --token TOKEN --bot mybot:MyBot --ladder
    mandala-bot --token TOKEN --bot search,budget=2 --challenge alice --games 10

``--bot`` takes the same specs as ``mandala match`` (:func:`mandala_client.offline.bot_factory`).
Exit status: 0 when the games are done, 1 when the client cannot go on (a bad token, an
unknown opponent, no server), 2 for a bad command line, 130 after Ctrl-C or SIGTERM (which
close the connection and resign nothing). Removal from the ladder by the organizer ends
nothing: the bot logs it, stops seeking and plays on (running games, challenges).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from .client import Client, ClientError
from .offline import SpecError, load_bot

TOKEN_ENV = "MANDALA_TOKEN"
INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mandala-bot", description="Play a bot on a Mandala Arena server.")
    p.add_argument("--url", default="ws://127.0.0.1:8080/ws", help="the server's WebSocket endpoint"
                   " (default ws://127.0.0.1:8080/ws)")
    p.add_argument("--token", default=os.environ.get(TOKEN_ENV),
                   help=f"the bot's token (default ${TOKEN_ENV})")
    p.add_argument("--bot", required=True, metavar="SPEC",
                   help="random, greedy, search, house:1 … house:5 or package.module:Class, with ,key=value options"
                        " for its constructor (search,budget=0.5)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--ladder", action="store_true", help="join the ladder (seek) and play the games it starts")
    mode.add_argument("--challenge", metavar="NAME", help="challenge that bot, again after each game")
    p.add_argument("--no-accept", dest="accept", action="store_false", help="decline the challenges of other bots")
    p.add_argument("--games", type=int, metavar="N",
                   help="stop after N games in all (default: play until interrupted)")
    p.add_argument("--max-games", type=int, default=1, metavar="K",
                   help="play up to K games at the same time, 1 to 64 (the hello's max_games); not a total, which"
                        " --games sets (default 1: one game at a time)")
    p.add_argument("--margin-ms", type=float, metavar="MS",
                   help="time kept back from each decision for the network (default 20%% of it, 50-500 ms)")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                   help="default INFO: connections, game starts and results, server errors")
    return p


def _load(spec: str) -> Any:
    if spec.startswith("cmd:"):
        raise SpecError("cmd: programs play offline matches; a program in another language connects to the"
                        " server itself (protocol/PROTOCOL.md)")
    try:
        return load_bot(spec)
    except SpecError:
        raise
    except Exception as e:  # the bot's constructor failed, e.g. an unknown option
        raise SpecError(f"cannot create bot {spec!r}: {e.__class__.__name__}: {e}") from None


async def _play(client: Client) -> int:
    """Run ``client``; Ctrl-C (or SIGTERM) stops it cleanly, a second Ctrl-C the hard way."""
    loop = asyncio.get_running_loop()
    interrupted = False

    def interrupt() -> None:
        nonlocal interrupted
        interrupted = True
        logging.getLogger("mandala_client").info("interrupted: closing the connection")
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        client.stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, interrupt)
    await client.run()
    return INTERRUPTED if interrupted else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.token:
        parser.error(f"give the bot's token with --token or ${TOKEN_ENV}")
    if args.games is not None and args.games < 1:
        parser.error("--games is at least 1")
    if not 1 <= args.max_games <= 64:
        parser.error("--max-games is 1 to 64")
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(message)s")
    try:
        bot = _load(args.bot)
    except SpecError as e:
        parser.error(str(e))
    client = Client(bot, url=args.url, token=args.token, max_games=args.max_games, ladder=args.ladder,
                    challenge=args.challenge, accept=args.accept, games=args.games, margin_ms=args.margin_ms)
    try:
        return asyncio.run(_play(client))
    except ClientError as e:
        logging.getLogger("mandala_client").error("%s", e)
        return 1
    except KeyboardInterrupt:
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
