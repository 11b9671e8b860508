"""The server's messages read as PROTOCOL.md §16 asks of a client of its version: a value
added to one of the protocol's lists of names (an error code, a ``challenge_declined``
reason, an end reason, a game kind, a ladder state) is read, not refused.

The message types name every value they know, so that the JSON Schema lists them and a
frame from this server is checked whole. A newer server of the same protocol version may add
a value, which those types refuse. :func:`relaxed` makes, for a message type, a subclass
whose every field of named strings takes any string, so that such a frame is still read:
``isinstance`` sees the message type it extends, and the value is the server's own.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec

_relaxed: dict[type, type] = {}
"""Each struct type made tolerant, by the type it extends (itself when nothing changes)."""
_made: set[type] = set()
"""The tolerant subclasses made."""


def relaxed(tp: Any) -> Any:
    """``tp`` with every ``Literal`` of strings in it (in structs, unions, lists, …) read as
    ``str``; ``tp`` itself when it has none."""
    origin = get_origin(tp)
    if origin is Literal:
        return str if all(isinstance(v, str) for v in get_args(tp)) else tp
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return _relaxed_struct(tp)
    args = get_args(tp)
    if not args:
        return tp
    if origin is Annotated:
        base = relaxed(args[0])
        return tp if base is args[0] else Annotated.__class_getitem__((base, *tp.__metadata__))  # type: ignore[attr-defined]
    new = tuple(relaxed(a) for a in args)
    if all(a is b for a, b in zip(new, args, strict=True)):
        return tp
    if origin in (Union, types.UnionType):
        return Union[new]  # noqa: UP007 - built from a tuple of types
    return origin[new if len(new) > 1 else new[0]]


def strict_type(msg: Any) -> type:
    """The message type a (possibly relaxed) message is of."""
    tp = type(msg)
    return tp.__mro__[1] if tp in _made else tp



def _relaxed_struct(cls: type[msgspec.Struct]) -> type:
    done = _relaxed.get(cls)
    if done is not None:
        return done
    _relaxed[cls] = cls  # a struct that holds itself is made once
    hints = typing.get_type_hints(cls, include_extras=True)
    changed: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for f in msgspec.structs.fields(cls):
        tp = relaxed(hints[f.name])
        if tp is hints[f.name]:
            continue
        if f.default is not msgspec.NODEFAULT:
            changed.append((f.name, tp, f.default))
        elif f.default_factory is not msgspec.NODEFAULT:
            changed.append((f.name, tp, msgspec.field(default_factory=f.default_factory)))
        else:
            changed.append((f.name, tp))
    if not changed:
        return cls
    config = cls.__struct_config__
    made = msgspec.defstruct(cls.__name__, changed, bases=(cls,), module=cls.__module__,
                             tag=config.tag, tag_field=config.tag_field)
    _relaxed[cls] = made
    _made.add(made)
    return made
