"""Random ids for games, tournaments and challenges."""

from __future__ import annotations

import secrets


def new_id(nbytes: int) -> str:
    """``nbytes`` random bytes as URL-safe text that never begins with ``-``: an organizer
    types these ids on command lines (``mandala tournament status ID``), where a leading
    ``-`` reads as an option."""
    while True:
        text = secrets.token_urlsafe(nbytes)
        if text[0] != "-":
            return text
