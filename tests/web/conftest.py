"""The web tests drive tournaments with the tournament tests' kit (``tests/tournaments/tournament_kit.py``)
and the ladder with the ladder tests' helpers (``tests/ladder``), so those directories are
importable here too, also when ``tests/web`` runs alone."""

from __future__ import annotations

import sys
from pathlib import Path

for part in ("tournaments", "ladder"):
    folder = str(Path(__file__).resolve().parent.parent / part)
    if folder not in sys.path:
        sys.path.insert(0, folder)
