"""What the PettingZoo, Gymnasium and batch environments share: dealing a game from a seed or
from the caller's deal, checking an action before it becomes a move, the rewards and the
``info`` at the end. Nothing here imports PettingZoo or Gymnasium."""

from __future__ import annotations

import random
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import msgspec
import numpy as np

from mandala import Game, IllegalMove, view
from mandala.game import winner_of
from mandala.moves import MOVES

from .encoding import ACTION_COUNT, describe

AGENTS: Final = ("player_0", "player_1")
"""The agents, by seat: ``player_0`` plays seat 0 and ``player_1`` seat 1."""
SEAT_OF: Final = {agent: seat for seat, agent in enumerate(AGENTS)}

RewardMode = Literal["win", "score"]
IllegalMode = Literal["raise", "forfeit"]
REWARDS: Final = ("win", "score")
ILLEGAL: Final = ("raise", "forfeit")
OPTIONS: Final = frozenset({"deck", "first_player", "reshuffles", "game"})
"""What ``reset(options=...)`` may set (see :func:`new_game`)."""


class IllegalAction(ValueError):
    """An action that is not legal for the agent to move now (outside its ``action_mask``),
    or not an action at all. Raised before anything changes; the message names the move and
    the rule (R1–R24) it breaks."""


SCORE_FORFEIT: Final = 108.0
"""The default ``illegal_penalty`` under ``reward="score"``: a point for each card of the game
(R1), more than any game's margin (the largest in 3,000 random and 300 greedy games was 71),
so that losing by a forfeit never pays more than losing by the rules."""
RENDER_MODES: Final = ("ansi", "human")
"""``render()``: ``"ansi"`` returns the spectator's view as JSON, ``"human"`` prints it."""


def check_modes(reward: str, illegal: str, illegal_penalty: float | None) -> float:
    """Refuse an unknown reward or illegal-action mode with a message naming the choices; the
    penalty of a forfeit (``illegal_penalty``, or by default 1 a game under ``"win"`` and
    :data:`SCORE_FORFEIT` under ``"score"``)."""
    if reward not in REWARDS:
        raise ValueError(f"reward is one of {', '.join(REWARDS)}, not {reward!r}")
    if illegal not in ILLEGAL:
        raise ValueError(f"illegal is one of {', '.join(ILLEGAL)}, not {illegal!r}")
    if illegal_penalty is None:
        return SCORE_FORFEIT if reward == "score" else 1.0
    if isinstance(illegal_penalty, bool) or not isinstance(illegal_penalty, int | float) \
            or not np.isfinite(illegal_penalty):
        raise ValueError(f"illegal_penalty is a finite number, not {illegal_penalty!r}")
    return float(illegal_penalty)


def check_render_mode(render_mode: str | None) -> None:
    """Refuse a render mode the environments do not have."""
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ValueError(f"render_mode is None, 'ansi' or 'human', not {render_mode!r}")


def rendered(game: Game, render_mode: str) -> str | None:
    """What ``render()`` gives: the spectator's view (R24) as JSON, returned (``"ansi"``) or
    printed (``"human"``)."""
    text = msgspec.json.encode(view(game)).decode()
    if render_mode == "human":
        print(text)
        return None
    return text


def new_game(rng: random.Random, options: Mapping[str, Any] | None) -> Game:
    """The game a reset starts: dealt from ``rng`` (a random deal and first player), or as
    ``options`` say. ``options`` may give ``deck`` (108 colors, top first, R3),
    ``first_player`` (0 or 1, R4) and ``reshuffles`` (the orders of later draw decks, R16,
    as in a record, R23), or ``game``, a :class:`mandala.Game` to continue from (copied).
    Other keys are ignored with a warning. Raises ``ValueError`` (a malformed option) or :class:`mandala.MandalaError` (a deal the
    rules refuse) before anything changes."""
    seed = rng.getrandbits(63)
    first = rng.randrange(2)
    if not options:
        return Game.new(seed=seed, first_player=first)
    unknown = sorted(set(options) - OPTIONS)
    if unknown:  # PettingZoo's and Gymnasium's checkers pass options of their own: a warning, not an error
        warnings.warn(f"reset ignores the option(s) {', '.join(map(repr, unknown))}: it takes {', '.join(sorted(OPTIONS))}",
                      stacklevel=3)
        options = {k: v for k, v in options.items() if k in OPTIONS}
        if not options:
            return Game.new(seed=seed, first_player=first)
    if "game" in options:
        if len(options) > 1:
            raise ValueError("reset option 'game' goes alone: the game already has its deal")
        game = options["game"]
        if not isinstance(game, Game):
            raise ValueError(f"reset option 'game' is a mandala.Game, not {type(game).__name__}")
        return game.copy()
    if "deck" not in options:
        return Game.new(seed=seed, first_player=options.get("first_player", first))
    reshuffles = options.get("reshuffles")
    # Lenient: an action that leaves the record needs reshuffles the record does not have;
    # they come from the seed, as the ones after the record's last do.
    return Game(options["deck"], options.get("first_player", first), seed=seed, reshuffles=reshuffles, lenient=True)


def checked_code(game: Game, action: Any, agent: str) -> int:
    """``action`` as the code of a legal move of ``game`` now; :class:`IllegalAction`
    naming the move (and the rule it breaks) otherwise."""
    if type(action) is int and action in game.legal_codes():  # the usual case, first
        return action
    if isinstance(action, int | np.integer) and not isinstance(action, bool):
        code = int(action)
        if code in game.legal_codes():
            return code
        if 0 <= code < ACTION_COUNT:
            try:
                game.check(MOVES[code])
                why = "not legal now"  # pragma: no cover - check() raises for every code not listed
            except IllegalMove as e:
                why = str(e)
            raise IllegalAction(f"{agent} cannot play action {describe(code)}: {why}")
    elif isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer):
        return checked_code(game, int(action), agent)
    raise IllegalAction(f"{agent}: an action is an integer from 0 to {ACTION_COUNT - 1}, not {action!r}")


def final_rewards(game: Game, mode: RewardMode) -> tuple[float, float]:
    """Each seat's reward for a finished game (:func:`rewards_of`)."""
    return rewards_of(game.scores(), game.winner(), mode)


def rewards_of(scores: Sequence[int], winner: int | None, mode: RewardMode) -> tuple[float, float]:
    """Each seat's reward for a finished game with these scores and this winner: +1 a win, -1
    a loss, 0 a draw (``"win"``), or its score minus the other's (``"score"``, R21)."""
    if mode == "score":
        s0, s1 = scores
        return float(s0 - s1), float(s1 - s0)
    if winner is None:
        return 0.0, 0.0
    return (1.0, -1.0) if winner == 0 else (-1.0, 1.0)


def end_info(game: Game, forfeit: int | None = None, why: str | None = None) -> dict[str, Any]:
    """What ``info`` says once the game is over: ``end_reason`` (R17–R19, or ``"forfeit"``
    after an illegal action under ``illegal="forfeit"``), ``winner`` (an agent, or ``None``
    for a draw), ``scores`` and ``cup_sizes`` by seat (R21), ``turns`` played."""
    if forfeit is not None:
        return {"end_reason": "forfeit", "winner": AGENTS[1 - forfeit], "scores": list(game.scores()),
                "cup_sizes": list(game.cup_sizes()), "turns": game.turns, "illegal_action": why}
    return result_info(game.end_reason, list(game.scores()), list(game.cup_sizes()), game.turns)


def result_info(end_reason: str | None, scores: list[int], cup_sizes: list[int], turns: int) -> dict[str, Any]:
    """:func:`end_info` of a game that ended by the rules, from its end reason, scores and cup
    sizes by seat, and turns played."""
    winner = winner_of(scores, cup_sizes)
    return {"end_reason": end_reason, "winner": None if winner is None else AGENTS[winner],
            "scores": scores, "cup_sizes": cup_sizes, "turns": turns}
