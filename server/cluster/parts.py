"""The parts of the server the cluster works with, as a protocol of their own: the cluster sits
below the arena, so it names what it uses rather than importing :class:`~server.arena.Arena`
(which has these and more, and satisfies this protocol as it stands)."""

from __future__ import annotations

from typing import Protocol

from ..audience.live import LiveHub
from ..config import Settings
from ..connections.presence import Presence
from ..games.challenges import ChallengeBook
from ..games.manager import GameManager
from ..ladder.service import Ladder
from ..storage import Storage
from ..tournaments.director import Director


class ServerParts(Protocol):
    """What a cluster node reaches of its server: exactly these, nothing of the HTTP layer."""

    settings: Settings
    storage: Storage
    presence: Presence
    manager: GameManager
    challenges: ChallengeBook
    ladder: Ladder
    tournaments: Director
    live: LiveHub
