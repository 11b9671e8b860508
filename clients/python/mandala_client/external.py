"""A bot that is an external program speaking the protocol as JSON lines.

The program reads the server's messages (:mod:`protocol.messages`), one
JSON object per line on its stdin — ``game_start``, ``update`` after every
move, ``decision`` when it must move, ``game_over`` at the end — and
answers each ``decision`` with one ``move`` message on its stdout::

    {"type": "move", "game_id": "...", "request_id": 17, "move": {"type": "pass"}}

so a bot written for the WebSocket server can be tested offline by
swapping its transport for stdin/stdout. Other JSON objects it writes
(a ``hello``, a ``ping``) and moves with a stale ``request_id`` are
ignored; anything that is not JSON, a late answer (past ``deadline_ms``
plus a grace second) or the program ending is a :class:`BotError`. Its
stderr passes through. One process plays one game: it is started at the
first message and its stdin is closed after ``game_over``.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import Any

import msgspec

from mandala import Move, View
from protocol.messages import Decision, GameOver, PlayMove

GRACE_S = 1.0
"""Extra seconds an external program gets beyond ``deadline_ms`` (start-up, pipes)."""

_encoder = msgspec.json.Encoder()
_move_decoder = msgspec.json.Decoder(PlayMove)


class BotError(Exception):
    """A bot broke the rules or the protocol; it forfeits the game. ``timeout`` if it was late."""

    def __init__(self, message: str, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


class ExternalBot:
    """Runs ``argv`` and plays through its stdin/stdout (see the module docstring)."""

    def __init__(self, argv: Sequence[str], budget: float | None = None, cwd: str | None = None) -> None:
        self.argv = list(argv)
        self.cwd = cwd
        self.decision_ms = int(budget * 1000) if budget else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._requests = 0
        self._dead: str | None = None

    # ------------------------------------------------------------------ process

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            try:
                # A session of its own: stopping it stops what it started too (a wrapper
                # script's bot), which would otherwise run on after the match.
                self._proc = subprocess.Popen(
                    self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, cwd=self.cwd,
                    start_new_session=True,
                )
            except OSError as e:
                raise BotError(f"cannot start {self.argv[0]!r}: {e}") from None
        return self._proc

    def _send(self, message: Any) -> None:
        """Write one message; a program that stopped listening is found out at its next decision."""
        if self._dead is not None:
            return
        proc = self._start()
        try:
            proc.stdin.write(_encoder.encode(message) + b"\n")  # type: ignore[union-attr]
        except (BrokenPipeError, OSError) as e:
            self._dead = f"its stdin is closed ({e.__class__.__name__})"

    def _read_line(self, deadline: float) -> bytes:
        proc = self._start()
        fd = proc.stdout.fileno()  # type: ignore[union-attr]
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BotError(f"no move within the deadline from {self.argv[0]!r}", timeout=True)
            with selectors.DefaultSelector() as sel:
                sel.register(fd, selectors.EVENT_READ)
                if not sel.select(left):
                    continue
            chunk = os.read(fd, 65536)
            if not chunk:
                code = proc.poll()
                raise BotError(f"{self.argv[0]!r} closed its stdout (exit code {code})")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def close(self) -> None:
        """Close the program's stdin and give it a moment to end; then stop it.

        A program that already failed is stopped at once.
        """
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            proc.wait(timeout=0 if self._dead is not None else 2)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the program and whatever it started, ended or not
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]

    # ------------------------------------------------------------------ bot interface

    def notify(self, message: Any) -> None:
        """Pass a ``game_start``, ``update`` or ``game_over`` on; after ``game_over`` the program
        is done."""
        self._send(message)
        if isinstance(message, GameOver):
            self.close()

    def decide(self, decision: Decision) -> Move:
        """Send the decision and wait for the program's ``move`` for it."""
        try:
            return self._decide(decision)
        except BotError as e:
            self._dead = str(e)  # it lost the game: no need to wait for it at close
            raise

    def _decide(self, decision: Decision) -> Move:
        self._send(decision)
        if self._dead is not None:
            raise BotError(f"{self.argv[0]!r} stopped reading: {self._dead}")
        deadline = time.monotonic() + decision.deadline_ms / 1000 + GRACE_S
        while True:
            line = self._read_line(deadline).strip()
            if not line:
                continue
            try:
                obj = msgspec.json.decode(line)
            except msgspec.DecodeError:
                raise BotError(f"{self.argv[0]!r} wrote a line that is not JSON: {line[:200]!r}") from None
            if not isinstance(obj, dict) or obj.get("type") != "move":
                continue
            try:
                reply = _move_decoder.decode(line)
            except msgspec.ValidationError as e:
                raise BotError(f"malformed move message from {self.argv[0]!r}: {e}") from None
            if reply.request_id == decision.request_id and reply.game_id == decision.game_id:
                return reply.move

    def choose(self, view: View, legal: list[Move]) -> Move:
        """Use the program outside a match driver: each call is one more request."""
        assert view.seat is not None, "a bot plays a seat"
        self._requests += 1
        decision_ms = self.decision_ms or 5000
        return self.decide(Decision("offline", self._requests, view.seat, view, legal, decision_ms))
