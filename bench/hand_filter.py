"""How much of the opponent's hand its moves give away (experiment, docs/performance.md).

A particle filter over the opponent's hand: 64 candidate hands, each weighed at every turn of
the opponent's by how likely a one-ply opponent judging by ``win_chance`` (a softmax over the
logits, temperature 0.1) holding it would have played that turn; the cards it played are put
in, the cards it draws dealt at random, and the candidates resampled when their weights
spread. At each of seat 0's turns it counts how many cards of the opponent's true hand the
candidates hold on average (weighed), beside hands drawn uniformly from the unseen cards.
Games of the search (200 iterations) against itself, or, with ``--oracle``, against an
opponent that plays by the model itself::

    python bench/hand_filter.py --games 10 [--oracle]
"""

from __future__ import annotations

import argparse
import math
import random

from mandala import Game, view
from mandala.moves import DISCARD, FIELD, MOUNTAIN, MOVE_PARTS
from mandala.sample import Sampler, _deal_hidden
from mandala_client.bots.base import legal_codes
from mandala_client.bots.heuristics import resolve_picks, win_chance
from mandala_client.bots.search import SearchBot


def pool_of(s: Sampler) -> list[int]:
    pool = [0] * 6
    for c in s._unseen:
        pool[c] += 1
    return pool


def with_hand(s: Sampler, hand: list[int], rng: random.Random) -> Game | None:
    """A game of the sampler's view in which the opponent holds ``hand``."""
    left = pool_of(s)
    if any(left[c] < hand[c] for c in range(6)) or sum(hand) != s._opp_hand:
        return None
    rest = [c for c in range(6) for _ in range(left[c] - hand[c])]
    rng.shuffle(rest)
    game = s._template.copy()
    start = [0] * 6
    for c in rest[:s._opp_cup]:
        start[c] += 1
    _deal_hidden(game, 1 - s.seat, list(hand), start, [start[c] + s._claimed[c] for c in range(6)], rest[s._opp_cup:])
    game._rng = random.Random(rng.getrandbits(64))
    return game


def model(game: Game, code: int, temperature: float) -> float:
    """The chance a one-ply opponent judging by ``win_chance`` plays ``code``."""
    mover = game.to_move
    assert mover is not None
    codes = game.legal_codes()
    if code not in codes:
        return 1e-12
    logits = []
    for c in codes:
        g = game.copy()
        g.push_code(c)
        resolve_picks(g)
        if g.to_move is None:
            w = g.winner()
            p = 0.5 if w is None else 1.0 if w == mover else 0.0
        else:
            p = win_chance(g, mover)
        p = min(max(p, 1e-6), 1 - 1e-6)
        logits.append(math.log(p / (1 - p)) / temperature)
    top = max(logits)
    weights = [math.exp(v - top) for v in logits]
    return weights[codes.index(code)] / sum(weights) + 1e-6


def fit(hand: list[int], size: int, pool: list[int], rng: random.Random, need: list[int] | None = None) -> list[int]:
    """``hand`` made possible: at most ``pool`` of each color, ``need`` in it, ``size`` cards."""
    need = need or [0] * 6
    hand = [max(min(hand[c], pool[c]), need[c]) for c in range(6)]
    while sum(hand) > size:
        hand[rng.choice([c for c in range(6) for _ in range(hand[c] - need[c])])] -= 1
    while sum(hand) < size:
        hand[rng.choice([c for c in range(6) for _ in range(pool[c] - hand[c])])] += 1
    return hand


class Filter:
    def __init__(self, n: int, temperature: float, rng: random.Random) -> None:
        self.n, self.temperature, self.rng = n, temperature, rng
        self.hands = [[0] * 6 for _ in range(n)]
        self.logw = [0.0] * n

    def reconcile(self, v: object) -> Sampler:
        s = Sampler(v)  # type: ignore[arg-type]
        pool = pool_of(s)
        self.hands = [fit(h, s._opp_hand, pool, self.rng) for h in self.hands]
        return s

    def observe(self, before: object, code: int) -> None:
        """The opponent played ``code`` from the view ``before`` (its turn)."""
        s = self.reconcile(before)
        kind, _, color, count = MOVE_PARTS[code]
        if kind not in (MOUNTAIN, FIELD, DISCARD):
            return
        n = 1 if kind == MOUNTAIN else count
        need = [0] * 6
        need[color] = n
        pool = pool_of(s)
        for i, h in enumerate(self.hands):
            h = fit(h, s._opp_hand, pool, self.rng, need)
            g = with_hand(s, h, self.rng)
            self.logw[i] += math.log(model(g, code, self.temperature)) if g is not None else -20.0
            h[color] -= n
            self.hands[i] = h
        top = max(self.logw)
        self.logw = [x - top for x in self.logw]
        w = [math.exp(x) for x in self.logw]
        if sum(w) ** 2 / sum(x * x for x in w) < self.n / 2:
            picks = self.rng.choices(range(self.n), weights=w, k=self.n)
            self.hands = [self.hands[i][:] for i in picks]
            self.logw = [0.0] * self.n

    def weighted(self) -> list[tuple[list[int], float]]:
        w = [math.exp(x) for x in self.logw]
        return [(h, x / sum(w)) for h, x in zip(self.hands, w, strict=True)]


def overlap(a: list[int], b: list[int]) -> int:
    return sum(min(x, y) for x, y in zip(a, b, strict=True))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=10)
    p.add_argument("--candidates", type=int, default=64)
    p.add_argument("--temperature", type=float, default=0.1)
    p.add_argument("--oracle", action="store_true", help="the opponent plays by the model")
    args = p.parse_args()
    rng = random.Random(0)
    filtered = uniform = decisions = 0.0
    for k in range(args.games):
        game = Game.new(seed=200 + k)
        bots = [SearchBot(seed=1, iterations=200, reuse=False), SearchBot(seed=2, iterations=200, reuse=False)]
        flt = Filter(args.candidates, args.temperature, random.Random(k))
        while game.to_move is not None:
            seat = game.to_move
            legal = game.legal_moves
            if seat == 1 and game.phase == "turn" and len(legal) > 1 and args.oracle:
                codes = game.legal_codes()
                code = rng.choices(codes, weights=[model(game, c, args.temperature) for c in codes])[0]
            else:
                code = legal_codes([bots[seat].choose(view(game, seat), legal) if len(legal) > 1 else legal[0]])[0]
            if seat == 0 and game.phase == "turn":
                s = flt.reconcile(view(game, 0))
                true = game.hands[1]
                filtered += sum(overlap(h, true) * w for h, w in flt.weighted())
                uniform += sum(overlap(s.sample(rng).hands[1], true) for _ in range(20)) / 20
                decisions += 1
            if seat == 1 and game.phase == "turn":
                flt.observe(view(game, 0), code)
            game.push_code(code)
        print(f"game {k}: cards of the true hand held, filter {filtered / decisions:.3f},"
              f" uniform {uniform / decisions:.3f} ({decisions:.0f} decisions)", flush=True)


if __name__ == "__main__":
    main()
