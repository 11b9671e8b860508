"""The state of one game of Mandala and the rules that move it (R3–R21).

A :class:`Game` is created from a deck order (R3) and a first player (R4),
lists the legal moves of the decision at hand (``legal_moves``) and applies
one move at a time (``push``). Everything is updated in place: piles are six
counts (R1) plus bit masks of the colors they hold, so a move costs a few
dozen integer operations and no copy of the state.

>>> game = Game.new(seed=7)
>>> move = game.legal_moves[0]
>>> game.push(move)
>>> game.turns
1
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence

from .cards import ALL_COLORS_MASK, CARDS_PER_COLOR, COLOR_INDEX, COLORS, DECK_SIZE, expand, full_deck
from .errors import IllegalMove, RecordError
from .moves import (
    CLAIM,
    CLAIM_BASE,
    DISCARD,
    DISCARD_BASE,
    FIELD_BASE,
    MAX_DISCARD,
    MAX_FIELD,
    MOUNTAIN,
    MOVE_COUNT,
    MOVE_PARTS,
    MOVES,
    PASS,
    PASS_CODE,
    Claim,
    Discard,
    Field,
    Mountain,
    Move,
    Pass,
    code_of,
)
from .views import View

TURN_LIMIT = 1000
"""R19: when a turn is about to begin and this many have been played, the game ends."""

HAND_LIMIT = 8
"""R7: nobody ever holds more cards."""

# Phases of the decision at hand.
TURN = "turn"
PICK = "pick"
OVER = "over"

END_RULE = {"river": "R17", "deck": "R17", "no_moves": "R18", "turn_limit": "R19"}

# Legal-move building blocks, precomputed so listing moves is mostly tuple concatenation.
_FIELD_RUNS = tuple(
    tuple(tuple(range(FIELD_BASE + (m * 6 + c) * MAX_FIELD, FIELD_BASE + (m * 6 + c) * MAX_FIELD + k)) for k in range(MAX_FIELD + 1))
    for m in range(2)
    for c in range(6)
)
_DISCARD_RUNS = tuple(
    tuple(tuple(range(DISCARD_BASE + c * MAX_DISCARD, DISCARD_BASE + c * MAX_DISCARD + k)) for k in range(MAX_DISCARD + 1))
    for c in range(6)
)
_BITS = tuple(1 << c for c in range(6))
_PLIES = tuple(tuple((p, code) for code in range(MOVE_COUNT)) for p in (0, 1))
"""Every ``(seat, code)`` history entry, made once: a game's history holds shared tuples."""
_PASS_ONLY = (PASS_CODE,)
_MOUNTAIN_RUNS = tuple(
    tuple(tuple(m * 6 + c for c in range(6) if allowed >> c & 1) for allowed in range(64)) for m in range(2)
)


class _HandMoves:
    """The turn moves one hand allows, by the set of colors R9 leaves open.

    Built once per distinct hand (at most 3003 of 1–8 cards) and shared by
    every game, so listing a turn's moves is a handful of tuple lookups.
    """

    __slots__ = ("mask", "discard", "fields")

    def __init__(self, counts: tuple[int, ...]) -> None:
        self.mask = sum(_BITS[c] for c in range(6) if counts[c])
        self.discard: tuple[int, ...] = sum((_DISCARD_RUNS[c][counts[c]] for c in range(6)), ())
        size = sum(counts)
        self.fields: list[list[tuple[int, ...]]] = []
        for m in range(2):
            by_open: list[tuple[int, ...]] = [()] * 64
            for allowed in range(1, 64):
                low = (allowed & -allowed).bit_length() - 1
                run = _FIELD_RUNS[m * 6 + low][min(counts[low], size - 1)]
                by_open[allowed] = by_open[allowed & (allowed - 1)] + run
            self.fields.append(by_open)


_HAND_MOVES: dict[tuple[int, ...], _HandMoves] = {}  # at most 3003 hands of 1–8 cards
_KINDS = {Mountain: "mountain", Field: "field", Discard: "discard", Claim: "claim", Pass: "pass"}


def build_move_tables() -> int:
    """Build the move table of every hand now (3,002 hands, about 0.1 s) rather than as each
    hand first turns up. A server does it at start: no decision then pays for a new table,
    and the tables are a fixed cost, not part of any game's memory. Returns how many it built."""
    built = 0
    for size in range(1, HAND_LIMIT + 1):
        for colors in itertools.combinations_with_replacement(range(6), size):
            key = tuple(colors.count(c) for c in range(6))
            if key not in _HAND_MOVES:
                _HAND_MOVES[key] = _HandMoves(key)
                built += 1
    return built


class SetupError(RecordError):
    """A deck order or first player that R3/R4 do not allow."""


def _color_index(color: int | str) -> int:
    if isinstance(color, str):
        if color not in COLOR_INDEX:
            raise SetupError("R1", f"unknown color {color!r}")
        return COLOR_INDEX[color]
    if type(color) is not int or not 0 <= color < 6:
        raise SetupError("R1", f"unknown color {color!r}")
    return color


def _check_deck(deck: Sequence[int | str]) -> list[int]:
    cards = [c if type(c) is int and 0 <= c < 6 else _color_index(c) for c in deck]
    if len(cards) != DECK_SIZE:
        raise SetupError("R3", f"a deck order has {DECK_SIZE} cards, not {len(cards)}")
    for c in range(6):
        n = cards.count(c)
        if n != CARDS_PER_COLOR:
            raise SetupError("R1", f"a deck holds {CARDS_PER_COLOR} {COLORS[c]} cards, not {n}")
    return cards


def shuffled(cards: list[int], rng: random.Random) -> list[int]:
    """``cards`` in a uniformly random order drawn from ``rng`` (sorted by random keys)."""
    rand = rng.random
    keys = [rand() for _ in cards]
    return [cards[i] for i in sorted(range(len(cards)), key=keys.__getitem__)]


class Game:
    """One game of Mandala, from the deal (R3) to the score (R21).

    Piles are lists of six counts in canonical color order. Seats and mandalas
    are 0 and 1. ``fields[m][p]`` is seat ``p``'s field of mandala ``m``.
    Read the attributes freely; change the game only through :meth:`push`.
    """

    __slots__ = (
        "deck_order", "first_player", "hands", "hand_sizes", "cups", "starting_cups",
        "rivers", "river_masks", "mountains", "mountain_masks", "mountain_sizes",
        "fields", "field_masks", "field_sizes", "discard", "discard_size", "deck",
        "reshuffles", "deck_exhausted", "river_filled", "turns", "phase", "to_move",
        "current", "destroying", "completed_by", "first_picker", "end_reason",
        "history", "_rng", "_rng_owned", "_given", "_lenient", "_rehearsing", "_legal", "_views",
    )

    def __init__(
        self,
        deck: Sequence[int | str],
        first_player: int = 0,
        *,
        seed: int | None = None,
        reshuffles: Iterable[Sequence[int | str]] | None = None,
        lenient: bool = False,
    ) -> None:
        """Deal a game from ``deck`` (108 colors, names or indices, top first: R3).

        New draw decks (R16) take their order from ``reshuffles`` in turn when
        given, then from a generator seeded with ``seed``. With ``reshuffles``
        and no ``seed`` (replaying a record), running out of orders is an error.
        An order that is not one of the discard pile raises :class:`RecordError`
        too, and the move that needed it changes nothing; with ``lenient`` (trying
        other moves on a recorded deal) the play has left the record there, so
        that order and the later ones are dropped and the generator deals on.
        """
        self._deal(_check_deck(deck), first_player)
        self._given_orders(reshuffles, seed, lenient)

    @classmethod
    def new(cls, seed: int | None = None, first_player: int = 0) -> Game:
        """A game on a deck shuffled from ``seed``; later reshuffles follow from it too."""
        rng = random.Random(seed)
        game = cls.__new__(cls)
        game._deal(shuffled(full_deck(), rng), first_player)
        game._given = None
        game._rng = rng
        return game

    @classmethod
    def from_position(
        cls,
        *,
        hands: Sequence[Sequence[int]],
        deck: Sequence[int | str],
        starting_cups: Sequence[Sequence[int]] = ((0,) * 6, (0,) * 6),
        cups: Sequence[Sequence[int]] | None = None,
        rivers: Sequence[Sequence[int | str]] = ((), ()),
        mountains: Sequence[Sequence[int]] = ((0,) * 6, (0,) * 6),
        fields: Sequence[Sequence[Sequence[int]]] = (((0,) * 6, (0,) * 6), ((0,) * 6, (0,) * 6)),
        discard: Sequence[int] = (0,) * 6,
        to_move: int = 0,
        first_player: int = 0,
        turns: int = 0,
        deck_exhausted: bool = False,
        seed: int | None = None,
        reshuffles: Iterable[Sequence[int | str]] | None = None,
        lenient: bool = False,
    ) -> Game:
        """A game at an arbitrary turn, every pile given explicitly (counts per color).

        For hand-made positions in tests and for search bots that sample the
        hidden cards of a view. ``cups`` are whole cups (``starting_cups``
        plus claimed cards; defaults to ``starting_cups``); ``deck`` is top
        first. All 108 cards must be somewhere (R1). The game has no record:
        it did not start from a deal.
        """
        g = cls.__new__(cls)
        g._deal(full_deck(), first_player)  # every attribute in place, then overwritten
        g.deck_order = []
        g.hands = [list(h) for h in hands]
        g.starting_cups = [list(c) for c in starting_cups]
        g.cups = [list(c) for c in (cups if cups is not None else starting_cups)]
        g.rivers = [[_color_index(c) for c in r] for r in rivers]
        g.mountains = [list(m) for m in mountains]
        g.fields = [[list(f[0]), list(f[1])] for f in fields]
        g.discard = list(discard)
        g.deck = [_color_index(c) for c in deck][::-1]
        g.turns = turns
        g.deck_exhausted = deck_exhausted
        g._given_orders(reshuffles, seed, lenient)
        g._derive()
        if to_move not in (0, 1):
            raise SetupError("R2", f"to_move is 0 or 1, not {to_move!r}")
        g.current = g.to_move = to_move
        counts = [g.discard[c] + sum(pile[c] for pile in (*g.hands, *g.cups, *g.mountains, *g.fields[0], *g.fields[1]))
                  for c in range(6)]
        for river in g.rivers:
            for c in river:
                counts[c] += 1
        for c in g.deck:
            counts[c] += 1
        if counts != [CARDS_PER_COLOR] * 6:
            raise SetupError("R1", f"a position holds {CARDS_PER_COLOR} cards of each color, not {counts}")
        if any(n > HAND_LIMIT for n in g.hand_sizes):
            raise SetupError("R7", "no hand holds more than 8 cards")
        return g

    def _derive(self) -> None:
        """Recompute the sizes and color masks that mirror the piles."""
        self.hand_sizes = [sum(h) for h in self.hands]
        self.river_masks = [_mask_of_colors(r) for r in self.rivers]
        self.mountain_masks = [_mask(m) for m in self.mountains]
        self.mountain_sizes = [sum(m) for m in self.mountains]
        self.field_masks = [[_mask(f[0]), _mask(f[1])] for f in self.fields]
        self.field_sizes = [[sum(f[0]), sum(f[1])] for f in self.fields]
        self.discard_size = sum(self.discard)
        self.river_filled = any(len(r) == 6 for r in self.rivers)

    def _given_orders(self, reshuffles: Iterable[Sequence[int | str]] | None, seed: int | None,
                      lenient: bool) -> None:
        """Where new draw decks take their order from (see :meth:`__init__`)."""
        self._given = [list(order) for order in reshuffles] if reshuffles is not None else None
        self._lenient = lenient
        strict = self._given is not None and seed is None and not lenient
        self._rng = None if strict else random.Random(seed)

    def _deal(self, cards: list[int], first_player: int) -> None:
        """R3: deal a checked deck order and set every pile up."""
        self._lenient = self._rehearsing = False
        self._rng_owned = True
        if first_player not in (0, 1) or type(first_player) is not int:
            raise SetupError("R4", f"first_player is 0 or 1, not {first_player!r}")
        self.deck_order: list[int] = cards
        self.first_player = first_player
        self.hands = [[0] * 6, [0] * 6]
        self.starting_cups = [[0] * 6, [0] * 6]
        self.mountains = [[0] * 6, [0] * 6]
        pos = 0
        for target, n in (
            (self.mountains[0], 2), (self.mountains[1], 2),
            (self.hands[0], 6), (self.hands[1], 6),
            (self.starting_cups[0], 2), (self.starting_cups[1], 2),
        ):
            for c in cards[pos:pos + n]:
                target[c] += 1
            pos += n
        self.hand_sizes = [6, 6]
        self.cups = [self.starting_cups[0][:], self.starting_cups[1][:]]
        self.rivers: list[list[int]] = [[], []]
        self.river_masks = [0, 0]
        self.mountain_masks = [_mask(self.mountains[0]), _mask(self.mountains[1])]
        self.mountain_sizes = [2, 2]
        self.fields = [[[0] * 6, [0] * 6], [[0] * 6, [0] * 6]]
        self.field_masks = [[0, 0], [0, 0]]
        self.field_sizes = [[0, 0], [0, 0]]
        self.discard: list[int] = [0] * 6
        self.discard_size = 0
        self.deck: list[int] = cards[pos:][::-1]  # top of the deck is the end of the list
        self.reshuffles: list[list[int]] = []
        self.deck_exhausted = False
        self.river_filled = False
        self.turns = 0
        self.phase = TURN
        self.to_move: int | None = first_player
        self.current = first_player
        self.destroying: int | None = None
        self.completed_by: int | None = None
        self.first_picker: int | None = None
        self.end_reason: str | None = None
        self.history: list[tuple[int, int]] = []
        self._legal: Sequence[int] | None = None
        self._views: list[View | None] | None = None
        """What :func:`mandala.view` built at this position (seat 0, seat 1, spectator)."""

    def forget_views(self) -> None:
        """Drop the views kept for this position (:func:`mandala.view` builds them again if
        asked): a server that has encoded them keeps the bytes, not the structs."""
        self._views = None

    def _forget_derived(self) -> None:
        """Drop what is cached about the position (legal moves, views) after changing it
        other than by :meth:`push`."""
        self._legal = None
        self._views = None

    # ------------------------------------------------------------------ queries

    @property
    def is_over(self) -> bool:
        return self.phase is OVER

    @property
    def legal_moves(self) -> list[Move]:
        """The legal moves of the decision at hand (R22), each listed once; empty when over."""
        return [MOVES[code] for code in self.legal_codes()]

    def legal_codes(self) -> Sequence[int]:
        """Codes of the legal moves (see :mod:`mandala.moves`); cached until the next push."""
        legal = self._legal
        if legal is None:
            legal = self._legal = self._generate()
        return legal

    def _generate(self) -> Sequence[int]:
        phase = self.phase
        if phase is PICK:
            mountain = self.mountains[self.destroying]  # type: ignore[index]
            return [CLAIM_BASE + c for c in range(6) if mountain[c]]
        if phase is OVER:
            return ()
        p = self.current
        if not self.hand_sizes[p]:
            return _PASS_ONLY
        key = tuple(self.hands[p])
        moves = _HAND_MOVES.get(key)
        if moves is None:
            moves = _HAND_MOVES[key] = _HandMoves(key)
        held = moves.mask
        fm = self.field_masks
        mm = self.mountain_masks
        o = 1 - p
        return (
            _MOUNTAIN_RUNS[0][held & ~(fm[0][0] | fm[0][1])]
            + _MOUNTAIN_RUNS[1][held & ~(fm[1][0] | fm[1][1])]
            + moves.fields[0][held & ~(mm[0] | fm[0][o])]
            + moves.fields[1][held & ~(mm[1] | fm[1][o])]
            + moves.discard
        )

    def is_legal(self, move: Move) -> bool:
        """Whether ``move`` may be pushed now."""
        try:
            self._check(move)
        except IllegalMove:
            return False
        return True

    # ------------------------------------------------------------------ moves

    def check(self, move: Move) -> int:
        """The code of ``move`` if it may be pushed now (for :meth:`push_code`), the game
        untouched; else raise :class:`IllegalMove` naming the rule it breaks.

        For a caller that must decide on a move before applying it (a server that
        stores each move before it takes effect).
        """
        legal = self._legal
        if legal is not None and type(move) in _KINDS:  # a listed legal move needs no checking
            code = code_of(move)
            if code is not None and code in legal:
                return code
        return self._check(move)

    def push(self, move: Move) -> None:
        """Apply ``move`` for the player whose decision it is.

        Raises :class:`IllegalMove`, naming the rule, and leaves the game
        untouched when the move is not legal now.
        """
        self.push_code(self.check(move))

    def _check(self, move: Move) -> int:
        """The code of ``move`` if it is legal now; else raise the rule it breaks."""
        phase = self.phase
        if phase is OVER:
            raise IllegalMove(END_RULE[self.end_reason], f"the game is over ({self.end_reason})")  # type: ignore[index]
        kind = _KINDS.get(type(move))
        if kind is None:
            raise IllegalMove("R22", f"not a move: {move!r}")
        code = code_of(move)
        if phase is PICK:
            if kind != "claim":
                raise IllegalMove("R12", f"a destruction of mandala {self.destroying} is in progress: seat {self.to_move} must claim a color")
            if code is None:
                raise IllegalMove("R1", f"unknown color {getattr(move, 'color', None)!r}")
            if not self.mountains[self.destroying][code - CLAIM_BASE]:  # type: ignore[index]
                raise IllegalMove("R12", f"the mountain of mandala {self.destroying} holds no {move.color} card")  # type: ignore[union-attr]
            return code
        p = self.current
        hand = self.hands[p]
        size = self.hand_sizes[p]
        if kind == "claim":
            raise IllegalMove("R5", "no destruction is in progress: take action A, B or C")
        if kind == "pass":
            if size:
                raise IllegalMove("R18", "only a player with an empty hand passes")
            return PASS_CODE
        if not size:
            raise IllegalMove("R18", "your hand is empty: you must pass")
        color = getattr(move, "color", None)
        if color not in COLOR_INDEX:
            raise IllegalMove("R1", f"unknown color {color!r}")
        c = COLOR_INDEX[color]
        bit = _BITS[c]
        if kind in ("mountain", "field"):
            m = getattr(move, "mandala", None)
            if m not in (0, 1) or type(m) is not int:
                raise IllegalMove("R2", f"mandala is 0 or 1, not {m!r}")
        else:
            m = -1  # a discard names no mandala
        if kind == "mountain":
            if not hand[c]:
                raise IllegalMove("R6", f"you hold no {color} card")
            if (self.field_masks[m][0] | self.field_masks[m][1]) & bit:
                raise IllegalMove("R9", f"a field of mandala {m} holds {color}: it cannot go to that mountain")
            return code  # type: ignore[return-value]
        count = getattr(move, "count", None)
        if type(count) is not int or count < 1:
            raise IllegalMove("R22", f"count is a positive integer, not {count!r}")
        if kind == "field":
            if count > hand[c]:
                raise IllegalMove("R8", f"you hold {hand[c]} {color} card(s), not {count}")
            if count >= size:
                raise IllegalMove("R8", "at least 1 card must stay in your hand")
            if self.mountain_masks[m] & bit:
                raise IllegalMove("R9", f"the mountain of mandala {m} holds {color}: it cannot go to your field")
            if self.field_masks[m][1 - p] & bit:
                raise IllegalMove("R9", f"your opponent's field of mandala {m} holds {color}: it cannot go to yours")
            return code  # type: ignore[return-value]
        if kind == "discard":
            if count > hand[c]:
                raise IllegalMove("R8a", f"you hold {hand[c]} {color} card(s), not {count}")
            return code  # type: ignore[return-value]
        raise IllegalMove("R22", f"unknown move type {kind!r}")

    def push_code(self, code: int) -> None:
        """Apply the move with this code, which must be one of :meth:`legal_codes`.

        This is the unchecked fast path for players that pick from the legal
        list; anything else goes through :meth:`push`. Like :meth:`push`, it
        changes nothing when it raises (a given reshuffle order that does not fit).
        """
        if self._given is not None and len(self.deck) <= HAND_LIMIT and not self._rehearsing:
            self._rehearse(code)  # a reshuffle may come: one from a record may not fit
        self._legal = None  # inlined _forget_derived(): this is the search bots' hot path
        self._views = None
        kind, m, c, k = MOVE_PARTS[code]
        if kind == CLAIM:
            self.history.append(_PLIES[self.to_move][code])  # type: ignore[index]
            self._claim(c)
            return
        p = self.current
        self.history.append(_PLIES[p][code])
        self.turns += 1
        if kind == PASS:
            self._begin_turn(1 - p)
            return
        hand = self.hands[p]
        hand[c] -= k
        size = self.hand_sizes[p] = self.hand_sizes[p] - k
        if kind == DISCARD:
            self.discard[c] += k
            self.discard_size += k
            self._draw(p, k)
            self._begin_turn(1 - p)
            return
        bit = _BITS[c]
        if kind == MOUNTAIN:
            self.mountains[m][c] += 1
            self.mountain_masks[m] |= bit
            self.mountain_sizes[m] += 1
            self._draw(p, 3 if size < 6 else HAND_LIMIT - size)
        else:  # FIELD
            self.fields[m][p][c] += k
            self.field_masks[m][p] |= bit
            self.field_sizes[m][p] += k
        fm = self.field_masks[m]
        if self.mountain_masks[m] | fm[0] | fm[1] == ALL_COLORS_MASK:
            self._begin_destruction(m, p)
        else:
            self._begin_turn(1 - p)

    # ------------------------------------------------------------------ deck (R16)

    def _take(self) -> int:
        """Take the top card of the draw deck, reshuffling as R16 says; -1 if none is left."""
        deck = self.deck
        if not deck:
            if not self.discard_size:
                return -1
            self._reshuffle()
        card = deck.pop()
        if not deck:
            self.deck_exhausted = True
            if self.discard_size:
                self._reshuffle()
        return card

    def _draw(self, p: int, n: int) -> None:
        hand = self.hands[p]
        deck = self.deck
        if len(deck) > n:  # the common case: no exhaustion on the way
            for _ in range(n):
                hand[deck.pop()] += 1
            self.hand_sizes[p] += n
            return
        for _ in range(n):
            card = self._take()
            if card < 0:
                break
            hand[card] += 1
            self.hand_sizes[p] += 1

    def _rehearse(self, code: int) -> None:
        """Play ``code`` on a copy first, which raises if a reshuffle it needs has no order
        or one that does not fit, so that this game is left as it was."""
        probe = self.copy()
        probe._rehearsing = True
        probe.push_code(code)

    def _reshuffle(self) -> None:
        """Turn the whole discard pile into a new draw deck (R16) and record its order."""
        discard = self.discard
        cards = self._given_order() if self._given else None
        if cards is None:
            if self._rng is None:
                raise RecordError("R23", f"the record has no order for reshuffle {len(self.reshuffles)}")
            cards = shuffled(expand(discard), self._own_rng())
        self.reshuffles.append(cards)
        self.deck[:] = cards[::-1]
        self.discard = [0] * 6
        self.discard_size = 0

    def _own_rng(self) -> random.Random:
        """The generator of new decks, this game's alone: a copy of the one it shares with its
        copies (:meth:`copy`) or their original, taken the first time it draws. Until then
        none of them has drawn from the shared one, so each deals the reshuffles it would
        have dealt with a copy of its own, and a copy costs no generator."""
        rng = self._rng
        assert rng is not None
        if not self._rng_owned:
            own = random.Random()
            own.setstate(rng.getstate())
            self._rng, self._rng_owned = own, True
            return own
        return rng

    def _given_order(self) -> list[int] | None:
        """The next given order, checked against the discard pile; ``None`` once a lenient
        game has left its record (every later order is dropped)."""
        given = self._given
        assert given
        order = given.pop(0)
        if not given and self._rng is not None:
            self._given = None  # the generator deals on: nothing is left to rehearse
        try:
            cards = [_color_index(c) for c in order]
        except SetupError as e:
            problem = f"reshuffle {len(self.reshuffles)}: {e.message}"
        else:
            if _counts(cards) == self.discard:
                return cards
            problem = f"reshuffle {len(self.reshuffles)} must be an order of the discard pile {_describe(self.discard)}"
        if self._lenient:
            self._given = None
            return None
        raise RecordError("R16", problem)

    # ------------------------------------------------------------------ destruction (R10–R15)

    def _begin_destruction(self, m: int, completer: int) -> None:
        f0, f1 = self.field_sizes[m]
        first = 0 if f0 > f1 else 1 if f1 > f0 else 1 - completer
        self.phase = PICK
        self.destroying = m
        self.completed_by = completer
        self.first_picker = first
        self.to_move = first

    def _claim(self, c: int) -> None:
        m: int = self.destroying  # type: ignore[assignment]
        q: int = self.to_move  # type: ignore[assignment]
        mountain = self.mountains[m]
        n = mountain[c]
        mountain[c] = 0
        bit = _BITS[c]
        self.mountain_masks[m] &= ~bit
        self.mountain_sizes[m] -= n
        if not self.field_sizes[m][q]:
            self.discard[c] += n  # R13a
            self.discard_size += n
        elif not self.river_masks[q] & bit:
            river = self.rivers[q]  # R13b
            river.append(c)
            self.river_masks[q] |= bit
            self.cups[q][c] += n - 1
            if len(river) == 6:
                self.river_filled = True
        else:
            self.cups[q][c] += n  # R13c
        if self.mountain_sizes[m]:
            self.to_move = 1 - q
        else:
            self._finish_destruction(m)

    def _finish_destruction(self, m: int) -> None:
        discard = self.discard
        for p in (0, 1):  # R14
            if self.field_sizes[m][p]:
                field = self.fields[m][p]
                for c in range(6):
                    discard[c] += field[c]
                self.discard_size += self.field_sizes[m][p]
                self.fields[m][p] = [0] * 6
                self.field_masks[m][p] = 0
                self.field_sizes[m][p] = 0
        completer: int = self.completed_by  # type: ignore[assignment]
        self.destroying = self.completed_by = self.first_picker = None
        if self.deck_exhausted or self.river_filled:  # R17
            self._end("deck" if self.deck_exhausted else "river")
            return
        mountain = self.mountains[m]  # R15
        for _ in range(2):
            card = self._take()
            if card < 0:
                break
            mountain[card] += 1
            self.mountain_masks[m] |= _BITS[card]
            self.mountain_sizes[m] += 1
        self._begin_turn(1 - completer)

    # ------------------------------------------------------------------ turns and the end (R17–R21)

    def _begin_turn(self, p: int) -> None:
        if self.turns >= TURN_LIMIT:
            self._end("turn_limit")
        elif not (self.hand_sizes[0] or self.hand_sizes[1]):
            self._end("no_moves")
        else:
            self.phase = TURN
            self.current = self.to_move = p

    def _end(self, reason: str) -> None:
        self.phase = OVER
        self.to_move = None
        self.end_reason = reason
        self._legal = ()
        discard = self.discard  # R20: leftovers are discarded and score nothing
        for pile in (*self.hands, *self.mountains, *self.fields[0], *self.fields[1]):
            for c in range(6):
                discard[c] += pile[c]
                pile[c] = 0
        self.discard_size = sum(discard)
        self.hand_sizes = [0, 0]
        self.mountain_masks = [0, 0]
        self.mountain_sizes = [0, 0]
        self.field_masks = [[0, 0], [0, 0]]
        self.field_sizes = [[0, 0], [0, 0]]

    def score(self, p: int) -> int:
        """R21: each cup card whose color is in the river scores that river slot's number."""
        cup = self.cups[p]
        return sum(cup[c] * slot for slot, c in enumerate(self.rivers[p], 1))

    def scores(self) -> tuple[int, int]:
        return self.score(0), self.score(1)

    def cup_sizes(self) -> tuple[int, int]:
        return sum(self.cups[0]), sum(self.cups[1])

    def winner(self) -> int | None:
        """R21 with its tie-breaks: higher score, then fewer cup cards; ``None`` for a draw
        or while the game is running."""
        if self.phase is not OVER:
            return None
        return winner_of(self.scores(), self.cup_sizes())

    # ------------------------------------------------------------------ copies

    def copy(self) -> Game:
        """An independent copy (for search): same position, same history, and the same
        reshuffles to come (R16: their generator is shared until either game draws from it,
        which then takes a copy of its own, so copying costs no generator)."""
        g = Game.__new__(Game)
        g.deck_order = self.deck_order
        g.first_player = self.first_player
        g.hands = [self.hands[0][:], self.hands[1][:]]
        g.hand_sizes = self.hand_sizes[:]
        g.cups = [self.cups[0][:], self.cups[1][:]]
        g.starting_cups = self.starting_cups
        g.rivers = [self.rivers[0][:], self.rivers[1][:]]
        g.river_masks = self.river_masks[:]
        g.mountains = [self.mountains[0][:], self.mountains[1][:]]
        g.mountain_masks = self.mountain_masks[:]
        g.mountain_sizes = self.mountain_sizes[:]
        g.fields = [[f[0][:], f[1][:]] for f in self.fields]
        g.field_masks = [f[:] for f in self.field_masks]
        g.field_sizes = [f[:] for f in self.field_sizes]
        g.discard = self.discard[:]
        g.discard_size = self.discard_size
        g.deck = self.deck[:]
        g.reshuffles = self.reshuffles[:]
        g.deck_exhausted = self.deck_exhausted
        g.river_filled = self.river_filled
        g.turns = self.turns
        g.phase = self.phase
        g.to_move = self.to_move
        g.current = self.current
        g.destroying = self.destroying
        g.completed_by = self.completed_by
        g.first_picker = self.first_picker
        g.end_reason = self.end_reason
        g.history = self.history[:]
        g._rng = self._rng  # shared until one of the two draws from it (_own_rng)
        g._rng_owned = self._rng_owned = False
        g._given = None if self._given is None else [o[:] for o in self._given]
        g._lenient = self._lenient
        g._rehearsing = False
        g._legal = self._legal
        g._views = self._views
        return g

    def __repr__(self) -> str:
        return f"<Game turns={self.turns} phase={self.phase} to_move={self.to_move} end={self.end_reason}>"


def winner_of(scores: Sequence[int], cup_sizes: Sequence[int]) -> int | None:
    """R21 with its tie-breaks, from a finished game's scores and cup sizes by seat: the
    higher score wins, then the smaller cup; ``None`` for a draw."""
    s0, s1 = scores
    if s0 != s1:
        return 0 if s0 > s1 else 1
    n0, n1 = cup_sizes
    if n0 != n1:
        return 0 if n0 < n1 else 1
    return None


def _mask(counts: Sequence[int]) -> int:
    return sum(_BITS[c] for c in range(6) if counts[c])


def _mask_of_colors(colors: Iterable[int]) -> int:
    mask = 0
    for c in colors:
        mask |= _BITS[c]
    return mask


def _counts(cards: Iterable[int]) -> list[int]:
    counts = [0] * 6
    for c in cards:
        counts[c] += 1
    return counts


def _describe(counts: Sequence[int]) -> str:
    return "{" + ", ".join(f"{COLORS[c]}: {n}" for c, n in enumerate(counts) if n) + "}"
