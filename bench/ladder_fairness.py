"""Games per bot on the demo's ladder, with and without a games-per-hour limit, in one run.

Runs ``mandala demo`` twice side by side (same bots, same length, two ports), then counts each
bot's rated ladder games and qualification games in each demo's database::

    .venv/bin/python bench/ladder_fairness.py --seconds 600 --limit 60

The two demos share the machine, so the bot that thinks (``search``, 0.3 s a move) is slowed
the same in both; compare the columns, not the absolute numbers with another machine's.
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path


def count(workdir: Path) -> tuple[Counter[str], Counter[str]]:
    """(rated ladder games, qualification games) per bot in the demo's database."""
    db = next(workdir.glob("demo-*.db"))
    ladder: Counter[str] = Counter()
    qualification: Counter[str] = Counter()
    with sqlite3.connect(db) as conn:
        for seat0, seat1, kind in conn.execute("SELECT seat0, seat1, kind FROM games WHERE status = 'finished'"):
            target = ladder if kind == "ladder" else qualification if kind == "qualification" else None
            if target is not None:
                target[seat0] += 1
                target[seat1] += 1
    return ladder, qualification


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=600.0)
    p.add_argument("--limit", type=int, default=60, help="ladder games per bot per hour in the limited demo")
    p.add_argument("--port", type=int, default=18400, help="the first demo's port (the second uses the next)")
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mandala-fairness-"))
    runs = {"no limit": (root / "free", []), f"limit {args.limit}/h": (root / "limited",
                                                                     ["--ladder-games-per-hour", str(args.limit)])}
    procs = []
    for i, (workdir, extra) in enumerate(runs.values()):
        cmd = [sys.executable, "-m", "mandala_cli.main", "demo", "--port", str(args.port + i), "--dir", str(workdir),
               "--seconds", str(args.seconds), *extra]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for proc in procs:
        proc.wait()
    counts = {label: count(workdir) for label, (workdir, _) in runs.items()}
    bots = sorted({b for ladder, q in counts.values() for b in ladder | q} - {"house"})
    print(f"Games per bot over {args.seconds:g} s of `mandala demo` (rated ladder games; qualification games in brackets)")
    print(f"| bot | {' | '.join(runs)} |")
    print(f"|---|{'---|' * len(runs)}")
    for bot in bots:
        cells = [f"{counts[label][0][bot]} ({counts[label][1][bot]})" for label in runs]
        print(f"| {bot} | {' | '.join(cells)} |")
    print(f"(databases and logs in {root})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
