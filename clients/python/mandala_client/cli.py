"""``mandala-bot``: connect one bot to a Mandala Arena server and play.

::

    MANDALA_TOKEN=mdl_… mandala-bot --url wss://arena.example.org/ws --bot mybot:MyBot --ladder
    mandala-bot --token-file ~/.mandala/mybot.token --bot search,budget=2 --challenge alice --games 10
    mandala-bot --url wss://127.0.0.1:8443/ws --ca-file ca.pem --token-file mybot.token --bot greedy --ladder
    MANDALA_TOKEN=mdl_… mandala-bot --bot policy:mandala_client.env.mlp:MLPPolicy,weights=mlp.npz --ladder

The token comes from ``--token VALUE`` (or ``--token=VALUE``; any token the server issued,
even an old one beginning with ``-``), else ``--token-file FILE``, else ``$MANDALA_TOKEN``:
the file or the variable keep it out of ``ps``. ``--bot`` takes the same specs as ``mandala
match`` (:func:`mandala_client.offline.bot_factory`). Exit status: 0 when the games are done,
1 when the client cannot go on (a bad token, a certificate that does not verify, an unknown
opponent, no server), 2 for a bad command line, 130 after Ctrl-C or SIGTERM (which
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

from protocol.messages import PROTOCOL_VERSION

from .client import Client, ClientError, version
from .credentials import CA_FILE_ENV, TOKEN_ENV, CredentialError, exposed, join_values, read_token_file
from .offline import SpecError, load_bot
from .tls import TlsSetupError

INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mandala-bot", description="Play a bot on a Mandala Arena server.",
                                epilog="mandala-bot match A B plays two bots against each other offline and rates"
                                       " them (mandala-bot match --help).")
    p.add_argument("--version", action="version", version=f"mandala-bot {version()} (protocol {PROTOCOL_VERSION})")
    p.add_argument("--url", default="ws://127.0.0.1:8080/ws", help="the server's WebSocket endpoint, ws:// or wss://"
                   " (default ws://127.0.0.1:8080/ws)")
    token = p.add_mutually_exclusive_group()
    token.add_argument("--token", metavar="TOKEN",
                       help=f"the bot's token; every user of this machine sees it in ps: prefer ${TOKEN_ENV} "
                            "or --token-file")
    token.add_argument("--token-file", metavar="FILE",
                       help="a file holding the bot's token (chmod 600), read again at each connection, so a "
                            "rotation written there is taken up (default: the token is $MANDALA_TOKEN)")
    p.add_argument("--ca-file", metavar="FILE", default=os.environ.get(CA_FILE_ENV) or None,
                   help="for wss://: the CA file (PEM) of the private certificate authority that signed the "
                        f"server's certificate, beside the system's (default ${CA_FILE_ENV})")
    p.add_argument("--bot", required=True, metavar="SPEC",
                   help="random, greedy, search, house:1 … house:5 or package.module:Class, with ,key=value options"
                        " for its constructor (search,budget=0.5); policy:package.module:attr for a policy"
                        " trained in mandala_client.env")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--ladder", action="store_true", help="join the ladder (seek) and play the games it starts")
    mode.add_argument("--challenge", metavar="NAME", help="challenge that bot, again after each game")
    p.add_argument("--no-accept", dest="accept", action="store_false", help="decline the challenges of other bots")
    p.add_argument("--games", type=int, metavar="N",
                   help="stop after N games in all (default: play until interrupted); on the ladder, once the "
                        "return game of every duplicate pair begun is played too, so --games 1 plays a pair")
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
    return load_bot(spec)


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
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["match"]:  # the offline match: a bot rated with no server, nor the arena installed
        from .match import main as match

        return match(words[1:])
    parser = build_parser()
    # A token from before the ``mdl_`` prefix, and a bot's name, may begin with ``-``.
    args = parser.parse_args(join_values(words, ("--token", "--challenge")))
    if not args.token and not args.token_file:
        args.token = os.environ.get(TOKEN_ENV) or None
    if not args.token and not args.token_file:
        parser.error(f"give the bot's token: ${TOKEN_ENV}, --token-file FILE or --token TOKEN")
    if args.token_file:
        try:
            read_token_file(args.token_file)
        except CredentialError as e:
            parser.error(str(e))
    if args.games is not None and args.games < 1:
        parser.error("--games is at least 1")
    if not 1 <= args.max_games <= 64:
        parser.error("--max-games is 1 to 64")
    if not args.url.startswith(("ws://", "wss://")):
        parser.error(f"--url is a ws:// or wss:// address, not {args.url!r}")
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(message)s")
    if args.token_file and (warning := exposed(args.token_file)):
        logging.getLogger("mandala_client").warning("%s", warning)
    try:
        bot = _load(args.bot)
    except SpecError as e:
        parser.error(str(e))
    try:
        client = Client(bot, url=args.url, token=args.token, token_file=args.token_file, ca_file=args.ca_file,
                        max_games=args.max_games, ladder=args.ladder, challenge=args.challenge, accept=args.accept,
                        games=args.games, margin_ms=args.margin_ms)
    except (CredentialError, TlsSetupError) as e:
        parser.error(str(e))
    try:
        return asyncio.run(_play(client))
    except ClientError as e:
        logging.getLogger("mandala_client").error("%s", e)
        return 1
    except KeyboardInterrupt:
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
