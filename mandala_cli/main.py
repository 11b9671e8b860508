"""``mandala``: the command line of Mandala Arena.

Each subcommand lives in a module of its own that registers its parser, so
the engine tools start without loading the server.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata

from mandala_client import match as match_cmd
from mandala_client.credentials import join_values

from . import bot_cmd, demo_cmd, export_cmd, history_cmd, replay_cmd, selfplay_cmd, serve_cmd, tournament_cmd

COMMANDS = (replay_cmd, selfplay_cmd, serve_cmd, bot_cmd, match_cmd, demo_cmd, tournament_cmd, export_cmd, history_cmd)


def version() -> str:
    """The arena's version, the client distribution's beside it, and the protocol's."""
    from protocol.messages import PROTOCOL_VERSION

    def of(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "unknown"

    return f"mandala {of('mandala-arena')} (mandala-arena-client {of('mandala-arena-client')}, protocol {PROTOCOL_VERSION})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mandala", description="Mandala Arena: rules engine, server and tools.")
    parser.add_argument("--version", action="version", version=version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


SECRET_OPTIONS = ("--token", "--admin-token")
"""Options whose value may begin with ``-`` (a token issued before the ``mdl_`` prefix)."""
NAME_OPTIONS = ("--bot", "--bots", "--bot-under-test")
"""Options whose value may begin with ``-`` too: a bot's name may (``-dash``)."""


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(join_values(words, (*SECRET_OPTIONS, *NAME_OPTIONS)))
    try:
        return int(args.run(args) or 0)
    except BrokenPipeError:  # e.g. piped into head
        return 0


if __name__ == "__main__":
    sys.exit(main())
