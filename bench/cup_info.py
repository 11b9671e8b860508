"""What the opponent's claims say about its two hidden starting cup cards (experiment).

Replays the games of a clairvoyant run (``bench/clairvoyant.py --out``, seed 0) from the
honest seat, feeds every claim of the reference to :class:`CupBelief` at temperature T, and
prints how much more likely the true pair is under the posterior than under the uniform deal,
at mid-game and just before the end:

    python bench/cup_info.py base-0.1.jsonl 3
"""

import json
import math
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).parent)]
from clairvoyant import deal_game  # noqa: E402

from mandala import Game, view  # noqa: E402
from mandala_client.bots.cup_inference import PAIRS, CupBelief  # noqa: E402


def posterior_gain(game: Game, me: int, belief: CupBelief, true: int) -> tuple[float, bool]:
    """log(posterior / prior) of the true pair, and whether it is the most likely one."""
    counts = view(game, me).unseen.counts()
    top = max(belief.loglik)
    prior, post = [], []
    for (a, b), ll in zip(PAIRS, belief.loglik, strict=True):
        p = 2 * counts[a] * counts[b] if a != b else counts[a] * (counts[a] - 1)
        prior.append(p)
        post.append(p * math.exp(ll - top))
    best = max(range(len(PAIRS)), key=post.__getitem__)
    return math.log(post[true] / sum(post) / (prior[true] / sum(prior))), best == true


def main() -> None:
    rows = [json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line]
    temperature = float(sys.argv[2])
    mid, end, right, claims = [], [], 0, 0
    for r in rows:
        game = deal_game(0, r["deal"])
        me = r["honest_seat"]
        opp = 1 - me
        true = PAIRS.index(tuple(sorted(c for c in range(6) for _ in range(game.starting_cups[opp][c]))))
        belief = CupBelief(temperature)
        n = len(r["codes"])
        for k, code in enumerate(r["codes"]):
            if game.phase == "pick" and game.to_move == opp:
                belief.observe(view(game, me), code)
                claims += 1
            game.push_code(code)
            if game.to_move is not None and k in (n // 2, n - 2):
                gain, top = posterior_gain(game, me, belief, true)
                (mid if k == n // 2 else end).append(gain)
                right += top and k == n - 2
    print(f"T={temperature}: {len(rows)} games, {claims} claims; the true pair's log(posterior/prior): "
          f"mid-game {sum(mid) / len(mid):.3f}, near the end {sum(end) / len(end):.3f} nats; most likely pair right in {right}/{len(end)}")


if __name__ == "__main__":
    main()
