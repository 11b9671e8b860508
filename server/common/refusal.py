"""A refused client request, raised anywhere below the WebSocket handler and turned into
one ``error`` frame there, so game and challenge code never talks to sockets about errors."""

from __future__ import annotations

from protocol.messages import Error, ErrorCode


class Refusal(Exception):
    """Something a client sent was refused; nothing changed."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        game_id: str | None = None,
        request_id: int | None = None,
        rule: str | None = None,
        limit: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code: ErrorCode = code
        self.message = message
        self.game_id = game_id
        self.request_id = request_id
        self.rule = rule
        self.limit = limit
        self.retry_after = retry_after

    def to_error(self) -> Error:
        return Error(self.code, self.message, game_id=self.game_id, request_id=self.request_id, rule=self.rule,
                     limit=self.limit, retry_after=self.retry_after)
