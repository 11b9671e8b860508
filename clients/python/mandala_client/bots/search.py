"""``SearchBot``: information-set Monte Carlo tree search (SO-ISMCTS).

The opponent's hand, its starting cup and the deck are hidden (R24), so
each iteration samples a full game consistent with the view
(:class:`mandala.sample.Sampler`), walks one shared tree using only the
moves that are legal in that sample (UCB counts how often a move was
available, not how often its parent was visited), adds one node, plays the
game out with a fast default policy and backs the result up. The move
visited most at the root is played.

Why this shape: the game is long (80-odd decisions) and its hidden cards
matter mostly through draws, so many cheap samples beat a few deep ones,
and a single tree over information sets shares statistics between samples
instead of splitting them over separate trees.
"""

from __future__ import annotations

import math
import random
import time

from mandala import Game, Move, View
from mandala.moves import MOVE_PARTS, MOUNTAIN, DISCARD, FIELD
from mandala.sample import Sampler

from .base import legal_codes
from .heuristics import best_claim

DEFAULT_BUDGET = 1.0
"""Seconds per decision when neither a budget nor an iteration cap is given."""


class _Node:
    """Statistics of one move in one information set, from the mover's side."""

    __slots__ = ("children", "visits", "reward", "avail")

    def __init__(self) -> None:
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.reward = 0.0
        self.avail = 1


def _result(game: Game) -> float:
    """Seat 0's reward for a finished game: 1 for a win, 0 for a loss, 0.5 for a draw
    (R21), nudged by the score margin so that playouts also prefer bigger wins."""
    s0, s1 = game.scores()
    w = game.winner()
    base = 0.5 if w is None else 1.0 if w == 0 else 0.0
    return 0.9 * base + 0.1 * (0.5 + 0.5 * math.tanh((s0 - s1) / 30.0))


class SearchBot:
    """ISMCTS within ``budget`` seconds and/or ``iterations`` per decision.

    With only ``iterations`` set the bot is reproducible for a given seed
    (no clock involved); with neither set it thinks ``DEFAULT_BUDGET``
    seconds per decision.
    """

    def __init__(
        self,
        seed: int | None = None,
        budget: float | None = None,
        iterations: int | None = None,
        exploration: float = 0.7,
    ) -> None:
        if budget is None and iterations is None:
            budget = DEFAULT_BUDGET
        self.budget = budget if budget and budget > 0 else None
        self.iterations = iterations
        self.exploration = exploration
        self._rng = random.Random(seed)
        self.last_iterations = 0
        """Iterations run for the last decision (for tuning and tests)."""

    def choose(self, view: View, legal: list[Move]) -> Move:
        if len(legal) == 1:
            return legal[0]
        codes = legal_codes(legal)
        root = self._search(Sampler(view))
        best = max(range(len(codes)), key=lambda i: _visits(root, codes[i]))
        return legal[best]

    def _search(self, sampler: Sampler) -> _Node:
        rng = self._rng
        root = _Node()
        deadline = None if self.budget is None else time.perf_counter() + self.budget
        cap = self.iterations
        n = 0
        c = self.exploration
        while (cap is None or n < cap) and (deadline is None or time.perf_counter() < deadline):
            n += 1
            game = sampler.sample(rng)
            node = root
            path: list[tuple[_Node, int]] = []  # (node, seat that made the move into it)
            while game.to_move is not None:
                codes = game.legal_codes()
                mover = game.to_move
                children = node.children
                untried = []
                best, best_value = None, -1.0
                log_cache: dict[int, float] = {}
                for code in codes:
                    child = children.get(code)
                    if child is None:
                        untried.append(code)
                        continue
                    child.avail += 1
                    if untried:
                        continue
                    la = log_cache.get(child.avail)
                    if la is None:
                        la = log_cache[child.avail] = math.log(child.avail)
                    value = child.reward / child.visits + c * math.sqrt(la / child.visits)
                    if value > best_value:
                        best, best_value = child, value
                        best_code = code
                if untried:
                    code = untried[int(rng.random() * len(untried))]
                    child = children[code] = _Node()
                    game.push_code(code)
                    path.append((child, mover))
                    break
                game.push_code(best_code)
                path.append((best, mover))  # type: ignore[arg-type]
                node = best  # type: ignore[assignment]
            r0 = _result(_playout(game, rng))
            for child, mover in path:
                child.visits += 1
                child.reward += r0 if mover == 0 else 1.0 - r0
        self.last_iterations = n
        return root


def _visits(root: _Node, code: int) -> int:
    child = root.children.get(code)
    return child.visits if child is not None else -1


_KIND = tuple(part[0] for part in MOVE_PARTS)


def _playout(game: Game, rng: random.Random) -> Game:
    """Play ``game`` to its end with the default policy, in place, and return it.

    Picks take the greedy claim (cheap, and far closer to real play than a
    random one); turns are random, but a random discard is only tried when
    a first random draw lands on it twice, since real players rarely throw
    cards away.
    """
    rand = rng.random
    legal = game.legal_codes
    push = game.push_code
    kind = _KIND
    while game.to_move is not None:
        if game.phase == "pick":
            push(best_claim(game))
            continue
        codes = legal()
        code = codes[int(rand() * len(codes))]
        if kind[code] == DISCARD:
            code = codes[int(rand() * len(codes))]
        push(code)
    return game
