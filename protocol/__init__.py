"""The contract between Mandala Arena and its bots: message types (msgspec structs),
the JSON Schema generated from them (``protocol/schema/``) and PROTOCOL.md."""

from .messages import PROTOCOL_VERSION

__all__ = ["PROTOCOL_VERSION"]
