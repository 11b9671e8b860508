"""Experiment: does a richer feature set judge searched games' outcomes better than win_features?"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from mandala import Game
from mandala_client.bots.heuristics import rich_features as rich
from mandala_client.bots.heuristics import win_features

sys.path.insert(0, str(Path(__file__).parent))
from fit_win_chance import fit, log_loss


def main() -> None:
    rows = [json.loads(line) for f in sys.argv[1:] for line in Path(f).read_text().splitlines() if line.strip()]
    xs, rs, ys, gs = [], [], [], []
    for i, r in enumerate(rows):
        game = Game.new(seed=r["seed"], first_player=r["first"])
        w = r["winner"]
        y = 0.5 if w is None else 1.0 if w == 0 else 0.0
        for code in r["codes"]:
            if game.phase == "turn":
                xs.append(win_features(game, 0))
                rs.append(rich(game, 0))
                ys.append(y)
                gs.append(i)
            game.push_code(code)
    x, xr, y, g = np.array(xs), np.array(rs), np.array(ys), np.array(gs)
    print(len(rows), "games", len(y), "positions")
    for k in range(5):
        held = g % 5 == k
        w = fit(x[~held], y[~held])
        wr = fit(xr[~held], y[~held])
        print(f"fold {k}: win_features {log_loss(x[held] @ w, y[held]):.4f}  rich {log_loss(xr[held] @ wr, y[held]):.4f}")
    print("RICH_WEIGHTS = (" + ", ".join(f"{v:.4f}" for v in fit(xr, y)) + ")")


if __name__ == "__main__":
    main()
