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

The bot keeps the tree between its decisions in a game (``reuse``, on by default): it
follows the moves played since its last search down the tree (through the ``update``
messages, :meth:`SearchBot.on_update`) and starts its next search from the node it
reaches, with that node's statistics as they are. That adds about a fifth to a
decision's iterations at 0.3 s, and won +54 Elo (+6 to +103) head to head against the
search that starts afresh (docs/performance.md, "Reuse of the tree between decisions").
A bot told no ``update`` (one driven by ``choose`` alone) starts afresh every time.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from mandala import Game, Move, View
from mandala.errors import RecordError
from mandala.moves import DISCARD, FIELD, MOUNTAIN, MOVE_PARTS
from mandala.record import move_code
from mandala.sample import Sampler
from protocol.messages import GameOver, GameStart, Update

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


KEPT_GAMES = 128
"""The most games a bot with ``reuse`` keeps a tree for: a connection plays at most 64 at once,
and a game that ended while the bot was away is never told it ended (its tree would stay)."""


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


class _Trail:
    """Where one game stands for a bot with ``reuse``: the last ``update``'s ply and view, and
    the node of the tree that the moves since the bot's last search lead to (``None`` when
    there is none to start from: no search yet, or the path is not certain)."""

    __slots__ = ("node", "ply", "view")

    def __init__(self, node: _Node | None, ply: int, view: View) -> None:
        self.node = node
        self.ply = ply
        self.view = view


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

    With ``reuse`` (the default) the bot keeps, for each game it plays, the tree of its last
    search and follows the moves played since (its own, its opponent's, picks by
    either seat, as its ``update`` messages report them) down to the node where its
    next decision stands; that search starts from the node, statistics and all,
    instead of a fresh root. Anything that makes the path uncertain (a resume, a gap
    in the plies, a move the node never saw, a decision whose view is not the last
    update's) starts a fresh tree, and a search only ever picks among the legal moves.
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
        reuse: bool = True,
    ) -> None:
        if policy not in ("random", "weighted"):
            raise ValueError(f"policy is 'random' or 'weighted', not {policy!r}")
        if clock not in CLOCKS:
            raise ValueError(f"clock is 'wall' or 'cpu', not {clock!r}")
        if evaluation not in JUDGEMENTS:
            raise ValueError(f"evaluation is 'hand' or 'learned', not {evaluation!r}")
        if tree_depth is not None and tree_depth < 1:
            raise ValueError(f"tree_depth is at least 1, not {tree_depth!r}")
        if reuse not in (False, True):  # 0 and 1 too, as a spec's ``reuse=1`` gives them
            raise ValueError(f"reuse is 0 or 1, not {reuse!r}")
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
        self.reuse = bool(reuse)
        self._trails: dict[str, _Trail] = {}
        """By game id, with ``reuse``: where each game stands in the tree kept for it."""
        self._lock = threading.Lock()  # the online client runs ``choose`` in worker threads, hooks on its loop
        self.last_iterations = 0
        """Iterations run for the last decision (for tuning and tests)."""
        self.last_carried = 0
        """Iterations the last decision's root had from the decisions before (``reuse``)."""

    def choose(self, view: View, legal: list[Move]) -> Move:
        if len(legal) == 1:
            return legal[0]
        codes = legal_codes(legal)
        if not self.reuse:
            return legal[codes.index(self.choose_code(Sampler(view), codes))]
        game_id, trail = self._trail_of(view)
        root = self._search(Sampler(view), trail.node if trail is not None else None)
        if trail is not None:
            with self._lock:  # unless the game moved on meanwhile (a late answer, a fallback sent)
                if self._trails.get(game_id) is trail:
                    self._trails[game_id] = _Trail(root, trail.ply, view)
        return legal[codes.index(_most_visited(root, codes))]

    def choose_code(self, source: Source, codes: Sequence[int]) -> int:
        """The code to play among ``codes``, searching on games drawn from ``source``.

        A bot's seat has only its view, so :meth:`choose` draws from a
        :class:`~mandala.sample.Sampler` of it; the benchmark's clairvoyant
        reference (``bench/clairvoyant.py``) passes copies of the real game.
        """
        return _most_visited(self._search(source), codes)

    def on_game_start(self, start: GameStart) -> None:
        """A game begins, or resumes after a reconnect: nothing kept for it is certain now."""
        with self._lock:
            self._trails.pop(start.game_id, None)

    def on_update(self, update: Update) -> None:
        """With ``reuse``: follow the move ``update`` reports down the game's tree, if the
        update comes right after the last one and the node has that move; else keep no node."""
        if not self.reuse:
            return
        with self._lock:
            trail = self._trails.get(update.game_id)
            node = None
            if trail is not None and trail.node is not None and update.move is not None and update.ply == trail.ply + 1:
                try:
                    node = trail.node.children.get(move_code(update.move))
                except RecordError:
                    node = None
            self._trails[update.game_id] = _Trail(node, update.ply, update.view)
            if len(self._trails) > KEPT_GAMES:  # games whose end it was never told (it was away)
                del self._trails[next(iter(self._trails))]

    def on_game_over(self, over: GameOver) -> None:
        """The game is over: drop its tree."""
        with self._lock:
            self._trails.pop(over.game_id, None)

    def _trail_of(self, view: View) -> tuple[str, _Trail | None]:
        """The game whose last update gave ``view`` (``choose`` is told no game id), and its trail."""
        with self._lock:
            for game_id, trail in self._trails.items():
                if trail.view == view:
                    return game_id, trail
        return "", None

    def _search(self, source: Source, root: _Node | None = None) -> _Node:
        """Run iterations until the cap or the clock stops them; the root holds the statistics.
        A ``root`` kept from before (``reuse``) goes on gathering them."""
        if root is None:
            root = _Node()
        self.last_carried = sum(child.visits for child in root.children.values())
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


def _most_visited(root: _Node, codes: Sequence[int]) -> int:
    """The code among ``codes`` whose move the search visited most (the first, if none was)."""
    visits = [root.children[code].visits if code in root.children else -1 for code in codes]
    return codes[visits.index(max(visits))]


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
