"""Bot tokens and the admin token.

Tokens are shown to their owner once and stored only as SHA-256 hex, so a leaked database
does not let anyone play as a bot. Comparisons are constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Literal

AdminCheck = Literal["admin", "missing", "wrong"]


def new_token() -> str:
    """A fresh bot (or admin) token: 32 random bytes, URL-safe."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """What the database keeps of a token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


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
    if hmac.compare_digest(token.encode("utf-8"), admin_token.encode("utf-8")):
        return "admin"
    return "wrong"
