"""The server's shared state in one object, stored on the aiohttp application.

Handlers reach everything through ``request.app[ARENA]``; nothing is a module global, so
several servers (e.g. in tests) can run in one process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aiohttp import web

from protocol.messages import Limits

from .audience.live import LiveHub
from .common.loop_lag import LoopLag
from .config import Settings
from .connections.pacing import Audience
from .connections.peers import AddressBudget, AddressCap
from .connections.presence import Presence
from .connections.ratelimit import WindowLimiter
from .games.challenges import ChallengeBook
from .games.manager import GameManager
from .ladder.service import Ladder
from .storage import Storage
from .tournaments.director import Director

if TYPE_CHECKING:
    from .cluster.node import ClusterNode


@dataclass
class Arena:
    settings: Settings
    admin_token: str
    storage: Storage
    presence: Presence
    manager: GameManager
    challenges: ChallengeBook
    registrations: WindowLimiter
    ladder: Ladder
    live: LiveHub
    audience: Audience
    addresses: AddressCap
    """The WebSocket connections each client address holds (``connections_per_ip``)."""
    frames: AddressBudget
    """The frames a second all of a client address's ``/ws`` connections share (``messages_per_second_per_ip``)."""
    requests: AddressBudget
    """Each client address's HTTP requests a second (``requests_per_second_per_ip``)."""
    tournaments: Director
    cluster: ClusterNode | None = None
    """This node's part in a cluster (``--redis``); ``None`` on one node."""
    loop_lag: LoopLag = field(default_factory=LoopLag)
    """How late the event loop wakes a timer, sampled from start-up (``GET /health``)."""

    @property
    def limits(self) -> Limits:
        s = self.settings
        return Limits(s.decision_ms, s.max_frame_bytes, s.messages_per_second, s.burst, s.max_games, s.heartbeat_s)


ARENA = web.AppKey("arena", Arena)
