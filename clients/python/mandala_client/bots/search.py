"""``SearchBot``: information-set Monte Carlo tree search (SO-ISMCTS).

The opponent's hand, its starting cup and the deck are hidden (R24), so
each iteration samples a full game consistent with the view
(:class:`mandala.sample.Sampler`), walks one shared tree using only the
moves that are legal in that sample (UCB counts how often a move was
available, not how often its parent was visited), adds one node, plays a
short stretch with a fast default policy, judges the position by its
chance to win (:func:`.heuristics.win_chance`) and backs the result up. The
move visited most at the root is played.

Why this shape: the hidden cards matter mostly through draws, so many
cheap samples beat a few deep ones, and a single tree over information sets
shares statistics between samples instead of splitting them over separate
trees. Playouts are cut short (``depth``) because a game has 80-odd
decisions and random play to the end mostly adds noise: measured against
:class:`.GreedyBot`, ten decisions and then the evaluation win far more
often than full random playouts at the same number of iterations, and at
equal time (0.1 s of CPU a decision, 50 duplicate deals) six decisions
beat ten by +70 Elo (95 % interval +1 to +140), and three lost to six by
70 (−159 to +18): docs/performance.md, "The information limit".

The judgement is a logistic model fitted to the outcomes of searched games
(``bench/fit_win_chance.py``) rather than the hand-made score-plus-outlooks
of :func:`.heuristics.evaluate` squashed at a guessed scale: the hand-made
one misjudged what a lead is worth at each stage of the game, and an
unscored cup card or a longer river not at all (docs/performance.md, "The
learned evaluation").
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from mandala import Game, Move, View
from mandala.moves import DISCARD, FIELD, MOUNTAIN, MOVE_PARTS
from mandala.sample import Sampler

from .base import legal_codes
from .heuristics import best_claim, evaluate, resolve_picks, win_chance

DEFAULT_BUDGET = 1.0
"""Seconds per decision when neither a budget nor an iteration cap is given."""
EVAL_SCALE = 10.0
"""Score points that move a cut-off playout's reward from 0.5 to about 0.73."""

_WEIGHT = tuple(
    1.0 if kind == MOUNTAIN else 1.0 / (count * count) if kind == FIELD else 0.05 if kind == DISCARD else 1.0
    for kind, _, _, count in MOVE_PARTS
)
"""Default-policy weights by move code: real players feed mountains (and draw), put one
or two cards in a field to gain a pick, and rarely throw cards away."""


def _hand_judgement(game: Game) -> float:
    """Seat 0's reward for a cut-off playout from the hand-made :func:`.heuristics.evaluate`."""
    return 1.0 / (1.0 + math.exp(-evaluate(game, 0) / EVAL_SCALE))


def _learned_judgement(game: Game) -> float:
    """Seat 0's reward for a cut-off playout: its chance to win (:func:`.heuristics.win_chance`)."""
    return win_chance(game, 0)


JUDGEMENTS: dict[str, Callable[[Game], float]] = {"hand": _hand_judgement, "learned": _learned_judgement}
"""How a cut-off playout is judged (the ``evaluation`` option)."""


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}
"""What a budget is measured on: wall-clock seconds (what a server's clock counts) or this
thread's CPU seconds (what two searches sharing a busy machine can be given equally)."""


class Source(Protocol):
    """Where the iterations' games come from: a :class:`mandala.sample.Sampler` for a seat."""

    def sample(self, rng: random.Random) -> Game: ...


class _Node:
    """Statistics of one move in one information set, from the mover's side."""

    __slots__ = ("children", "visits", "reward", "avail")

    def __init__(self) -> None:
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.reward = 0.0
        self.avail = 1


class SearchBot:
    """ISMCTS within ``budget`` seconds and/or ``iterations`` per decision.

    With only ``iterations`` set the bot is reproducible for a given seed
    (no clock involved); with neither set it thinks ``DEFAULT_BUDGET``
    seconds per decision. ``exploration`` is the UCB constant, ``policy``
    the playout policy (``"weighted"`` or ``"random"``) and ``depth`` the
    decisions a playout runs before the evaluation judges it (``None``:
    to the end of the game). ``clock`` is what the budget is measured on
    (``"wall"`` or ``"cpu"``, see :data:`CLOCKS`), ``evaluation`` how a
    cut-off playout is judged (``"learned"`` or ``"hand"``, see :data:`JUDGEMENTS`),
    and ``tree_depth`` the moves an iteration follows in the tree before its playout
    (``None``: until it adds a node). Deep in the tree a node stands for moves
    made on different sampled hands, so its statistics say less; the cap
    leaves those moves to the playout.
    """

    def __init__(
        self,
        seed: int | None = None,
        budget: float | None = None,
        iterations: int | None = None,
        exploration: float = 0.2,
        policy: str = "weighted",
        depth: int | None = 6,
        clock: str = "wall",
        evaluation: str = "learned",
        tree_depth: int | None = None,
    ) -> None:
        if policy not in ("random", "weighted"):
            raise ValueError(f"policy is 'random' or 'weighted', not {policy!r}")
        if clock not in CLOCKS:
            raise ValueError(f"clock is 'wall' or 'cpu', not {clock!r}")
        if evaluation not in JUDGEMENTS:
            raise ValueError(f"evaluation is 'hand' or 'learned', not {evaluation!r}")
        if tree_depth is not None and tree_depth < 1:
            raise ValueError(f"tree_depth is at least 1, not {tree_depth!r}")
        self._clock = CLOCKS[clock]
        self._judge = JUDGEMENTS[evaluation]
        if budget is None and iterations is None:
            budget = DEFAULT_BUDGET
        self.budget = budget if budget and budget > 0 else None
        self.iterations = iterations
        self.exploration = exploration
        self.policy = policy
        self.depth = depth
        self.evaluation = evaluation
        self.tree_depth = tree_depth
        self._rng = random.Random(seed)
        self.last_iterations = 0
        """Iterations run for the last decision (for tuning and tests)."""

    def choose(self, view: View, legal: list[Move]) -> Move:
        if len(legal) == 1:
            return legal[0]
        codes = legal_codes(legal)
        return legal[codes.index(self.choose_code(Sampler(view), codes))]

    def choose_code(self, source: Source, codes: Sequence[int]) -> int:
        """The code to play among ``codes``, searching on games drawn from ``source``.

        A bot's seat has only its view, so :meth:`choose` draws from a
        :class:`~mandala.sample.Sampler` of it; the benchmark's clairvoyant
        reference (``bench/clairvoyant.py``) passes copies of the real game.
        """
        root = self._search(source)
        visits = [root.children[code].visits if code in root.children else -1 for code in codes]
        return codes[visits.index(max(visits))]

    def _search(self, source: Source) -> _Node:
        """Run iterations until the cap or the clock stops them; the root holds the statistics."""
        root = _Node()
        clock = self._clock
        deadline = None if self.budget is None else clock() + self.budget
        cap = self.iterations
        n = 0
        while (cap is None or n < cap) and (deadline is None or clock() < deadline):
            n += 1
            self._iterate(root, source.sample(self._rng))
        self.last_iterations = n
        return root

    def _iterate(self, root: _Node, game: Game) -> None:
        """One iteration on one sampled game: select, expand one node, play out, back up."""
        path: list[tuple[_Node, int]] = []  # each node entered, with the seat whose move led there
        node = root
        limit = self.tree_depth
        while game.to_move is not None and (limit is None or len(path) < limit):
            mover = game.to_move
            code, child, expanded = self._select(node, game.legal_codes())
            game.push_code(code)
            path.append((child, mover))
            if expanded:
                break
            node = child
        r0 = _playout(game, self._rng, self.policy, self.depth, self._judge)
        for child, mover in path:
            child.visits += 1
            child.reward += r0 if mover == 0 else 1.0 - r0

    def _select(self, node: _Node, codes: Sequence[int]) -> tuple[int, _Node, bool]:
        """The move to follow from ``node`` among ``codes`` (those legal in this sample):
        an untried one if any (then ``True``: a new node), else the best by UCB."""
        children = node.children
        untried = [code for code in codes if code not in children]
        for code in codes:
            child = children.get(code)
            if child is not None:
                child.avail += 1
        if untried:
            code = untried[int(self._rng.random() * len(untried))]
            child = children[code] = _Node()
            return code, child, True
        c = self.exploration
        best_code, best_value = codes[0], -1.0
        for code in codes:
            child = children[code]
            value = child.reward / child.visits + c * math.sqrt(math.log(child.avail) / child.visits)
            if value > best_value:
                best_code, best_value = code, value
        return best_code, children[best_code], False


def _result(game: Game) -> float:
    """Seat 0's reward for a finished game: 1 for a win, 0 for a loss, 0.5 for a draw
    (R21), nudged by the score margin so that the search also prefers bigger wins."""
    s0, s1 = game.scores()
    w = game.winner()
    base = 0.5 if w is None else 1.0 if w == 0 else 0.0
    return 0.9 * base + 0.1 * (0.5 + 0.5 * math.tanh((s0 - s1) / 30.0))


def _playout(game: Game, rng: random.Random, policy: str, depth: int | None, judge: Callable[[Game], float]) -> float:
    """Play ``game`` on with the default policy, in place; seat 0's reward.

    Picks take the greedy claim (cheap, and far closer to real play than a
    random one). Turns are random, uniformly (``"random"``) or weighted by
    the kind of move (``"weighted"``, see ``_WEIGHT``). With ``depth`` the
    playout stops after that many decisions and ``judge`` gives seat 0's
    reward for the position (one of :data:`JUDGEMENTS`) instead of the end.
    """
    rand = rng.random
    legal = game.legal_codes
    push = game.push_code
    weight = _WEIGHT
    left = depth if depth is not None else -1
    while game.to_move is not None and left:
        left -= 1
        if game.phase == "pick":
            push(best_claim(game))
            continue
        codes = legal()
        if policy == "random":
            push(codes[int(rand() * len(codes))])
            continue
        r = rand() * sum([weight[code] for code in codes])
        for code in codes:
            r -= weight[code]
            if r < 0:
                break
        push(code)
    if game.to_move is None:
        return _result(game)
    resolve_picks(game)
    if game.to_move is None:
        return _result(game)
    return judge(game)
