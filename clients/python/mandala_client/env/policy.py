"""A policy trained in the environment, playing on the arena unchanged.

A *policy* is what a trainer produces: given the observation dict the environment gives an
agent (``{"observation": ..., "action_mask": ...}``), it returns an action index. It may be a
function, or an object with ``act(observation)`` or ``__call__(observation)``.
:class:`PolicyBot` turns one into a bot: at each ``decision`` it builds that dict from the
frame's view and legal moves with the environment's own functions (:func:`.encoding.encode`,
:func:`.encoding.action_mask`) and plays the move of the action the policy returns.

On the command line (``mandala-bot``, ``mandala match``) a policy is the bot spec
``policy:module:attr`` with optional ``,key=value`` options: a class named there is built with
the options (and ``seed`` if it takes one), a function given options is a factory called with
them, and anything else is the policy itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from mandala import Move, View

from .core import IllegalAction
from .encoding import action_mask, describe, encode, move_of

Observation = dict[str, npt.NDArray[Any]]


def observation(view: View, legal: list[Move]) -> Observation:
    """The environment's observation of a decision: the view the server sent and its legal
    moves, encoded as the environment encodes them."""
    return {"observation": encode(view), "action_mask": action_mask(legal)}


def make_policy(target: Any, options: Mapping[str, Any], seed: int | None = None) -> Any:
    """The policy ``target`` names, built with ``options`` as the module docstring says."""
    if inspect.isclass(target):
        kwargs = dict(options)
        try:
            params = inspect.signature(target).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        if seed is not None and (takes_any or "seed" in params):
            kwargs.setdefault("seed", seed)
        return target(**kwargs)
    if options:
        if not callable(target):
            raise TypeError(f"{target!r} takes no options: it is neither a class nor a factory")
        return target(**options)
    return target


class PolicyBot:
    """A bot (``choose(view, legal)``) that plays ``policy``'s action for each decision.

    An action outside the mask raises :class:`~.core.IllegalAction` naming it (the client then
    sends a fallback move and logs why), so a policy that ignores the mask shows at once.
    """

    def __init__(self, policy: Any, seed: int | None = None, budget: float | None = None) -> None:
        act = getattr(policy, "act", None)
        if act is None:
            if not callable(policy):
                raise TypeError(f"a policy is a function or has act(observation), not {policy!r}")
            act = policy
        self.policy = policy
        self._act: Callable[[Observation], Any] = act

    def choose(self, view: View, legal: list[Move]) -> Move:
        obs = observation(view, legal)
        action = self._act(obs)
        if isinstance(action, np.ndarray) and action.shape in ((), (1,)):
            action = action.reshape(()).item()
        try:
            move = move_of(action)
        except ValueError as e:
            raise IllegalAction(f"the policy returned {action!r}: {e}") from None
        if not obs["action_mask"][int(action)]:
            raise IllegalAction(f"the policy returned action {describe(int(action))}, which is not legal here")
        for candidate in legal:
            if candidate == move:
                return candidate
        raise AssertionError("a masked action is one of the legal moves")  # pragma: no cover
