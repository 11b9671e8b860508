"""What every bot offers, and the small helpers the shipped bots share.

A bot is any object with ``choose(view, legal) -> Move``: it gets the view
of its seat (R24) and the legal moves of the decision (R22) and returns one
of them. Constructors take an optional ``seed`` (reproducible play) and an
optional ``budget`` (seconds per decision), so the match driver can build
any bot the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from mandala import Move, View, code_of


@runtime_checkable
class Bot(Protocol):
    """Anything that picks one of the legal moves for a seat's view."""

    def choose(self, view: View, legal: list[Move]) -> Move: ...


def legal_codes(legal: Sequence[Move]) -> list[int]:
    """The engine codes of ``legal``, in the same order.

    Moves decoded from the wire are fresh structs, so bots work on codes
    and map back to the caller's own move objects by position.
    """
    codes = []
    for move in legal:
        code = code_of(move)
        if code is None:
            raise ValueError(f"not a legal move in any position: {move!r}")
        codes.append(code)
    return codes
