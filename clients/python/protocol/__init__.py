"""The contract between Mandala Arena and its bots: the message types (msgspec structs). The
JSON Schema generated from them and PROTOCOL.md, which explains them, are the checkout's
``protocol/schema/`` and ``protocol/PROTOCOL.md``: the contract for bots in every language."""

from .messages import PROTOCOL_VERSION

__all__ = ["PROTOCOL_VERSION"]
