"""Bot tokens and the admin token.

Tokens are shown to their owner once and stored only as SHA-256 hex, so a leaked database
does not let anyone play as a bot. Comparisons are constant-time.

A token issued now is ``mdl_`` and 43 URL-safe characters (32 random bytes): the prefix lets
secret scanners and people recognise one (``TOKEN_PATTERN``), and a token never begins with
``-``, which command lines would take for an option. Tokens issued before the prefix (a
quarter of them began with ``-`` or ``_``) keep working: the server knows a token only by its
hash, whatever its form.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from typing import Literal

AdminCheck = Literal["admin", "missing", "wrong"]

TOKEN_PREFIX = "mdl_"
ADMIN_TOKEN_PREFIX = "mdl_admin_"
TOKEN_PATTERN = re.compile(r"mdl_(?:admin_)?[A-Za-z0-9_-]{43}")
"""What a token the server issues looks like (a bot's, or a generated admin token)."""
REVOKED_PREFIX = "revoked:"
"""A revoked bot's stored token hash begins so: no token hashes to it (a hash is hex)."""


def new_token() -> str:
    """A fresh bot token: ``mdl_`` and 32 random bytes, URL-safe."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def new_admin_token() -> str:
    """An admin token generated at start (when none is configured)."""
    return ADMIN_TOKEN_PREFIX + secrets.token_urlsafe(32)


def revoked_hash() -> str:
    """What a revoked bot's row holds instead of a token's hash: unique, and no token's."""
    return REVOKED_PREFIX + secrets.token_hex(16)


def _bytes(text: str) -> bytes:
    """``text`` as UTF-8, surrogates included (a header's bytes that are not UTF-8 are read as
    surrogates, and JSON may escape one), so that such a token hashes and compares as the
    wrong token it is rather than fail."""
    return text.encode("utf-8", "surrogatepass")


def hash_token(token: str) -> str:
    """What the database keeps of a token."""
    return hashlib.sha256(_bytes(token)).hexdigest()


def is_admin_token(token: str, admin_token: str) -> bool:
    """Whether ``token`` is the admin token (compared in constant time)."""
    return hmac.compare_digest(_bytes(token), _bytes(admin_token))


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, if there is one."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def check_admin(authorization: str | None, admin_token: str) -> AdminCheck:
    """Whether a request's ``Authorization`` header carries the admin token
    (``missing`` maps to HTTP 401, ``wrong`` to 403)."""
    token = bearer(authorization)
    if token is None:
        return "missing"
    if is_admin_token(token, admin_token):
        return "admin"
    return "wrong"


_TOKEN_FIELD = re.compile(r'("token"\s*:\s*)"(?:[^"\\]|\\.)*"?')


def redact(text: str) -> str:
    """A frame a bot sent, as it may be kept and shown (a refused frame in its game's
    telemetry): the value of a ``token`` field, and anything shaped like an issued token,
    hidden. A token never reaches a record, a replay or an export this way."""
    return TOKEN_PATTERN.sub("(hidden)", _TOKEN_FIELD.sub(r'\1"(hidden)"', text))
