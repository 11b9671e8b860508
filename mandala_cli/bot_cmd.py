"""``mandala bot create NAME``: register a bot through a running server's HTTP API."""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request

from .http_client import add_server_option


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("bot", help="manage bots on a running server")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="create a bot and print its token (shown only once)")
    create.add_argument("name", help="2-32 characters: letters, digits, _ . -")
    add_server_option(create)
    create.add_argument("--admin-token", default=os.environ.get("MANDALA_ADMIN_TOKEN"),
                        help="needed when registration is admin-only (default: $MANDALA_ADMIN_TOKEN)")
    create.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    headers = {"Content-Type": "application/json"}
    if args.admin_token:
        headers["Authorization"] = f"Bearer {args.admin_token}"
    req = urllib.request.Request(
        args.server + "/api/bots",
        data=json.dumps({"name": args.name}).encode(),
        headers=headers,
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = json.load(resp)
    except urllib.error.HTTPError as e:
        try:
            err = json.load(e)["error"]
            print(f"mandala bot create: {e.code} {err['code']}: {err['message']}", file=sys.stderr)
        except (ValueError, KeyError, TypeError):
            print(f"mandala bot create: HTTP {e.code} {e.reason}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as e:
        print(f"mandala bot create: cannot reach {args.server}: {getattr(e, 'reason', e)}", file=sys.stderr)
        return 1
    print(f"bot {body['name']} created. Its token (shown only this once):")
    print(body["token"])
    return 0
