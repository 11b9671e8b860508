"""The organizer's controls of the ladder as ladder operations: pause, resume, reset the
ratings, remove a bot, restore it.

They run where the ladder leads. The HTTP handler calls :func:`carry_out` on that node; a
cluster node that receives a control forwards it to the leader, which calls the same
function and sends back its answer. A control that cannot be carried out raises
:class:`ControlRefused`, whose status and code are what the organizer gets over HTTP."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Literal

from ..common.logs import about
from ..storage import BotRow
from .service import Ladder

log = logging.getLogger(__name__)

LadderOp = Literal["pause", "resume", "reset", "remove", "restore"]
Answer = dict[str, object]


class ControlRefused(Exception):
    """A control that changes nothing, with the HTTP status and error code that say why."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


async def ladder_bot(ladder: Ladder, name: str) -> BotRow:
    """The registered bot ``name`` (names ignore case), which must not be the house bot."""
    row = await ladder.storage.bot_by_name(name)
    if row is None:
        raise ControlRefused(404, "unknown_bot", f"no bot named {name!r}")
    if row.name == ladder.house.name:
        raise ControlRefused(400, "house_bot", f"{row.name} is the house bot: it is never on the ladder (it plays "
                                               "the qualification games, and the tournaments it is entered in)")
    return row


async def _pause(ladder: Ladder, bot: str | None) -> Answer:
    await ladder.set_paused(True)
    log.info("ladder paused")
    return {"paused": True}


async def _resume(ladder: Ladder, bot: str | None) -> Answer:
    await ladder.set_paused(False)
    ladder.wake()
    log.info("ladder resumed")
    return {"paused": False}


async def _reset(ladder: Ladder, bot: str | None) -> Answer:
    """Every bot back to the start rating; the games played so far count no more."""
    await ladder.reset_ratings()
    await ladder.refresh_standings()  # the next GET /api/ladder shows the reset
    log.info("ladder ratings reset")
    return {"reset": True, "rating": ladder.settings.elo_initial}


async def _remove(ladder: Ladder, bot: str | None) -> Answer:
    """Off the ladder: no more seeking or new ladder games; running games finish as usual."""
    row = await ladder_bot(ladder, bot or "")
    if ladder.place(row.name) == "removed":
        raise ControlRefused(409, "already_removed", f"{row.name} is removed already")
    await ladder.remove(row.name)
    await ladder.refresh_standings()
    log.info("bot %s removed from the ladder", row.name, extra=about(bot=row.name))
    return {"bot": row.name, "state": "removed"}


async def _restore(ladder: Ladder, bot: str | None) -> Answer:
    row = await ladder_bot(ladder, bot or "")
    if ladder.place(row.name) != "removed":
        raise ControlRefused(409, "not_removed", f"{row.name} is not removed (it is {ladder.state(row.name)})")
    await ladder.restore(row.name)
    await ladder.refresh_standings()
    log.info("bot %s restored to the ladder (qualifies again)", row.name, extra=about(bot=row.name))
    return {"bot": row.name, "state": ladder.state(row.name)}


CONTROLS: dict[LadderOp, Callable[[Ladder, str | None], Awaitable[Answer]]] = {
    "pause": _pause, "resume": _resume, "reset": _reset, "remove": _remove, "restore": _restore,
}


async def carry_out(ladder: Ladder, op: LadderOp, bot: str | None) -> Answer:
    """Carry out an organizer's control on the leading ladder; raises :class:`ControlRefused`."""
    return await CONTROLS[op](ladder, bot)


async def answer_of(ladder: Ladder, op: LadderOp, bot: str | None) -> tuple[int, Answer]:
    """:func:`carry_out` as an HTTP status and body (for a control forwarded by another node)."""
    try:
        return 200, await carry_out(ladder, op, bot)
    except ControlRefused as e:
        return e.status, {"error": e.code, "message": e.message}
