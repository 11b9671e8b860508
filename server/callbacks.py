"""Calling code that other code registered (listeners, completion callbacks) without letting
its failure into the caller: it is logged, with its traceback, and the caller goes on."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


def call_safely(callback: Callable[..., None] | None, what: str, *args: Any) -> None:
    """``callback(*args)``, if there is one; a failure is logged as ``what`` failed."""
    if callback is None:
        return
    try:
        callback(*args)
    except Exception:
        log.exception("%s failed", what)
