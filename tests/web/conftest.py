"""The web tests drive tournaments with the tournament tests' kit (``tests/tournaments/tournament_kit.py``),
so that directory is importable here too, also when ``tests/web`` runs alone."""

from __future__ import annotations

import sys
from pathlib import Path

TOURNAMENTS = str(Path(__file__).resolve().parent.parent / "tournaments")
if TOURNAMENTS not in sys.path:
    sys.path.insert(0, TOURNAMENTS)
