"""What ``/live`` pushes: one union of every message, for decoders and the JSON Schema."""

from __future__ import annotations

from .messages import LiveGameEnded, LiveGames, LiveGameStarted, LiveHealth, LiveStandings
from .tournaments import LiveTournament

LiveMessage = LiveStandings | LiveGames | LiveGameStarted | LiveGameEnded | LiveHealth | LiveTournament
"""Any message a viewer of ``/live`` receives; its ``type`` field names it."""
