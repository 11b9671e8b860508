"""A tournament's games, decided before they are played: who meets whom, in which round, on
which deal, in which seats.

Pure (no I/O, no clock). Every pairing plays the tournament's same deals, each deal twice with
the seats swapped, so every bot faces the same luck (duplicate across the whole tournament).
A schedule entry is ``[round, seat0, seat1, deal]``; its index in the list is the game's
*slot*, which a game cut off by a restart is replayed in.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from protocol.tournaments import MAX_PLANNED_GAMES, TournamentDefinition

from ..games.deals import Deal

Entry = list[Any]
"""``[round, seat0, seat1, deal]``."""


class DefinitionError(ValueError):
    """A definition no tournament can be made of: ``code`` says which check failed."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Control characters (C0, DEL, C1) and the line and paragraph separators: in a name they
would break the log's one line per event and the terminal's tables, or forge lines in them."""


def check(d: TournamentDefinition) -> None:
    """Raise :class:`DefinitionError` if ``d`` is inconsistent (bots are checked by the caller,
    against the database)."""
    if not d.name.strip() or _UNPRINTABLE.search(d.name):
        raise DefinitionError("bad_name", f"a tournament's name is printable text, not only spaces: {d.name!r}"[:200])
    names = [p.lower() for p in d.participants]
    if len(names) < 2:
        raise DefinitionError("too_few_participants", "a tournament needs at least two participants")
    twice = sorted({p for p in d.participants if names.count(p.lower()) > 1}, key=lambda p: (p.lower(), p))
    if twice:
        raise DefinitionError("duplicate_participant",
                              f"listed twice (names ignore case): {', '.join(twice)}")
    if d.games_per_pairing < 2 or d.games_per_pairing % 2:
        raise DefinitionError("bad_games_per_pairing",
                              "games_per_pairing is even and at least 2: each deal is played twice, seats swapped")
    if d.format == "swiss":
        if d.rounds is None:
            raise DefinitionError("bad_rounds", f"a Swiss tournament names its rounds: 1 to {len(names) - 1} for "
                                                f"{len(names)} bots")
        if d.rounds > len(names) - 1:
            raise DefinitionError("bad_rounds", f"a Swiss tournament of {len(names)} bots has 1 to {len(names) - 1} rounds")
    elif d.rounds is not None:
        raise DefinitionError("bad_rounds", "rounds is for Swiss tournaments only")
    if d.format == "gauntlet":
        if d.bot_under_test is None or d.bot_under_test.lower() not in names:
            raise DefinitionError("bad_bot_under_test", "a gauntlet names its bot_under_test, one of the participants")
    elif d.bot_under_test is not None:
        raise DefinitionError("bad_bot_under_test", "bot_under_test is for gauntlets only")
    if planned_games(d) > MAX_PLANNED_GAMES:
        raise DefinitionError("too_many_games", f"{planned_games(d)} games planned: at most {MAX_PLANNED_GAMES}")


def planned_games(d: TournamentDefinition) -> int:
    n = len(d.participants)
    pairings = {"round_robin": n * (n - 1) // 2, "gauntlet": n - 1, "swiss": (d.rounds or 0) * (n // 2)}[d.format]
    return pairings * d.games_per_pairing


def deal_of(seed: int, entry: Sequence[Any]) -> Deal:
    """The deal of a slot (``[round, seat 0, seat 1, deal number]``): its pairing's own, the
    same for both seat orders, drawn from the tournament's seed, the pairing and the number.
    No two pairings share a deal: a game's record tells its whole deal, and a bot would know the
    hidden cards of the same deal against its next opponent (within the pairing, the record is
    held until the deal's other game is over)."""
    _, a, b, number = entry
    first, second = sorted((str(a).lower(), str(b).lower()))
    rng = random.Random(f"{seed}:{first}:{second}:{number}")  # a string seeds the same in every process
    return Deal(first_player=rng.choice((0, 1)), reshuffle_seed=rng.getrandbits(63))


def _games(round_no: int, pairings: Sequence[tuple[str, str]], deal_count: int,
           dealt: dict[frozenset[str], int] | None = None) -> list[Entry]:
    """Every pairing on every deal, both seat orders; deal by deal so pairings progress evenly.
    Each deal's two games come in a row, the first at an even slot (every list appended is of
    even length): slots 2k and 2k + 1, which ``server/games/holds.py`` (``deal_slots``) relies
    on to hold a game's record until the other game of its deal is over. ``dealt``: the deals
    each pairing played in earlier rounds; a Swiss rematch plays the next ones (the records of
    those are public: a bot would know the hidden cards of a deal played again)."""
    first = dealt or {}
    return [[round_no, *seats, first.get(frozenset((a, b)), 0) + deal]
            for deal in range(deal_count) for a, b in pairings for seats in ((a, b), (b, a))]


def round_robin(participants: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Rounds in which everyone meets everyone once (the circle method; with an odd number
    one bot sits out each round)."""
    bots: list[str | None] = list(participants)
    if len(bots) % 2:
        bots.append(None)
    n = len(bots)
    rounds = []
    for r in range(n - 1):
        pairs = []
        for i in range(n // 2):
            a, b = bots[i], bots[n - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b) if r % 2 == 0 else (b, a))
        rounds.append(pairs)
        bots = [bots[0], bots[-1], *bots[1:-1]]
    return rounds


def initial_schedule(d: TournamentDefinition) -> list[Entry]:
    """What is known at the start: all of a round robin or gauntlet, Swiss's first round."""
    per = d.games_per_pairing // 2
    if d.format == "round_robin":
        return [e for i, pairs in enumerate(round_robin(d.participants)) for e in _games(i + 1, pairs, per)]
    if d.format == "gauntlet":
        hero = next(p for p in d.participants if p.lower() == (d.bot_under_test or "").lower())
        return _games(1, [(hero, p) for p in d.participants if p != hero], per)
    return _games(1, swiss_pairings(d.participants, {}, set(), set()), per)


def next_swiss_round(d: TournamentDefinition, schedule: Sequence[Entry], scores: dict[str, tuple[float, int]]) -> list[Entry]:
    """Swiss's next round, once the last one is over; ``scores`` maps each bot to (points, games)."""
    last = max((e[0] for e in schedule), default=0)
    met = {frozenset((e[1], e[2])) for e in schedule}
    had_bye = {b for r in range(1, last + 1) for b in d.participants
               if b not in {x for e in schedule if e[0] == r for x in (e[1], e[2])}}
    dealt: dict[frozenset[str], int] = {}
    for e in schedule:
        key = frozenset((e[1], e[2]))
        dealt[key] = max(dealt.get(key, 0), e[3] + 1)
    return _games(last + 1, swiss_pairings(d.participants, scores, met, had_bye), d.games_per_pairing // 2, dealt)


def swiss_pairings(participants: Sequence[str], scores: dict[str, tuple[float, int]],
                   met: set[frozenset[str]], had_bye: set[str]) -> list[tuple[str, str]]:
    """Pair bots of equal standing: ordered by score per game (the organizer's order breaks
    ties), each takes the nearest below it it has not met (backtracking if that leaves someone
    unpaired; rematches only if no pairing without them exists). With an odd number, the
    lowest bot that has not sat out sits out (a bye: no game, no points)."""
    order = sorted(participants, key=lambda b: (-_fraction(scores.get(b)), participants.index(b)))
    if len(order) % 2:
        bye = next((b for b in reversed(order) if b not in had_bye), order[-1])
        order.remove(bye)
    if not scores:  # the first round: the top half meets the bottom half
        half = len(order) // 2
        return list(zip(order[:half], order[half:], strict=True))
    return _match(order, met, [MATCH_BUDGET]) or _match(order, set(), [MATCH_BUDGET]) or []


MATCH_BUDGET = 100_000
"""Steps the search for a pairing without rematches may take before rematches are allowed."""


def _fraction(score: tuple[float, int] | None) -> float:
    return score[0] / score[1] if score and score[1] else 0.0


def _match(order: list[str], met: set[frozenset[str]], budget: list[int]) -> list[tuple[str, str]] | None:
    if not order:
        return []
    top, rest = order[0], order[1:]
    for i, b in enumerate(rest):
        budget[0] -= 1
        if budget[0] < 0:
            return None
        if frozenset((top, b)) in met:
            continue
        tail = _match(rest[:i] + rest[i + 1:], met, budget)
        if tail is not None:
            return [(top, b), *tail]
    return None
