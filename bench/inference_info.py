"""How much the opponent's turn says about its hand, under an opponent model.

For each turn of games of the shipped search against itself (300 iterations a decision),
the log-likelihood of the move played under the model, with the mover's true hand, less the
mean log-likelihood with hands drawn from what the other seat sees (each holding the cards the
turn played, so the move stays legal): nats of evidence a turn gives for the true hand.

    python bench/inference_info.py --games 3 --model greedy
    python bench/inference_info.py --games 3 --model search --iterations 100
"""

from __future__ import annotations

import argparse
import math
import random

from mandala import Game, view
from mandala.sample import Sampler
from mandala_client.bots.base import legal_codes
from mandala_client.bots.inference import _played, likelihood, search_likelihood
from mandala_client.bots.search import SearchBot


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--games", type=int, default=3)
    p.add_argument("--model", choices=("greedy", "search"), default="greedy")
    p.add_argument("--iterations", type=int, default=100, help="the search model's iterations")
    p.add_argument("--temperature", type=float, default=3.0, help="the greedy model's softmax temperature")
    args = p.parse_args()
    rng = random.Random(0)

    def model(game: Game, code: int) -> float:
        if args.model == "greedy":
            return likelihood(game, code, args.temperature, 0.0) + 1e-9
        return search_likelihood(game, code, args.iterations, rng)

    gains: list[float] = []
    for seed in range(args.games):
        game = Game.new(seed=100 + seed)
        bots = [SearchBot(seed=1, iterations=300), SearchBot(seed=2, iterations=300)]
        while game.to_move is not None:
            seat = game.to_move
            legal = game.legal_moves
            code = legal_codes([bots[seat].choose(view(game, seat), legal) if len(legal) > 1 else legal[0]])[0]
            if game.phase == "turn" and len(legal) > 1:
                other = Sampler(view(game, 1 - seat))
                played, n = _played(code)
                others = []
                for _ in range(6):
                    hand = other.hand(rng)
                    cards = [c for c in range(6) for _ in range(hand[c])]
                    then = played[:]
                    for c in rng.sample(cards, other.hand_size - n):
                        then[c] += 1
                    g = other.sample_with_hand(then, rng)
                    if g is not None:
                        others.append(math.log(model(g, code)))
                if others:
                    gains.append(math.log(model(game, code)) - sum(others) / len(others))
            game.push_code(code)
        print(f"game {seed}: {len(gains)} turns, {sum(gains) / len(gains):.3f} nats a turn", flush=True)


if __name__ == "__main__":
    main()
