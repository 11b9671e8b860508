"""``mandala bot create NAME``, ``mandala bot rotate NAME``, ``mandala bot revoke NAME``: a bot
and its token, through a running server's HTTP API.

A new token is printed, or with ``--token-file FILE`` written to FILE (readable by its owner
only) and printed nowhere. ``rotate`` proves who asks with the bot's current token
(``--token``, ``--token-file``, ``$MANDALA_TOKEN``) or the admin token, which also serves when
the bot's token is refused (a revoked token still in its file); with ``--token-file`` it
reads the current token there and writes the new one in its place, where a running
``mandala-bot --token-file FILE`` finds it when the server closes its connection (4011).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys

from mandala_client.credentials import (
    TOKEN_ENV,
    CredentialError,
    can_write_token_file,
    read_token_file,
    write_token_file,
)

from .http_client import ADMIN_TOKEN_ENV, Failure, add_server_option, as_json, call


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("bot", help="create a bot, rotate or revoke its token, on a running server")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    create = actions.add_parser("create", help="create a bot and print its token (shown only once)")
    create.add_argument("name", help="2-32 characters: letters, digits, _ . - (one beginning with - goes last, after --)")
    add_server_option(create)
    _admin_option(create, "needed when registration is admin-only")
    create.add_argument("--token-file", metavar="FILE", help="write the token to FILE (chmod 600) instead of printing it")
    create.set_defaults(run=run_create)

    rotate = actions.add_parser("rotate", help="issue the bot a new token; the old one is refused at once")
    rotate.add_argument("name", help="the bot (one beginning with - goes last, after --)")
    add_server_option(rotate)
    rotate.add_argument("--token-file", metavar="FILE",
                        help="the bot's token file: its token proves who asks (unless --admin-token is given), and "
                             "the new token replaces it there (instead of being printed)")
    rotate.add_argument("--token", metavar="TOKEN", help=f"the bot's current token (default ${TOKEN_ENV})")
    _admin_option(rotate, "instead of the bot's token, or when the bot's token is refused (revoked)")
    rotate.set_defaults(run=run_rotate)

    revoke = actions.add_parser("revoke", help="refuse the bot's token from now on (admin); rotate issues a new one")
    revoke.add_argument("name", help="the bot (one beginning with - goes last, after --)")
    add_server_option(revoke)
    _admin_option(revoke, "needed")
    revoke.set_defaults(run=run_revoke)


def _admin_option(parser: argparse.ArgumentParser, when: str) -> None:
    parser.add_argument("--admin-token", metavar="TOKEN", help=f"the organizer's token: {when} "
                                                               f"(default ${ADMIN_TOKEN_ENV})")


def _path(name: str) -> str:
    from urllib.parse import quote

    return f"/api/bots/{quote(name, safe='')}"


def _hand_over(body: dict[str, str], token_file: str | None, what: str) -> None:
    """Print the new token, or write it to ``token_file``."""
    if token_file is None:
        print(f"{what} Its token (shown only this once):")
        print(body["token"])
        return
    try:
        write_token_file(token_file, body["token"])
    except CredentialError as e:
        raise Failure(f"error: {e}; the token was issued all the same: rotate it again to get one") from None
    print(f"{what} Its token is in {token_file} (readable by you only).")


def _writable(token_file: str | None) -> None:
    """Refuse, before anything is asked of the server, a token file that cannot be written."""
    if token_file is not None:
        try:
            can_write_token_file(token_file)
        except CredentialError as e:
            raise Failure(f"error: {e}; nothing was asked of the server") from None


def _unclaimed(token_file: str | None) -> None:
    """Refuse, before the server is asked, a token file that already holds something: a
    command copied from the last bot's would overwrite that bot's token, which cannot be
    recovered (``rotate`` is the command that replaces a token file)."""
    if token_file is not None and os.path.exists(token_file) and not os.path.isdir(token_file) \
            and os.path.getsize(token_file) > 0:
        raise Failure(f"error: {token_file} exists (another bot's token?): give a file that does not, or remove it "
                      "first; nothing was asked of the server")


def run_create(args: argparse.Namespace) -> int:
    try:
        _unclaimed(args.token_file)
        _writable(args.token_file)
        body = as_json(call(args, "POST", "/api/bots", json.dumps({"name": args.name}).encode(),
                            admin=bool(_admin(args))))
        _hand_over(body, args.token_file, f"bot {body['name']} created.")
    except Failure as e:
        print(f"mandala bot create: {e}", file=sys.stderr)
        return 1
    return 0


def run_rotate(args: argparse.Namespace) -> int:
    try:
        token = None if args.admin_token else _bot_token(args)
        _writable(args.token_file)
        admin = token is None
        if admin and not _admin(args):
            raise Failure(f"error: give the bot's current token (${TOKEN_ENV}, --token-file or --token) or the admin "
                          f"token (--admin-token or ${ADMIN_TOKEN_ENV})")
        try:
            body = as_json(call(args, "POST", _path(args.name) + "/token", admin=admin, token=token))
        except Failure as e:
            if admin or e.code != "bad_token" or not _admin(args):
                raise
            # The bot's token is retired (revoked, or rotated since): the organizer's reissues it.
            body = as_json(call(args, "POST", _path(args.name) + "/token", admin=True))
        _hand_over(body, args.token_file, f"bot {body['name']}: a new token; the old one is refused from now on.")
    except Failure as e:
        print(f"mandala bot rotate: {e}", file=sys.stderr)
        return 1
    return 0


def run_revoke(args: argparse.Namespace) -> int:
    try:
        body = as_json(call(args, "DELETE", _path(args.name) + "/token", admin=True))
    except Failure as e:
        print(f"mandala bot revoke: {e}", file=sys.stderr)
        return 1
    print(f"bot {body['name']}: its token is revoked; it cannot connect until `mandala bot rotate "
          f"{_as_argument(body['name'])}` (with the admin token) issues a new one.")
    return 0


def _as_argument(name: str) -> str:
    """``name`` as a shell command line takes it: quoted where it must be, after ``--`` if it
    begins with ``-`` (which names may), so a command printed for it can be typed as shown."""
    return ("-- " if name.startswith("-") else "") + shlex.quote(name)


def _admin(args: argparse.Namespace) -> str | None:
    return args.admin_token or os.environ.get(ADMIN_TOKEN_ENV) or None


def _bot_token(args: argparse.Namespace) -> str | None:
    """The bot's current token: ``--token``, else ``--token-file``, else ``$MANDALA_TOKEN``."""
    if args.token:
        return str(args.token)
    if args.token_file and os.path.exists(args.token_file):
        try:
            return read_token_file(args.token_file)
        except CredentialError as e:
            raise Failure(f"error: {e}") from None
    return os.environ.get(TOKEN_ENV) or None
