"""What ``/live`` pushes: every frame is one :class:`LiveBatch`, whose ``messages`` are the
events below, for decoders and the JSON Schema."""

from __future__ import annotations

import msgspec

from .messages import LiveGameEnded, LiveGames, LiveGameStarted, LiveHealth, LiveStandings
from .tournaments import LiveTournament

LiveEvent = LiveStandings | LiveGames | LiveGameStarted | LiveGameEnded | LiveHealth | LiveTournament
"""One change a viewer applies, in order; its ``type`` field names it."""


class LiveBatch(msgspec.Struct, tag="batch", tag_field="type", forbid_unknown_fields=True):
    """Everything that changed since the viewer's previous frame, in the order it happened.

    At most ``live_batches_per_second`` of them a second reach a viewer. Within one batch only
    the last ``standings`` and ``health`` and the last ``tournament`` of each tournament are
    kept; every ``game_started`` and ``game_ended`` is. A batch that begins with ``games`` is a
    fresh start (on connecting, or after the viewer fell behind and frames were skipped): it
    replaces what the viewer knew."""

    seq: int
    """Counts the batches of this server; a fresh start carries the number of the last batch
    it covers (the batches it replaced were never sent to this viewer)."""
    messages: list[LiveEvent]


LiveMessage = LiveBatch
"""Any frame a viewer of ``/live`` receives."""
