"""What ``/live`` pushes: every frame is one :class:`LiveBatch`, whose ``messages`` are the
events below, for decoders and the JSON Schema.

A viewer chooses what it follows when it connects (PROTOCOL.md §18.7): by default a stream
whose size does not grow with the arena (the top of the standings and what changed in it, a
sample of the games, counts), or with ``/live?games=all`` every game's start and end as well.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from .messages import LiveGameEnded, LiveGames, LiveGameStarted, LiveHealth, LiveStandings, Standing
from .tournaments import LiveTournament

TOP = 20
"""Rows of the standings' top that ``/live`` keeps its viewers up to date with."""
RUNNING_SHOWN = 20
"""Running games the default stream follows at a time (their starts and their ends)."""
SAMPLED_PER_S = 2
"""Games the default stream tells of anew a second, besides the ends of those it follows: a
start (while it follows fewer than :data:`RUNNING_SHOWN`), a finished game's end, or a running
game a fresh start adds to those it follows (what is not used is saved up, to at most
:data:`RUNNING_SHOWN`)."""

GamesFollowed = Literal["sample", "all"]
"""``/live?games=``: ``sample`` (the default) or ``all``."""


class LiveTopChanged(msgspec.Struct, tag="top_changed", tag_field="type",
                     omit_defaults=False):
    """What changed in the top of the standings since the viewer's previous ``standings`` or
    ``top_changed``: the rows whose content changed, each replacing the row of its ``rank``;
    the top now holds ``rows`` rows (the rest are dropped). Rows not in ``changed`` are as
    they were."""

    paused: bool
    total: int
    """How many bots the whole table lists."""
    rows: int
    """How many rows the top holds now: ``min(TOP, total)``."""
    changed: list[Standing]


class LiveCounts(msgspec.Struct, tag="counts", tag_field="type", omit_defaults=False):
    """How busy the arena is, in a fresh start and then at most once a second when it changed."""

    running: int
    """Games running now (every node's, in a cluster)."""
    games_per_minute: int
    """Games that finished in the last 60 seconds."""
    bots_connected: int
    """Bots connected now (every node's, in a cluster)."""


LiveEvent = (LiveStandings | LiveTopChanged | LiveCounts | LiveGames | LiveGameStarted | LiveGameEnded | LiveHealth
             | LiveTournament)
"""One change a viewer applies, in order; its ``type`` field names it."""


class LiveBatch(msgspec.Struct, tag="batch", tag_field="type"):
    """Everything that changed since the viewer's previous frame, in the order it happened.

    A viewer of ``/live?games=all`` gets at most ``live_batches_per_second`` of them a second,
    with every ``game_started`` and ``game_ended``; a viewer of the default stream at most one
    a second, with a sample of the games (:data:`SAMPLED_PER_S`). Both get the same
    ``top_changed`` and ``counts``, at most once a second. Within one batch only the last
    ``health`` and the last ``tournament`` of each tournament are kept. A batch that begins
    with ``games`` is a fresh start (on connecting, or after the viewer fell behind and frames
    were skipped): it replaces what the viewer knew."""

    seq: int
    """Counts the batches of this server, in the order they are made; a viewer's may skip
    numbers (batches that had nothing for its stream, or were skipped before a fresh start).
    A fresh start carries the number of the last batch it covers."""
    messages: list[LiveEvent]


LiveMessage = LiveBatch
"""Any frame a viewer of ``/live`` receives."""
