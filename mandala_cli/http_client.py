"""The HTTP side of the commands that talk to a running server (``mandala bot``,
``mandala tournament``, ``mandala export``): one ``--server`` option (with ``--ca-file`` for an
``https://`` server whose certificate a private authority signed), one request helper, one way
to report a refusal, one way to save a streamed answer to a file whole or not at all.

The standard library's ``urllib`` is enough here (blocking requests from a command line), so
these commands start without loading aiohttp.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from mandala_client.credentials import CA_FILE_ENV
from mandala_client.tls import TlsSetupError, client_context, explain

DEFAULT_SERVER = "http://127.0.0.1:8080"
ADMIN_TOKEN_ENV = "MANDALA_ADMIN_TOKEN"
TIMEOUT_S = 30.0
"""Seconds a request may wait for the server to answer (each read, not the whole answer)."""
CHUNK = 1 << 16


class Failure(Exception):
    """Ends the command with status 1; its text goes to stderr. ``code``: the server's error
    code, when the server refused the request."""

    def __init__(self, text: str, code: str | None = None) -> None:
        super().__init__(text)
        self.code = code


def server_url(text: str) -> str:
    """``--server``: an http:// or https:// address."""
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(f"an http:// or https:// address, not {text!r}")
    base = text.rstrip("/")
    for tail in ("/api", "/ws", "/live"):
        if parts.path.rstrip("/").endswith(tail):  # the commands add their paths themselves
            raise argparse.ArgumentTypeError(f"the server's own address, without {tail}: {base[:-len(tail)]}")
    return base


def add_server_option(parser: argparse.ArgumentParser) -> None:
    """``--server URL``, the one name of the server in every command that talks to one;
    ``--url`` (``mandala bot create``'s name for it once) is a hidden alias that still works."""
    parser.add_argument("--server", type=server_url, default=DEFAULT_SERVER, metavar="URL",
                        help=f"the server's address (default {DEFAULT_SERVER})")
    parser.add_argument("--url", dest="server", type=server_url, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    parser.add_argument("--ca-file", metavar="FILE", default=os.environ.get(CA_FILE_ENV) or None,
                        help="for https://: the CA file (PEM) of the private certificate authority that signed the "
                             f"server's certificate, beside the system's (default ${CA_FILE_ENV})")


def tls(args: argparse.Namespace) -> ssl.SSLContext:
    """How the server's certificate is checked: the system's trust store, plus ``--ca-file``."""
    try:
        return client_context(getattr(args, "ca_file", None))
    except TlsSetupError as e:
        raise Failure(f"error: {e}") from None


def admin_token(args: argparse.Namespace) -> str | None:
    """``--admin-token``, else ``$MANDALA_ADMIN_TOKEN``."""
    return getattr(args, "admin_token", None) or os.environ.get(ADMIN_TOKEN_ENV) or None


def open_url(args: argparse.Namespace, method: str, path: str, body: bytes | None = None,
             admin: bool = False, token: str | None = None) -> http.client.HTTPResponse:
    """Send a request to ``args.server`` (with the admin token if ``admin``, else ``token`` if
    given); the open response of a 2xx answer, else :class:`Failure`."""
    headers = {}
    if body is not None:
        headers["Content-Type"] = "application/json"
    source = None
    if admin:
        token = admin_token(args)
        source = "--admin-token" if getattr(args, "admin_token", None) else f"${ADMIN_TOKEN_ENV}"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = body if body is not None else (b"" if method == "POST" else None)
    req = urllib.request.Request(args.server + path, data=data, headers=headers, method=method)
    context = tls(args) if args.server.startswith("https://") else None
    try:
        resp: http.client.HTTPResponse = urllib.request.urlopen(req, timeout=TIMEOUT_S, context=context)
    except urllib.error.HTTPError as e:
        with e:
            raise refusal(e, admin and not token, source if admin and token else None) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        raise unreachable(args, e) from None
    return resp


def refusal(e: urllib.error.HTTPError, tokenless: bool = False, admin_source: str | None = None) -> Failure:
    """``error: CODE: MESSAGE`` from the server's JSON error (the status and reason if it sent none);
    with a hint where no admin token was given, or where the one given (from ``admin_source``)
    was refused: most often one kept from a server's last start, which made a new one."""
    try:
        err = json.loads(e.read())["error"]
        line, code = f"error: {err['code']}: {err['message']}", str(err["code"])
    except (ValueError, KeyError, TypeError, OSError, http.client.HTTPException):
        return Failure(f"error: http_{e.code}: {e.reason}")
    if tokenless and e.code == 401:
        line += f"\n(give the organizer's token with --admin-token or ${ADMIN_TOKEN_ENV})"
    if admin_source is not None and e.code == 403 and err["code"] == "forbidden":
        line += (f"\n(the admin token was read from {admin_source}; a server given none makes a new one at each start "
                 "and prints it in its banner)")
    return Failure(line, code)


def unreachable(args: argparse.Namespace, e: BaseException) -> Failure:
    tls_failure = explain(args.server, e)
    if tls_failure is not None:
        return Failure(f"error: {tls_failure}")
    reason = e.reason if isinstance(e, urllib.error.URLError) else e
    return Failure(f"error: cannot reach the server at {args.server}: {reason}")


def call(args: argparse.Namespace, method: str, path: str, body: bytes | None = None, admin: bool = False,
         token: str | None = None) -> bytes:
    """The whole body of a 2xx answer."""
    with open_url(args, method, path, body, admin, token) as resp:
        try:
            return resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise unreachable(args, e) from None


def call_page(args: argparse.Namespace, path: str) -> tuple[bytes, str | None]:
    """The whole body of a 2xx answer to ``GET path`` and the path of the next page, from its
    ``Link`` header (``None`` on the last page)."""
    with open_url(args, "GET", path) as resp:
        try:
            raw = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise unreachable(args, e) from None
        link = resp.headers.get("Link") or ""
    for part in link.split(","):
        target, _, params = part.partition(";")
        if params.replace(" ", "") == 'rel="next"' and target.strip().startswith("<"):
            return raw, target.strip()[1:-1]
    return raw, None


def as_json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise Failure(f"error: the server's answer is not JSON: {raw[:80]!r}") from None


def chunks(args: argparse.Namespace, resp: http.client.HTTPResponse) -> Iterator[bytes]:
    """The answer's body as it arrives."""
    while True:
        try:
            chunk = resp.read(CHUNK)
        except (OSError, http.client.HTTPException) as e:
            raise unreachable(args, e) from None
        if not chunk:
            return
        yield chunk


def save(output: str | None, write: Callable[[IO[bytes]], None]) -> None:
    """Run ``write`` on stdout (``output`` ``None`` or ``-``) or on FILE: into ``FILE.part``,
    renamed to FILE once it is whole, so FILE is written whole or not at all."""
    if output in (None, "-"):
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    target = Path(output)
    part = target.with_name(target.name + ".part")
    try:
        with part.open("wb") as out:
            write(out)
        os.replace(part, target)
    except OSError as e:
        _discard(part)
        raise Failure(f"error: cannot write {target}: {e.strerror or e}") from None
    except BaseException:
        _discard(part)
        raise


def _discard(part: Path) -> None:
    """Remove a partial file, if there is one and it can be (on a read-only disk it never was)."""
    with contextlib.suppress(OSError):
        part.unlink(missing_ok=True)
