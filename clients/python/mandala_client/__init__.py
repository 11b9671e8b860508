"""The Python side of Mandala Arena for bot authors.

- :func:`run_bot` and :class:`Client` (:mod:`.client`): play a bot on a server over WebSocket;
  the bot only writes ``choose(view, legal) -> move``.
- :mod:`.bots`: the shipped bots (random, greedy, search).
- :mod:`.offline`: play bots against each other in one process (``mandala match``).

The client names are loaded on first use, so the offline tools start without aiohttp.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import Client as Client
    from .client import ClientError as ClientError
    from .client import ConnectionRejected as ConnectionRejected
    from .client import run_bot as run_bot
    from .games import FinishedGame as FinishedGame

_LAZY = {
    "Client": ".client",
    "ClientError": ".client",
    "ConnectionRejected": ".client",
    "run_bot": ".client",
    "FinishedGame": ".games",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
