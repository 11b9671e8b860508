"""What the server measures of a game's seats, kept with the game for its bot authors.

A :class:`Telemetry` lives in each running game. It records each move's think time (the
time from sending the decision to receiving the answer, as the clock counted it) and every
*incident*: an answer refused (an illegal move, a stale request id, a frame that did not
decode), an answer that came after the clock ran out, a time-out, a disconnect and the
reconnect, a resignation, and in a cluster a takeover (the game's node died and another
rebuilt it from its move log: the incidents noted before it died are lost, the think times
are kept in the log). It is stored with the game's last row (``games.telemetry``) and
read back by the seat replay (``GET /api/games/{id}/replay?seat=``) and a bot's health
(``GET /api/bots/{name}``). Its JSON, as PROTOCOL.md §17 shows it::

    {"decision_ms": 1000, "think_ms": [[12.5, 3.1, ...], [40.2, ...]],   # by seat, in the order of its moves
     "slowest": [[14, 80.3], [3, 40.2]],                                   # by seat: [ply, think_ms]
     "incidents": [{"kind": "refused", "seat": 1, "ply": 7, "request_id": 7, "at_ms": 412.0,
                    "after_ms": 3.2, "code": "illegal_move", "rule": "R13",
                    "message": "...", "sent": {"type": "claim", ...}}, ...],
     "dropped": 0}

Recording costs an append of a machine double per move (an ``array``, not a list of float
objects: a running game holds no Python object per move, which keeps thousands of live games
from scattering their floats over the allocator's pools); nothing here can fail a game.
"""

from __future__ import annotations

from array import array
from typing import Any, Literal

from ..storage.base import LoggedMove

IncidentKind = Literal["refused", "late", "timeout", "disconnect", "reconnect", "resign", "takeover"]
INCIDENTS_MAX = 100
"""Incidents kept per game; more are only counted (``dropped``), so a bot that floods a
game with bad answers costs bounded memory and storage."""
SENT_MAX = 500
"""Characters kept of a frame that did not decode."""


def ms(seconds: float) -> float:
    """Seconds as milliseconds, to a tenth of one."""
    return round(seconds * 1000, 1)


class Telemetry:
    """One game's measurements; see the module's docstring."""

    __slots__ = ("decision_ms", "think_s", "slowest_ply", "slowest_s", "incidents", "dropped")

    def __init__(self, decision_ms: int) -> None:
        self.decision_ms = decision_ms
        self.think_s = (array("d"), array("d"))
        """Each seat's think times in seconds, in the order of its moves."""
        self.slowest_ply = [-1, -1]
        self.slowest_s = [0.0, 0.0]
        """Each seat's slowest answer: its ply (-1: none yet) and its think time."""
        self.incidents: list[dict[str, Any]] = []
        self.dropped = 0

    def moved(self, seat: int, ply: int, think_s: float) -> None:
        """``seat`` answered the decision at ``ply`` after ``think_s`` seconds."""
        self.think_s[seat].append(think_s)
        if think_s > self.slowest_s[seat] or self.slowest_ply[seat] < 0:
            self.slowest_ply[seat] = ply
            self.slowest_s[seat] = think_s

    def restore(self, moves: list[LoggedMove]) -> None:
        """The think times of a game rebuilt from its move log."""
        for m in moves:
            self.moved(m.move.player, m.ply, m.think_ms / 1000)

    def incident(self, kind: IncidentKind, seat: int, ply: int, at_s: float, **fields: Any) -> None:
        """Note an incident at ``at_s`` seconds into the game; ``fields`` whose value is
        ``None`` are left out."""
        if len(self.incidents) >= INCIDENTS_MAX and kind != "takeover":  # takeovers are few, and kept
            self.dropped += 1
            return
        entry: dict[str, Any] = {"kind": kind, "seat": seat, "ply": ply, "at_ms": ms(at_s)}
        entry.update((k, v) for k, v in fields.items() if v is not None)
        self.incidents.append(entry)

    def to_json(self) -> dict[str, Any]:
        return {"decision_ms": self.decision_ms, "think_ms": [[ms(t) for t in seat] for seat in self.think_s],
                "slowest": [[self.slowest_ply[s], ms(self.slowest_s[s])] if self.slowest_ply[s] >= 0 else None
                            for s in (0, 1)],
                "incidents": list(self.incidents),
                "dropped": self.dropped}


def clipped(text: str) -> str:
    """A frame that did not decode, as much of it as is kept."""
    return text if len(text) <= SENT_MAX else text[:SENT_MAX] + "…"
