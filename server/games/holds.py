"""Whether a game's record is held: the one rule every place that publishes a record asks.

A game that is over has a public record (R24), except while another game on the same deal
(deck order, first player, reshuffles) is still to be played or running: that game's hidden
cards are in the record. The ladder plays each deal twice, seats swapped (a duplicate pair:
a ladder or qualification pair), and a tournament plays each of its deals in two slots, seats
swapped, and a game cut off again in its slot. So:

- **A pair's first game** is held while its pair is open in storage (``OpenPair``: opened by
  the first game's start row, closed atomically by the last row of the return game, by the
  return game's forfeit, or when the ladder gives the return game up, ``Ladder._end_pair``)
  and it finished (an aborted first game ends its pair). Its return game is never held.
- **A tournament game** is held while its tournament is running or paused and a slot on its
  deal (:func:`deal_slots`: its own, a game cut off being played again there, and its twin)
  has no finished game. A finished or cancelled tournament holds nothing.
- No other game is ever held.

The rule reads storage only, so every node of a cluster answers alike whichever node ran the
two games. ``game_over`` (``GameManager``), ``GET /api/games/{id}/record`` and ``…/replay``,
the export and a tournament's ``…/records`` all ask it. A held record's deal leaves the server
nowhere: ``game_over``, the export and the records give its :func:`public_part` (its moves are
public already: spectators saw them), the record and the replay answer ``409``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from protocol.messages import RecordHold

from ..storage import GameRow, Storage

HOLDING_TOURNAMENT = ("running", "paused")
"""The tournament states in which slots may still be played."""


def deal_slots(slot: int) -> tuple[int, int]:
    """The two slots of a tournament that play one deal, seats swapped: the schedule lists
    each deal twice in a row, each pairing's block starting at an even slot
    (``server/tournaments/schedule.py``; ``tests/tournaments/test_schedule.py`` checks it)."""
    first = slot - slot % 2
    return first, first + 1


def may_be_held(row: GameRow) -> bool:
    """Whether the rule could hold this game's record (without asking storage): a pair's game
    that finished, or a tournament's game that is over. Every other game's record is public
    once the game is over."""
    if row.status == "running":
        return False
    if row.tournament_id is not None and row.slot is not None:
        return True
    return row.pair_id is not None and row.status == "finished"


async def holds_of(storage: Storage, rows: Iterable[GameRow]) -> dict[str, RecordHold]:
    """The holds of the games in ``rows`` whose record is held, by game id (a few reads for
    any number of rows: one for the pairs, two per tournament)."""
    held: dict[str, RecordHold] = {}
    pairs: list[GameRow] = []
    tournaments: dict[str, list[GameRow]] = defaultdict(list)
    for row in rows:
        if not may_be_held(row):
            continue
        if row.tournament_id is not None and row.slot is not None:
            tournaments[row.tournament_id].append(row)
        elif row.pair_id is not None:
            pairs.append(row)
    if pairs:
        opened = {p.pair_id: p for p in await storage.open_pairs([r.pair_id for r in pairs if r.pair_id])}
        for row in pairs:
            pair = opened.get(row.pair_id or "")
            if pair is not None and pair.first_game == row.game_id:
                held[row.game_id] = RecordHold(pair_id=pair.pair_id, game_id=pair.return_game)
    if tournaments:
        states = await storage.tournament_states(list(tournaments))
        for tid, games in tournaments.items():
            if states.get(tid) not in HOLDING_TOURNAMENT:
                continue
            slots = {s for g in games for s in deal_slots(g.slot or 0)}
            finished: set[int] = set()
            running: dict[int, str] = {}
            for g in await storage.tournament_slots(tid, sorted(slots)):
                if g.slot is None:
                    continue
                if g.status == "finished":
                    finished.add(g.slot)
                elif g.status == "running":
                    running[g.slot] = g.game_id
            for g in games:
                waiting = [s for s in deal_slots(g.slot or 0) if s not in finished]
                if waiting:
                    held[g.game_id] = RecordHold(tournament_id=tid, slot=waiting[0], game_id=running.get(waiting[0]))
    return held


async def hold_of(storage: Storage, row: GameRow) -> RecordHold | None:
    """Whether ``row``'s record is held, and what for (``None``: it is public once over)."""
    if not may_be_held(row):
        return None
    return (await holds_of(storage, [row])).get(row.game_id)


def public_part(record: dict[str, Any]) -> dict[str, Any]:
    """What a held record may show: its first player and its moves, which its spectators saw
    played; its deal (``deck``, ``reshuffles``) left empty. A held record is sent so, with
    ``record_held``, rather than as ``null``, which a client of before held records could not
    read."""
    return {**record, "deck": [], "reshuffles": []}


def assumed(row: GameRow) -> RecordHold | None:
    """The hold ``game_over`` says when storage cannot be asked (it fails): every record the
    rule could hold is held, its deal's other game not known. The record is served by
    ``GET /api/games/{id}/record`` once the rule, asked again, lets it go."""
    if not may_be_held(row):
        return None
    if row.tournament_id is not None and row.slot is not None:
        return RecordHold(tournament_id=row.tournament_id, slot=row.slot)
    return RecordHold(pair_id=row.pair_id)


def describe(game_id: str, hold: RecordHold) -> str:
    """The hold in words (an error's ``message``)."""
    running = f" (game {hold.game_id}, running now)" if hold.game_id is not None else ""
    if hold.tournament_id is not None:
        waits = f"slot {hold.slot} of tournament {hold.tournament_id}{running} is over"
    else:
        waits = f"the return game of pair {hold.pair_id}{running} is over"
    return (f"the record of game {game_id} is held until {waits}: it would tell the hidden cards of "
            "that game, dealt the same")
