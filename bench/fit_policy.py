"""Fit a playout policy to the moves searched games chose (the search's ``policy=lead``).

Reads the games of ``bench/fit_win_chance.py play`` and, at the start of every turn with more
than one legal move, fits a conditional logit: the chance of each legal move is in proportion
to ``exp(w · features(move))``, the features being the move's kind and size and whether a field
move takes, ties or starts the lead in that mandala's fields. It prints the mean log-likelihood
of the chosen moves per decision for three nested models, and the weights.

    python bench/fit_win_chance.py play --evaluation learned --games 200 --jobs 2 --out moves.jsonl
    python bench/fit_policy.py moves.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from mandala import Game
from mandala.moves import DISCARD, FIELD, MOUNTAIN, MOVE_PARTS

LABELS = ("field1", "field2", "field3+", "discard1", "discard2+", "takes_lead", "first_card", "ties",
          "mountain_my_river", "mountain_their_river", "mountain_new_color", "mountain_completes")


def features(game: Game, code: int) -> list[float]:
    """The features of move ``code`` for the seat to move; a mountain move of no note is all 0."""
    kind, m, c, k = MOVE_PARTS[code]
    p = game.to_move
    assert p is not None
    o = 1 - p
    v = [0.0] * len(LABELS)
    if kind == FIELD:
        v[min(k, 3) - 1] = 1.0
        mine, theirs = game.field_sizes[m][p], game.field_sizes[m][o]
        v[5] = float(mine <= theirs < mine + k)
        v[6] = float(mine == 0)
        v[7] = float(mine + k == theirs)
    elif kind == DISCARD:
        v[3 + min(k, 2) - 1] = 1.0
    elif kind == MOUNTAIN:
        v[8] = float(game.river_masks[p] >> c & 1)
        v[9] = float(game.river_masks[o] >> c & 1)
        present = game.mountain_masks[m] | game.field_masks[m][0] | game.field_masks[m][1]
        if not present >> c & 1:
            v[10] = 1.0
            v[11] = float(bin(present | 1 << c).count("1") == 6)
    return v


def decisions(rows: list[dict[str, object]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every legal move's features, its decision's number and whether it was chosen."""
    xs: list[list[float]] = []
    groups: list[int] = []
    chosen: list[int] = []
    n = 0
    for r in rows:
        game = Game.new(seed=r["seed"], first_player=r["first"])  # type: ignore[arg-type]
        for code in r["codes"]:  # type: ignore[attr-defined]
            if game.phase == "turn":
                legal = game.legal_codes()
                if len(legal) > 1:
                    for c in legal:
                        xs.append(features(game, c))
                        groups.append(n)
                        chosen.append(int(c == code))
                    n += 1
            game.push_code(code)
    return np.array(xs), np.array(groups), np.array(chosen)


def fit(x: np.ndarray, groups: np.ndarray, y: np.ndarray, ridge: float = 1e-3) -> tuple[np.ndarray, float]:
    """Conditional logit by Newton's method; the weights and the log-likelihood per decision."""
    n = int(groups.max()) + 1
    w = np.zeros(x.shape[1])
    p = np.zeros(len(y))
    for _ in range(40):
        s = x @ w
        e = np.exp(s - s.max())
        p = e / np.bincount(groups, e)[groups]
        px = x * p[:, None]
        mean = np.zeros((n, x.shape[1]))
        np.add.at(mean, groups, px)
        hessian = x.T @ px - mean.T @ mean + ridge * np.eye(x.shape[1])
        w += np.linalg.solve(hessian, x.T @ (y - p) - ridge * w)
    return w, float(np.sum(np.log(p[y == 1])) / n)


def main(argv: list[str]) -> int:
    rows = [json.loads(line) for line in Path(argv[0]).read_text().splitlines() if line.strip()]
    x, groups, y = decisions(rows)
    sizes = np.bincount(groups)
    print(f"{len(sizes)} decisions; uniform choice {-float(np.mean(np.log(sizes))):.4f} a decision")
    for cols in (list(range(5)), list(range(8)), list(range(12))):
        w, ll = fit(x[:, cols], groups, y)
        print(f"log-likelihood {ll:.4f}: " + " ".join(f"{LABELS[i]}={v:+.2f}" for i, v in zip(cols, w, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
