"""An independent, deliberately simple reference implementation of RULES.md.

Written from docs/RULES.md alone (R1-R24), without looking at
``mandala/game.py``.  It favours obviousness over speed: every pile is a plain
list of color names, the draw deck is a list whose index 0 is the top, and
each rule is a small method named after it.

Two ways to use it:

* ``replay_record(record)`` rebuilds a game from an R23 record, taking every
  reshuffle order from the record, and checks every move against
  ``legal_moves()``.
* ``RefGame(deck, first_player, rng=random.Random(seed))`` plays with its own
  seeded reshuffles; ``record()`` then gives an R23 record of it.

``summary()`` returns the same object that ``mandala replay`` prints.

``events`` counts the rare paths the game went through, so that tests can
check that the differential runs really exercise them.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

COLORS = ["red", "orange", "yellow", "green", "purple", "black"]  # R1, canonical order
CARDS_PER_COLOR = 18  # R1
HAND_LIMIT = 8  # R7
RIVER_SLOTS = 6  # R2
TURN_LIMIT = 1000  # R19


class RefError(Exception):
    """An illegal move or an inconsistent record (``ply``: the move at fault, if any)."""

    def __init__(self, message: str, ply: int | None = None) -> None:
        super().__init__(message)
        self.ply = ply


def move_key(move: dict[str, Any]) -> str:
    """The sort key used to compare legal-move lists (and the CLI's --trace)."""
    return json.dumps(move, sort_keys=True)


def sorted_moves(moves: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(moves, key=move_key)


def new_deck(rng: random.Random) -> list[str]:
    """R3: the 108 cards shuffled into a sequence, index 0 on top."""
    deck = [c for c in COLORS for _ in range(CARDS_PER_COLOR)]
    rng.shuffle(deck)
    return deck


class RefGame:
    def __init__(
        self,
        deck: list[str],
        first_player: int = 0,
        reshuffles: list[list[str]] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        # R1: 108 cards, 18 of each color.
        deck = list(deck)
        if len(deck) != 108 or any(deck.count(c) != CARDS_PER_COLOR for c in COLORS):
            raise RefError("R1/R3: the deck must hold 18 cards of each of the 6 colors")
        if first_player not in (0, 1):
            raise RefError("R4: first_player must be 0 or 1")
        if reshuffles is None and rng is None:
            rng = random.Random(0)
        self.deck_order = list(deck)
        self.first_player = first_player
        # Reshuffle orders: taken from the record when replaying, else made with rng.
        self.given_reshuffles = None if reshuffles is None else [list(r) for r in reshuffles]
        self.rng = rng
        self.reshuffles: list[list[str]] = []  # every reshuffle that happened (R23)
        self.moves: list[dict[str, Any]] = []  # every decision, with "player" (R23)

        # R3: deal from the top.
        self.mountains = [deck[0:2], deck[2:4]]
        self.hands = [deck[4:10], deck[10:16]]
        self.cups = [deck[16:18], deck[18:20]]
        self.draw_deck = deck[20:]  # index 0 is the top (the card at index 20)
        self.discard: list[str] = []
        # fields[m][p]: seat p's field of mandala m (R2).
        self.fields: list[list[list[str]]] = [[[], []], [[], []]]
        self.rivers: list[list[str]] = [[], []]  # slot 1 is index 0

        self.turns = 0  # A, B, C and passes (R19); picks are not turns
        self.current = first_player  # whose turn it is (phase "turn")
        self.phase = "turn"  # "turn", "pick" or "over"
        # The destruction in progress (R11-R15).
        self.destroying: int | None = None
        self.completer: int | None = None
        self.picker: int | None = None
        self.had_field: list[bool] = [False, False]
        # R17 triggers.
        self.deck_exhausted = False  # (b): the first exhaustion has happened
        self.river_full = False  # (a): a 6th river slot was filled
        self.end_reason: str | None = None

        # Bookkeeping for the tests: which rare paths occurred.
        self.events: Counter[str] = Counter()
        self.drawing_for = ""  # "A", "C" or "refill": what the current draw is for
        self.exhausted_this_action = False

        self.begin_turn()  # R19/R18 (cannot trigger at the start)

    # ------------------------------------------------------------------ state

    def to_move(self) -> int | None:
        if self.phase == "turn":
            return self.current
        if self.phase == "pick":
            return self.picker
        return None

    def is_over(self) -> bool:
        return self.phase == "over"

    # ------------------------------------------------------------ legal moves

    def legal_moves(self) -> list[dict[str, Any]]:
        """R22: every legal move of the decision at hand, each listed once."""
        if self.phase == "over":
            return []
        if self.phase == "pick":
            mountain = self.mountains[self.destroying]  # type: ignore[index]
            return [{"type": "claim", "color": c} for c in COLORS if c in mountain]
        p = self.current
        hand = self.hands[p]
        if not hand:
            return [{"type": "pass"}]  # R18
        moves: list[dict[str, Any]] = []
        # A (R6, R9): a color may go to a mountain only if neither field of that mandala holds it.
        for m in (0, 1):
            for c in COLORS:
                if c in hand and c not in self.fields[m][0] and c not in self.fields[m][1]:
                    moves.append({"type": "mountain", "mandala": m, "color": c})
        # B (R8, R9): own field, if neither the mountain nor the opponent's field holds it;
        # at least one card must stay in hand.
        for m in (0, 1):
            for c in COLORS:
                if c in hand and c not in self.mountains[m] and c not in self.fields[m][1 - p]:
                    most = min(hand.count(c), len(hand) - 1)
                    for k in range(1, most + 1):
                        moves.append({"type": "field", "mandala": m, "color": c, "count": k})
        # C (R8a): any number of one color, the whole hand allowed.
        for c in COLORS:
            for k in range(1, hand.count(c) + 1):
                moves.append({"type": "discard", "color": c, "count": k})
        return moves

    # ------------------------------------------------------------------ moves

    def apply(self, move: dict[str, Any]) -> None:
        """Apply one R22 move (an optional "player" field must name the mover)."""
        move = dict(move)
        player = move.pop("player", None)
        if self.phase == "over":
            raise RefError("the game is over")
        if player is not None and player != self.to_move():
            raise RefError(f"R5/R12: it is seat {self.to_move()}'s decision, not {player}'s")
        if move not in self.legal_moves():
            raise RefError(f"illegal move {move}")
        p = self.to_move()
        self.moves.append({**move, "player": p})
        kind = move["type"]
        if kind == "claim":
            self.claim(move["color"])
            return
        self.turns += 1  # R19: A, B, C and pass are turns
        self.exhausted_this_action = False
        if kind == "mountain":
            self.action_a(p, move["mandala"], move["color"])
        elif kind == "field":
            self.action_b(p, move["mandala"], move["color"], move["count"])
        elif kind == "discard":
            self.action_c(p, move["color"], move["count"])
        else:
            self.events["pass"] += 1
            self.end_turn(p)

    def action_a(self, p: int, m: int, c: str) -> None:
        """R6: one card to a mountain, draw min(3, 8 - hand), check completion."""
        self.hands[p].remove(c)
        self.mountains[m].append(c)
        wanted = min(3, HAND_LIMIT - len(self.hands[p]))
        self.drawing_for = "A"
        for _ in range(wanted):
            card = self.draw_card()
            if card is not None:
                self.hands[p].append(card)
        self.drawing_for = ""
        assert len(self.hands[p]) <= HAND_LIMIT  # R7
        if not self.hands[p]:
            self.events["hand_emptied"] += 1
        if self.is_complete(m):
            if self.exhausted_this_action:
                self.events["exhaustion_in_A_then_completion"] += 1
            self.begin_destruction(m, p)
        else:
            self.end_turn(p)

    def action_b(self, p: int, m: int, c: str, k: int) -> None:
        """R8: k cards of one color to own field, no draw, check completion."""
        for _ in range(k):
            self.hands[p].remove(c)
            self.fields[m][p].append(c)
        assert self.hands[p]  # R8: one card stays
        if self.is_complete(m):
            self.begin_destruction(m, p)
        else:
            self.end_turn(p)

    def action_c(self, p: int, c: str, k: int) -> None:
        """R8a: discard k cards of one color, then draw k; no completion check."""
        for _ in range(k):
            self.hands[p].remove(c)
            self.discard.append(c)
        self.drawing_for = "C"
        for _ in range(k):
            card = self.draw_card()
            if card is not None:
                self.hands[p].append(card)
        self.drawing_for = ""
        self.end_turn(p)

    def end_turn(self, p: int) -> None:
        self.current = 1 - p
        self.begin_turn()

    def begin_turn(self) -> None:
        """A turn is about to begin: R19 first, then R18."""
        if self.turns >= TURN_LIMIT:
            if not self.hands[0] and not self.hands[1]:
                self.events["turn_limit_judged_before_no_moves"] += 1
            self.end("turn_limit")
        elif not self.hands[0] and not self.hands[1]:
            self.end("no_moves")
        else:
            self.phase = "turn"

    # ---------------------------------------------------------- draw deck R16

    def draw_card(self) -> str | None:
        """Draw (or deal) one card from the top of the draw deck, per R16."""
        if not self.draw_deck:
            if self.discard:
                self.events["reshuffle_from_empty_deck"] += 1
                self.reshuffle()
            else:
                self.events["draw_skipped"] += 1
                return None
        card = self.draw_deck.pop(0)
        if not self.draw_deck:
            self.exhaustion()
        return card

    def exhaustion(self) -> None:
        """R16: the last card was drawn or dealt."""
        self.events["exhaustion"] += 1
        self.events[f"exhaustion_in_{self.drawing_for}"] += 1
        self.exhausted_this_action = True
        if not self.deck_exhausted:
            self.deck_exhausted = True  # R17(b)
            self.events[f"first_exhaustion_in_{self.drawing_for}"] += 1
        if self.discard:
            self.reshuffle()
        else:
            self.events["exhaustion_with_empty_discard"] += 1

    def reshuffle(self) -> None:
        """The whole discard pile becomes the new draw deck (its order is recorded, R23)."""
        if self.given_reshuffles is not None:
            if not self.given_reshuffles:
                raise RefError("R23: the record has no order for a reshuffle that happens")
            order = self.given_reshuffles.pop(0)
            if sorted(order) != sorted(self.discard):
                raise RefError("R23: a reshuffle order does not hold the discard pile's cards")
        else:
            order = list(self.discard)
            self.rng.shuffle(order)  # type: ignore[union-attr]
        self.reshuffles.append(list(order))
        self.draw_deck = list(order)
        self.discard = []
        self.events["reshuffle"] += 1

    # ------------------------------------------------------- completion R10+

    def is_complete(self, m: int) -> bool:
        """R10: the three areas together hold all six colors."""
        present = set(self.mountains[m]) | set(self.fields[m][0]) | set(self.fields[m][1])
        return len(present) == 6

    def begin_destruction(self, m: int, completer: int) -> None:
        self.events["destruction"] += 1
        if self.turns == TURN_LIMIT:
            self.events["destruction_begun_by_turn_1000"] += 1
        if not self.hands[0] and not self.hands[1]:
            self.events["destruction_begun_as_second_hand_emptied"] += 1
        self.destroying = m
        self.completer = completer
        mine = len(self.fields[m][completer])
        theirs = len(self.fields[m][1 - completer])
        # R11: more cards in own field picks first; on a tie the non-completer.
        self.picker = completer if mine > theirs else 1 - completer
        # R13(a) is judged on the fields as they stood at completion.
        self.had_field = [len(self.fields[m][0]) > 0, len(self.fields[m][1]) > 0]
        if not all(self.had_field):
            self.events["empty_field_at_destruction"] += 1
        self.phase = "pick"
        if not self.mountains[m]:
            self.events["empty_mountain_at_destruction"] += 1
            self.finish_destruction()

    def claim(self, c: str) -> None:
        """R12/R13: the picker takes every card of color c from the mountain."""
        m = self.destroying
        p = self.picker
        taken = [x for x in self.mountains[m] if x == c]  # type: ignore[index]
        self.mountains[m] = [x for x in self.mountains[m] if x != c]  # type: ignore[index]
        if not self.had_field[p]:  # type: ignore[index]
            self.discard.extend(taken)  # R13(a)
            self.events["claim_to_discard_R13a"] += 1
        elif c not in self.rivers[p]:  # type: ignore[index]
            self.rivers[p].append(c)  # lowest empty slot  # type: ignore[index]
            self.cups[p].extend(taken[1:])  # type: ignore[index]
            if len(self.rivers[p]) == RIVER_SLOTS:  # type: ignore[index]
                self.river_full = True  # R17(a)
                self.events["sixth_river_slot"] += 1
        else:
            self.cups[p].extend(taken)  # type: ignore[index]
        self.picker = 1 - p  # type: ignore[operator]
        if not self.mountains[m]:  # type: ignore[index]
            self.finish_destruction()

    def finish_destruction(self) -> None:
        m = self.destroying
        assert m is not None and self.completer is not None
        # R14: clear both fields to the discard pile.
        for p in (0, 1):
            self.discard.extend(self.fields[m][p])
            self.fields[m][p] = []
        completer = self.completer
        self.destroying = None
        self.picker = None
        # R17: the trigger that came first names the end.
        if self.deck_exhausted:
            if self.river_full:
                self.events["river_full_but_deck_first"] += 1
            self.end("deck")
            return
        if self.river_full:
            self.end("river")
            return
        # R15: refill the mountain with 2 cards, then the opponent of the completer moves.
        self.drawing_for = "refill"
        for _ in range(2):
            card = self.draw_card()
            if card is not None:
                self.mountains[m].append(card)
        self.drawing_for = ""
        self.current = 1 - completer
        self.begin_turn()

    # ----------------------------------------------------------------- ending

    def end(self, reason: str) -> None:
        self.phase = "over"
        self.end_reason = reason
        self.events[f"end_{reason}"] += 1
        # R20: leftovers (hands, mountains, fields) are discarded and score nothing.
        for p in (0, 1):
            self.discard.extend(self.hands[p])
            self.hands[p] = []
        for m in (0, 1):
            self.discard.extend(self.mountains[m])
            self.mountains[m] = []
            for p in (0, 1):
                self.discard.extend(self.fields[m][p])
                self.fields[m][p] = []
        w = self.winner()
        scores = self.scores()
        if w is None:
            self.events["draw"] += 1
        elif scores[0] == scores[1]:
            self.events["tie_decided_by_cup_size"] += 1

    # ---------------------------------------------------------------- scoring

    def score(self, p: int) -> int:
        """R21: a cup card scores its color's river slot number, 0 if not in the river."""
        total = 0
        for card in self.cups[p]:
            if card in self.rivers[p]:
                total += self.rivers[p].index(card) + 1
        return total

    def scores(self) -> list[int]:
        return [self.score(0), self.score(1)]

    def winner(self) -> int | None:
        if self.phase != "over":
            return None
        s = self.scores()
        if s[0] != s[1]:
            return 0 if s[0] > s[1] else 1
        n = [len(self.cups[0]), len(self.cups[1])]
        if n[0] != n[1]:
            return 0 if n[0] < n[1] else 1
        return None  # draw (Decision)

    def summary(self) -> dict[str, Any]:
        """The same object ``mandala replay`` prints for a record."""
        return {
            "scores": self.scores(),
            "cup_sizes": [len(self.cups[0]), len(self.cups[1])],
            "winner": self.winner(),
            "end_reason": self.end_reason,
            "rivers": [list(r) for r in self.rivers],
            "cups": [{c: cup.count(c) for c in COLORS} for cup in self.cups],
            "turns": self.turns,
        }

    def record(self) -> dict[str, Any]:
        """R23."""
        return {
            "deck": list(self.deck_order),
            "reshuffles": [list(r) for r in self.reshuffles],
            "first_player": self.first_player,
            "moves": [dict(m) for m in self.moves],
        }

    # --------------------------------------------------------- card checking

    def card_total(self) -> int:
        n = len(self.draw_deck) + len(self.discard)
        n += sum(len(x) for x in self.hands + self.cups + self.rivers + self.mountains)
        n += sum(len(f) for pair in self.fields for f in pair)
        return n


def replay_record(
    record: dict[str, Any],
    on_decision: Callable[[int, RefGame], None] | None = None,
) -> RefGame:
    """Rebuild a game from an R23 record, validating every move."""
    game = RefGame(record["deck"], record["first_player"], reshuffles=record["reshuffles"])
    for ply, move in enumerate(record["moves"]):
        if on_decision is not None:
            on_decision(ply, game)
        if type(move.get("player")) is not int:
            raise RefError(f"ply {ply}: R23: every move names its player", ply)
        try:
            game.apply(move)
        except RefError as e:
            raise RefError(f"ply {ply}: {e}", ply) from None
        assert game.card_total() == 108
    if game.given_reshuffles:
        raise RefError(f"R23: {len(game.given_reshuffles)} reshuffle(s) in the record never happened")
    return game


def play(
    deck: list[str],
    first_player: int,
    bots: tuple[Callable[..., dict[str, Any]], Callable[..., dict[str, Any]]],
    rng: random.Random,
    max_plies: int = 100_000,
) -> RefGame:
    """Play a whole game in the reference with its own seeded reshuffles."""
    game = RefGame(deck, first_player, rng=rng)
    for _ in range(max_plies):
        if game.is_over():
            break
        p = game.to_move()
        move = bots[p](game.legal_moves(), RefState(game), rng)  # type: ignore[index]
        game.apply({**move, "player": p})
    return game


class RefState:
    """What the test bots look at (public-ish counts); the same shape is built
    from the project's engine in the tests."""

    def __init__(self, game: RefGame) -> None:
        self.to_move = game.to_move()
        self.deck_size = len(game.draw_deck)
        self.discard_size = len(game.discard)
        self.hand_sizes = [len(h) for h in game.hands]
        self.hands = [[h.count(c) for c in COLORS] for h in game.hands]
        self.mountains = [[mt.count(c) for c in COLORS] for mt in game.mountains]
        self.fields = [[[f.count(c) for c in COLORS] for f in pair] for pair in game.fields]
        self.turns = game.turns
