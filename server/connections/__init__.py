"""A peer's WebSocket session below the HTTP layer: the connection and its outbox, the audience's
paced writes, rate limits, tokens, client addresses, and who is connected."""
