"""Bots of known strengths for the ladder's load (``bench/cluster_load.py --runs ladder``).

An *erring* bot has a fixed error rate ``e``: at each decision, with probability ``e`` it
answers a uniformly random legal move, otherwise the client's greedy bot's move
(``mandala_client.bots.greedy``, one sampled deal: the cheapest stronger policy the client
ships). Its strength falls with ``e``, so a ladder of such bots has a known true order to
compare its standings with. ``tiers(k)`` spreads ``e`` evenly from 0 (greedy always) to 1
(random always).

``python bench/erring.py`` measures what the load needs to know of them, on this machine:
what one decision costs the load client (decode the frame, choose, encode the move) for each
policy, and how strong the tiers are against each other (duplicate-deal matches through
``mandala match``'s own driver, one process), so that the ladder's figures can be read:

    python bench/erring.py [--decisions 2000] [--games 200]

``mandala match 'erring:ErringBot,error=0.25' 'erring:ErringBot,error=0.5'`` (from ``bench/``)
plays any two tiers.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from mandala import Game, Move, View, view
from mandala_client.bots.greedy import GreedyBot
from protocol.messages import Decision

GREEDY_SAMPLES = 1
"""The greedy bot's sampled deals per decision: 1 costs a third of the default 3 and still
beats random in 98 games of 100 (``python bench/erring.py``)."""

_decision = msgspec.json.Decoder(Decision)
_encode = msgspec.json.Encoder().encode


def tiers(count: int) -> list[float]:
    """``count`` error rates evenly from 0 to 1 (one tier: greedy only)."""
    return [k / (count - 1) for k in range(count)] if count > 1 else [0.0]


class ErringBot:
    """Greedy except, with probability ``error``, a uniformly random legal move (offline, for
    ``mandala match``: ``choose(view, legal)``)."""

    def __init__(self, seed: int | None = None, budget: float | None = None, error: float = 0.0) -> None:
        self._rng = random.Random(seed)
        self.error = error
        self._greedy = GreedyBot(seed=seed, samples=GREEDY_SAMPLES)

    def choose(self, view: View, legal: list[Move]) -> Move:
        if self._rng.random() < self.error:
            return legal[self._rng.randrange(len(legal))]
        return self._greedy.choose(view, legal)


class WireErringBot:
    """The same policy on the wire: it reads a ``decision`` frame and writes the move's JSON.
    A random answer is taken from the frame's raw ``legal`` list without decoding the view,
    so a bot that errs often costs the load client little."""

    def __init__(self, seed: int, error: float) -> None:
        self._rng = random.Random(seed)
        self.error = error
        self._greedy = GreedyBot(seed=seed, samples=GREEDY_SAMPLES)

    def answer(self, frame: bytes | str, legal: list[msgspec.Raw]) -> bytes:
        if len(legal) == 1:
            return bytes(legal[0])
        if self._rng.random() < self.error:
            return bytes(legal[self._rng.randrange(len(legal))])
        d = _decision.decode(frame)
        return _encode(self._greedy.choose(d.view, d.legal))


class _Legal(msgspec.Struct):
    legal: list[msgspec.Raw]


def decision_frames(games: int, seed: int = 0) -> list[bytes]:
    """Every ``decision`` frame of ``games`` random games, as the server encodes them."""
    rng = random.Random(seed)
    frames = []
    for g in range(games):
        game = Game.new(seed=seed + g)
        ply = 0
        while not game.is_over:
            seat = game.to_move
            assert seat is not None
            legal = game.legal_moves
            frames.append(_encode(Decision(game_id="g" * 12, request_id=ply, seat=0 if seat == 0 else 1, view=view(game, seat),
                                           legal=list(legal), deadline_ms=5000)))
            game.push(rng.choice(legal))
            ply += 1
    return frames


def cost_per_decision(frames: list[bytes], error: float) -> float:
    """Seconds of this process's CPU per decision of :class:`WireErringBot` at ``error``."""
    bot = WireErringBot(1, error)
    legal = msgspec.json.Decoder(_Legal)
    t = time.process_time()
    for frame in frames:
        bot.answer(frame, legal.decode(frame).legal)
    return (time.process_time() - t) / len(frames)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decisions", type=int, default=2000, help="decision frames to time (default 2000)")
    parser.add_argument("--games", type=int, default=200, help="games per match (default 200)")
    args = parser.parse_args()
    frames = decision_frames(60)[: args.decisions]
    print(f"{len(frames)} decision frames of random games ({statistics.mean(len(f) for f in frames):.0f} bytes on average)")
    for e in (0.0, 0.5, 1.0):
        print(f"error rate {e:.1f}: {cost_per_decision(frames, e) * 1e6:6.0f} µs of CPU per decision "
              "(decode, choose, encode)")
    print(f"duplicate-deal matches of {args.games} games (mandala match, one process):")
    for a, b in MATCHES:
        print(f"error {a:.1f} against {b:.1f}: {strength(a, b, args.games)}", flush=True)


MATCHES = ((0.0, 1.0), (0.0, 0.5), (0.5, 1.0), (0.0, 0.1), (0.4, 0.5), (0.9, 1.0))
"""Pairs of tiers to play: the ends, the halves, and neighbours at each end and the middle."""


def strength(a: float, b: float, games: int) -> str:
    """``mandala match`` between error rates ``a`` and ``b``: A's score and Elo difference."""
    done = subprocess.run([sys.executable, "-m", "mandala_cli.main", "match", f"erring:ErringBot,error={a}",
                           f"erring:ErringBot,error={b}", "--games", str(games), "--jobs", "1"],
                          cwd=Path(__file__).resolve().parent, capture_output=True, text=True, check=True)
    r = json.loads(done.stdout.strip().splitlines()[-1])
    elo = f"{r['elo']:+.0f} ({r['elo_low']:+.0f} to {r['elo_high']:+.0f})" if r["elo"] is not None else \
        f"at least {r['elo_low']:+.0f}"
    return f"score {r['score']:.3f}, Elo {elo}"


if __name__ == "__main__":
    main()
