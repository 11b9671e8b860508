"""Errors raised by the engine. Each names the rule (R1–R24) it enforces."""

from __future__ import annotations


class MandalaError(Exception):
    """Base class: every engine error carries the rule it enforces."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"{rule}: {message}")
        self.rule = rule
        self.message = message


class IllegalMove(MandalaError):
    """A move that the rules do not allow now. The game is left untouched."""


class RecordError(MandalaError):
    """A game record (R23) that is malformed or does not replay.

    ``ply`` is the index of the move at fault in the record's ``moves``, or
    ``None`` when the fault is in the record as a whole.
    """

    def __init__(self, rule: str, message: str, ply: int | None = None) -> None:
        super().__init__(rule, message if ply is None else f"ply {ply}: {message}")
        self.message = message  # without the ply, which callers report on their own
        self.ply = ply
