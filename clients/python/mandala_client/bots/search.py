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

LEARNED_FIELD = (0.49, 1.19, 1.33)
"""Log-weights of the ``learned`` policy's field moves of 1, 2 and 3 or more cards, against a
mountain move's 0: fitted to the searched games' choices (``bench/fit_win_chance.py policy``)."""
LEARNED_DISCARD = (-1.84, -1.57)
"""Log-weights of the ``learned`` policy's discards of 1 and of 2 or more cards."""

_LEARNED = tuple(
    math.exp(LEARNED_FIELD[min(count, 3) - 1]) if kind == FIELD
    else math.exp(LEARNED_DISCARD[min(count, 2) - 1]) if kind == DISCARD
    else 1.0
    for kind, _, _, count in MOVE_PARTS
)

LEAD_FIELD = (-1.00, -0.60, -0.59)
LEAD_DISCARD = (-1.90, -1.64)
LEAD_BONUS = (2.15, 0.92, 1.39)
_LEAD = tuple(
    math.exp(LEAD_FIELD[min(count, 3) - 1]) if kind == FIELD
    else math.exp(LEAD_DISCARD[min(count, 2) - 1]) if kind == DISCARD
    else 1.0
    for kind, _, _, count in MOVE_PARTS
)
_FIELD_PARTS = tuple((m, count) if kind == FIELD else None for kind, m, _, count in MOVE_PARTS)
_E_LEAD, _E_FIRST, _E_TIE = (math.exp(b) for b in LEAD_BONUS)

POLICIES: dict[str, tuple[float, ...] | None] = {"random": None, "weighted": _WEIGHT, "learned": _LEARNED, "lead": _LEAD}
"""The playout policies by name (the ``policy`` option): the weights of each move code, a move
drawn with chance in proportion to its weight among the legal ones; ``None`` draws uniformly."""


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


class _FixedHands:
    """One sampled game whose hands and cups stay put while its draws are dealt anew each time."""

    __slots__ = ("game",)

    def __init__(self, game: Game) -> None:
        self.game = game

    def sample(self, rng: random.Random) -> Game:
        game = self.game.copy()
        rng.shuffle(game.deck)
        game._rng = random.Random(rng.getrandbits(64))
        return game


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
    the playout policy (``"weighted"``, ``"learned"`` or ``"random"``, see :data:`POLICIES`) and ``depth`` the
    decisions a playout runs before the evaluation judges it (``None``:
    to the end of the game). ``clock`` is what the budget is measured on
    (``"wall"`` or ``"cpu"``, see :data:`CLOCKS`), ``evaluation`` how a
    cut-off playout is judged (``"learned"`` or ``"hand"``, see :data:`JUDGEMENTS`),
    and ``tree_depth`` the moves an iteration follows in the tree before its playout
    (``None``: until it adds a node). Deep in the tree a node stands for moves
    made on different sampled hands, so its statistics say less; the cap
    leaves those moves to the playout. ``widening`` bounds the moves a node
    holds by its visits (``None``: every legal move, see :meth:`_select`).
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
        widening: float | None = None,
        hands: int | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy is 'random', 'weighted' or 'learned', not {policy!r}")
        if clock not in CLOCKS:
            raise ValueError(f"clock is 'wall' or 'cpu', not {clock!r}")
        if evaluation not in JUDGEMENTS:
            raise ValueError(f"evaluation is 'hand' or 'learned', not {evaluation!r}")
        if tree_depth is not None and tree_depth < 1:
            raise ValueError(f"tree_depth is at least 1, not {tree_depth!r}")
        if widening is not None and not widening > 0:
            raise ValueError(f"widening is above 0, not {widening!r}")
        self._clock = CLOCKS[clock]
        self._judge = JUDGEMENTS[evaluation]
        if budget is None and iterations is None:
            budget = DEFAULT_BUDGET
        self.budget = budget if budget and budget > 0 else None
        self.iterations = iterations
        self.exploration = exploration
        self.policy = policy
        self._weights = POLICIES[policy]
        self.depth = depth
        self.evaluation = evaluation
        self.tree_depth = tree_depth
        self.widening = widening
        self.hands = hands
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
        if self.hands:
            return self._choose_per_hand(source, codes)
        root = self._search(source)
        visits = [root.children[code].visits if code in root.children else -1 for code in codes]
        return codes[visits.index(max(visits))]

    def _choose_per_hand(self, source: Source, codes: Sequence[int]) -> int:
        k = self.hands or 1
        budget, cap = self.budget, self.iterations
        self.budget = None if budget is None else budget / k
        self.iterations = None if cap is None else max(1, cap // k)
        totals = dict.fromkeys(codes, 0)
        done = 0
        try:
            for _ in range(k):
                root = self._search(_FixedHands(source.sample(self._rng)))
                done += self.last_iterations
                for code, child in root.children.items():
                    totals[code] += child.visits
        finally:
            self.budget, self.iterations = budget, cap
        self.last_iterations = done
        return max(codes, key=lambda c: totals[c])

    def _search(self, source: Source) -> _Node:
        """Run iterations until the cap or the clock stops them; the root holds the statistics."""
        root = _Node()
        clock = self._clock
        deadline = None if self.budget is None else clock() + self.budget
        cap = self.iterations
        n = 0
        while (cap is None or n < cap) and (deadline is None or clock() < deadline):
            n += 1
            root.visits = n
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
        r0 = _playout(game, self._rng, self._weights, self.depth, self._judge)
        for child, mover in path:
            child.visits += 1
            child.reward += r0 if mover == 0 else 1.0 - r0

    def _select(self, node: _Node, codes: Sequence[int]) -> tuple[int, _Node, bool]:
        """The move to follow from ``node`` among ``codes`` (those legal in this sample):
        an untried one if any may be added (then ``True``: a new node), else the best by UCB.

        Without ``widening`` every legal move is tried once, in random order, before UCB
        chooses. With it, a node holds at most ``widening`` × √(its visits) moves, tried in
        the order of the playout policy's weights (:data:`POLICIES`): the few visits of a deep
        node go to the moves a player is likely to make, not to one try of each."""
        children = node.children
        untried = [code for code in codes if code not in children]
        for code in codes:
            child = children.get(code)
            if child is not None:
                child.avail += 1
        widening = self.widening
        if untried and (
            widening is None
            or len(untried) == len(codes)
            or len(children) < widening * math.sqrt(node.visits + 1)
        ):
            if widening is not None:
                weight = self._weights or _WEIGHT
                top = max(weight[code] for code in untried)
                untried = [code for code in untried if weight[code] == top]
            code = untried[int(self._rng.random() * len(untried))]
            child = children[code] = _Node()
            return code, child, True
        c = self.exploration
        best_code, best_value = -1, -1.0
        for code in codes:
            child = children.get(code)
            if child is None:
                continue
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


def _playout(
    game: Game, rng: random.Random, weights: tuple[float, ...] | None, depth: int | None, judge: Callable[[Game], float]
) -> float:
    """Play ``game`` on with the default policy, in place; seat 0's reward.

    Picks take the greedy claim (cheap, and far closer to real play than a
    random one). Turns draw a move uniformly (``weights`` ``None``) or in
    proportion to its weight (one of :data:`POLICIES`). With ``depth`` the
    playout stops after that many decisions and ``judge`` gives seat 0's
    reward for the position (one of :data:`JUDGEMENTS`) instead of the end.
    """
    rand = rng.random
    legal = game.legal_codes
    push = game.push_code
    left = depth if depth is not None else -1
    while game.to_move is not None and left:
        left -= 1
        if game.phase == "pick":
            push(best_claim(game))
            continue
        codes = legal()
        if weights is None:
            push(codes[int(rand() * len(codes))])
            continue
        if weights is _LEAD:
            p = game.to_move
            fs = game.field_sizes
            ws = []
            for code in codes:
                w = weights[code]
                fk = _FIELD_PARTS[code]
                if fk is not None:
                    sizes = fs[fk[0]]
                    mine = sizes[p]
                    theirs = sizes[1 - p]
                    if not mine:
                        w *= _E_FIRST
                    if mine <= theirs < mine + fk[1]:
                        w *= _E_LEAD
                    elif mine + fk[1] == theirs:
                        w *= _E_TIE
                ws.append(w)
            r = rand() * sum(ws)
            i = 0
            for i, w in enumerate(ws):  # noqa: B007 (the index is the choice)
                r -= w
                if r < 0:
                    break
            push(codes[i])
            continue
        r = rand() * sum([weights[code] for code in codes])
        for code in codes:
            r -= weights[code]
            if r < 0:
                break
        push(code)
    if game.to_move is None:
        return _result(game)
    resolve_picks(game)
    if game.to_move is None:
        return _result(game)
    return judge(game)
