"""Finished games per second: P pairs of instant bots (first legal move, at once) playing
challenge games against ``mandala serve`` pinned to core 0, for S seconds, over real sockets
(the same bots and server as ``bench/load.py``, counted in games).

    python bench/games.py [--repo DIR] [--pairs 10] [--seconds 10] [--port 8101]

``--repo`` runs the server from another checkout (``git worktree add /tmp/old REV``), so two
versions are compared in the same run; the machine is noisy, so compare ratios. Prints one
JSON line.
"""

from __future__ import annotations

import json

from load import arena_run, arguments


def main() -> None:
    args = arguments(__doc__.split("\n\n")[0], pairs=10, port=8101)
    arena = arena_run(args)
    print(json.dumps({"repo": str(args.repo.resolve()), "pairs": args.pairs, "seconds": args.seconds,
                      "games_per_s": arena["games_per_s"]}))


if __name__ == "__main__":
    main()
