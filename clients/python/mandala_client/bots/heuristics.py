"""Hand-made judgements of a Mandala position, shared by the greedy and search bots.

Everything works on a full :class:`mandala.Game` (a real one or a sample
from :mod:`mandala.sample`) with plain integer arithmetic, because the
search bot calls these functions thousands of times per decision.

The ideas: a claim is worth what it adds to the claimer's score now
(R13, R21); a mountain is worth what each side would take from it if it
were destroyed now, picking greedily in turn (R11, R12), but only to a
side with a card in its field there (R13a); cards in hand are options.
"""

from __future__ import annotations

import math

from mandala import Game
from mandala.moves import CLAIM_BASE

WIN = 1000.0
"""What a won game is worth in :func:`evaluate`, far above any score difference."""
POT_WEIGHT = 0.6
"""A mountain's share is not in the cup yet: it may grow, or go to the other side."""
HAND_WEIGHT = 0.8
"""One more card in hand than the opponent: one more option later."""
DENIAL = 0.7
"""How much a picker cares about what the other side would take with that color."""


def claim_gain(game: Game, p: int, m: int, c: int) -> int:
    """What seat ``p``'s score would gain now by claiming color ``c`` of mountain ``m``."""
    if not game.field_sizes[m][p]:
        return 0  # R13a: the claimed cards go to the discard pile
    n = game.mountains[m][c]
    river = game.rivers[p]
    if game.river_masks[p] >> c & 1:
        return n * (river.index(c) + 1)
    return (len(river) + 1) * (game.cups[p][c] + n - 1)  # R13b: one card to the river


def best_claim(game: Game) -> int:
    """The code of the claim the current picker likes best: own gain plus some denial."""
    m: int = game.destroying  # type: ignore[assignment]
    q: int = game.to_move  # type: ignore[assignment]
    mountain = game.mountains[m]
    best, best_value = -1, -1.0
    for c in range(6):
        if mountain[c]:
            value = claim_gain(game, q, m, c) + DENIAL * claim_gain(game, 1 - q, m, c) + 0.01 * mountain[c]
            if value > best_value:
                best, best_value = c, value
    return CLAIM_BASE + best


def resolve_picks(game: Game) -> None:
    """Play the destruction in progress to its end, both sides claiming with :func:`best_claim`."""
    while game.phase == "pick":
        game.push_code(best_claim(game))


def _pot(game: Game, m: int, first: int) -> tuple[float, float]:
    """What each seat would add to its score if mountain ``m`` were destroyed now with
    ``first`` picking first, both picking greedily (nothing in ``game`` changes)."""
    mountain = game.mountains[m][:]
    present = (game.field_sizes[m][0] > 0, game.field_sizes[m][1] > 0)
    rivers = (game.rivers[0][:], game.rivers[1][:])
    cups = game.cups
    gains = [0.0, 0.0]
    q = first
    left = sum(1 for n in mountain if n)
    while left:
        best, best_value, best_gain = 0, -1.0, 0
        for c in range(6):
            n = mountain[c]
            if not n:
                continue
            own = _gain(present[q], rivers[q], cups[q][c], c, n)
            value = own + DENIAL * _gain(present[1 - q], rivers[1 - q], cups[1 - q][c], c, n)
            if value > best_value:
                best, best_value, best_gain = c, value, own
        gains[q] += best_gain
        if present[q] and best not in rivers[q]:
            rivers[q].append(best)
        mountain[best] = 0
        left -= 1
        q = 1 - q
    return gains[0], gains[1]


def _gain(present: bool, river: list[int], cup: int, c: int, n: int) -> int:
    if not present:
        return 0
    if c in river:
        return n * (river.index(c) + 1)
    return (len(river) + 1) * (cup + n - 1)


def mountain_outlook(game: Game, m: int, me: int) -> float:
    """What ``me`` expects to gain over the opponent from mountain ``m`` (0 if nobody can gain).

    The first picker follows the fields as they stand (R11); on a tie both
    orders are equally likely, since it depends on who completes.
    """
    f0, f1 = game.field_sizes[m]
    if not (f0 or f1):
        return 0.0
    if f0 != f1:
        g = _pot(game, m, 0 if f0 > f1 else 1)
        return g[me] - g[1 - me]
    a, b = _pot(game, m, 0), _pot(game, m, 1)
    return (a[me] - a[1 - me] + b[me] - b[1 - me]) / 2


def evaluate(game: Game, me: int) -> float:
    """How good the position is for seat ``me``: score difference plus outlooks.

    Positions inside a destruction should be resolved first (:func:`resolve_picks`).
    """
    s_me, s_opp = game.score(me), game.score(1 - me)
    if game.phase == "over":
        w = game.winner()
        return (s_me - s_opp) + (0.0 if w is None else WIN if w == me else -WIN)
    value = float(s_me - s_opp)
    value += POT_WEIGHT * (mountain_outlook(game, 0, me) + mountain_outlook(game, 1, me))
    value += HAND_WEIGHT * (game.hand_sizes[me] - game.hand_sizes[1 - me])
    return value


DEALT_DECK = 88
"""Cards in the draw deck after the deal (R3): 108 less 2 × (2 mountain + 6 hand + 2 cup) cards."""

WIN_WEIGHTS = (0.2027, 0.0483, 0.1722, 1.1926, 1.1419, -0.0522, 0.0461, -0.0212, -1.2909, -0.8460, 0.2079,
               -0.1070, -0.0212, 0.0490, -0.0218, 0.4199, -0.1223, -0.0023, 0.3102,
               0.0745, 0.1381, -0.2358, 0.0978, -0.4124, 0.1877, 0.0223, -0.0137)
"""The logistic model of :func:`win_chance`, fitted by ``bench/fit_win_chance.py``: weights of
:func:`win_features` in its order."""


def _prospects(game: Game, p: int) -> tuple[int, tuple[int, ...]]:
    """Seat ``p``'s unscored cup cards, and what it may still make of its cards (the eight
    prospects of :func:`win_features`)."""
    river = game.rivers[p]
    slot = [0] * 6
    for i, c in enumerate(river):
        slot[c] = i + 1
    cup, hand = game.cups[p], game.hands[p]
    m0, m1 = game.mountains
    unscored = most = held = held_value = mountain_value = mountain_new = 0
    for c in range(6):
        s = slot[c]
        if s:
            held += hand[c]
            held_value += hand[c] * s
            mountain_value += (m0[c] + m1[c]) * s
        else:
            unscored += cup[c]
            most = max(most, cup[c])
            mountain_new += (m0[c] > 0) + (m1[c] > 0)
    nxt = len(river) + 1
    fields = game.field_sizes[0][p] + game.field_sizes[1][p]
    return unscored, (unscored * nxt, most * nxt, held, held_value, fields, sum(cup), mountain_value, mountain_new)


def win_features(game: Game, me: int) -> tuple[float, ...]:
    """What :func:`win_chance` weighs, each as ``me``'s lead over the opponent (so the model is
    the same from either seat): score (R21), the mountains' outlooks, cards in hand, cup cards
    whose color is not in the river yet (they score when it joins), river length; the same five
    times the game's progress (the draw deck's share drawn, R17b); +1 if ``me`` is to move.
    Then eight prospects, alone and times the progress: the unscored cup cards times the next
    river slot's number (what they would score if their color joined next), the most of them
    in one color times the same, cards in hand of colors in the river and the same weighed by
    their slots' numbers (cards that score if fed to a mountain and claimed back), cards in
    fields, cards in the cup (fewer wins a tie, R21), mountain cards of colors in the river
    weighed by their slots' numbers, and mountain colors not in the river."""
    o = 1 - me
    progress = 1.0 if game.deck_exhausted else (DEALT_DECK - len(game.deck)) / DEALT_DECK
    unscored_me, prospects_me = _prospects(game, me)
    unscored_o, prospects_o = _prospects(game, o)
    lead = (
        float(game.score(me) - game.score(o)),
        mountain_outlook(game, 0, me) + mountain_outlook(game, 1, me),
        float(game.hand_sizes[me] - game.hand_sizes[o]),
        float(unscored_me - unscored_o),
        float(len(game.rivers[me]) - len(game.rivers[o])),
    )
    more = [float(x - y) for x, y in zip(prospects_me, prospects_o, strict=True)]
    return (*lead, *(x * progress for x in lead), 1.0 if game.to_move == me else -1.0,
            *more, *(x * progress for x in more))


def win_chance(game: Game, me: int) -> float:
    """The chance that ``me`` wins from this position (a draw counting half), by a logistic model
    fitted to the outcomes of searched games (:data:`WIN_WEIGHTS`). Resolve a destruction first."""
    z = sum(w * x for w, x in zip(WIN_WEIGHTS, win_features(game, me), strict=True))
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
