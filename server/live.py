"""The viewers of ``GET /live`` (a WebSocket that pushes the ladder as it moves, for the page
and for anyone; the handler is in ``ladder_api``).

A viewer gets ``standings``, ``games`` and ``health`` at once, then ``game_started``,
``game_ended``, ``standings`` and ``health`` as they happen (``protocol.live.LiveMessage``).
It sends nothing; frames it sends are ignored. Each message is encoded once for all viewers
and sent through each viewer's :class:`~server.outbox.Outbox`; a viewer too slow to read
``send_queue_max`` frames is dropped rather than holding memory.
"""

from __future__ import annotations

import logging
from typing import Any

from protocol.messages import LiveGameEnded, LiveGameStarted, LiveHealth

from .connection import encode
from .games import GameRoom
from .outbox import CLOSE_GOING_AWAY, Outbox
from .recorder import GameRecorder
from .summary import game_summary

log = logging.getLogger(__name__)

class LiveHub:
    """The viewers of ``/live``, and the :class:`~server.games.GameEvents` that feed them."""

    def __init__(self, queue_max: int, recorder: GameRecorder) -> None:
        self.viewers: set[Outbox] = set()
        self.queue_max = queue_max
        self.recorder = recorder
        recorder.listeners.append(lambda: self.publish(self.health()))

    def health(self) -> LiveHealth:
        """Whether games can be recorded now (the page shows a banner while they cannot)."""
        r = self.recorder
        return LiveHealth("ok" if r.failing is None else "degraded", r.failing, r.pending)

    def publish(self, msg: Any) -> None:
        if not self.viewers:
            return
        frame = encode(msg)
        for viewer in list(self.viewers):
            if not viewer.send(frame):
                self.viewers.discard(viewer)

    def game_started(self, room: GameRoom) -> None:
        if self.viewers:
            self.publish(LiveGameStarted(game_summary(room.to_row(record=False))))

    def game_ended(self, room: GameRoom) -> None:
        if self.viewers:
            self.publish(LiveGameEnded(game_summary(room.to_row(record=False))))

    def rated_game_stored(self, room: GameRoom) -> None:
        pass

    async def close(self) -> None:
        viewers = list(self.viewers)
        self.viewers.clear()
        for viewer in viewers:
            viewer.close(CLOSE_GOING_AWAY, "server shutting down")
        for viewer in viewers:
            await viewer.shutdown()
