"""What the opponent's last turn says about its hand (experiment).

A search bot samples the opponent's hand uniformly from the unseen cards. But the opponent
chose its last turn knowing its hand: a hand in which that turn looks poor is less likely.
:class:`Inferred` draws candidate hands, weighs each by how likely a one-ply greedy
opponent holding it would have played the observed turn (a softmax over
:func:`.heuristics.evaluate`), and samples games from the candidates by weight.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass

from mandala import Game, View
from mandala.moves import DISCARD, FIELD, MOUNTAIN, MOVE_PARTS
from mandala.sample import Sampler

from .heuristics import evaluate, resolve_picks


@dataclass(frozen=True)
class Observation:
    """The opponent's last turn: the view before it and the move's code."""

    before: View
    code: int


def _played(code: int) -> tuple[list[int], int]:
    """The cards a turn takes from the hand (counts by color) and how many."""
    kind, _, color, count = MOVE_PARTS[code]
    n = 1 if kind == MOUNTAIN else count
    cards = [0] * 6
    cards[color] = n
    return cards, n


def is_turn(code: int) -> bool:
    return MOVE_PARTS[code][0] in (MOUNTAIN, FIELD, DISCARD)


def likelihood(game: Game, code: int, temperature: float, mix: float) -> float:
    """The chance a greedy opponent on ``game`` (its turn) plays ``code``."""
    mover = game.to_move
    assert mover is not None
    codes = game.legal_codes()
    if code not in codes:
        return 0.0
    values = []
    for c in codes:
        g = game.copy()
        g.push_code(c)
        resolve_picks(g)
        values.append(evaluate(g, mover))
    top = max(values)
    weights = [math.exp((v - top) / temperature) for v in values]
    p = weights[codes.index(code)] / sum(weights)
    return (1.0 - mix) * p + mix / len(codes)


class Inferred:
    """Games consistent with ``view`` whose opponent hands are weighed by ``seen``."""

    def __init__(self, view: View, seen: Observation, rng: random.Random, candidates: int,
                 temperature: float = 3.0, mix: float = 0.2) -> None:
        self.sampler = Sampler(view)
        before = Sampler(seen.before)
        played, n = _played(seen.code)
        kept = before.hand_size - n
        self.hands: list[list[int]] = []
        self.cumulative: list[float] = []
        total = 0.0
        now = self.sampler.hand_size
        for _ in range(candidates):
            hand = self.sampler.hand(rng)
            w = 1e-9
            if 0 <= kept <= now:
                cards = [c for c in range(6) for _ in range(hand[c])]
                then = played[:]
                for c in rng.sample(cards, kept):
                    then[c] += 1
                game = before.sample_with_hand(then, rng)
                if game is not None and game.to_move is not None and game.phase == "turn":
                    w = max(w, likelihood(game, seen.code, temperature, mix))
            total += w
            self.hands.append(hand)
            self.cumulative.append(total)

    def sample(self, rng: random.Random) -> Game:
        i = bisect.bisect_left(self.cumulative, rng.random() * self.cumulative[-1])
        game = self.sampler.sample_with_hand(self.hands[min(i, len(self.hands) - 1)], rng)
        assert game is not None
        return game


def search_likelihood(game: Game, code: int, iterations: int, rng: random.Random) -> float:
    """The share of a small search's root visits that ``code`` gets, searched from the mover's
    own view of ``game`` (its hand known, the other's sampled): a model of a searching
    opponent that, unlike :func:`likelihood`, sees what the hand holds."""
    from mandala import view

    from .search import SearchBot

    mover = game.to_move
    assert mover is not None
    codes = game.legal_codes()
    if code not in codes:
        return 0.0
    bot = SearchBot(seed=rng.getrandbits(32), iterations=iterations)
    root = bot._search(Sampler(view(game, mover)))
    visits = [root.children[c].visits if c in root.children else 0 for c in codes]
    return (visits[codes.index(code)] + 0.5) / (sum(visits) + 0.5 * len(codes))
