"""Sampling a full game that fits what one seat sees (determinization).

Search bots cannot look at the opponent's hand, the opponent's starting cup
or the draw deck, so they play on games whose hidden cards are dealt at
random from the cards the seat has not seen (``View.unseen``). Every
sample agrees with the view in every public pile and in the seat's own
hand and cup; only the hidden cards differ from the real game.

>>> import random
>>> from mandala import Game, view
>>> real = Game.new(seed=3)
>>> sampled = determinize(view(real, 0), random.Random(1))
>>> view(sampled, 0) == view(real, 0)
True

Pure: no I/O. ``Sampler`` builds the public part once and then deals the
hidden cards anew for each sample, which is what a search does thousands of
times per decision.
"""

from __future__ import annotations

import random

from .cards import COLOR_INDEX, expand
from .game import PICK, Game
from .views import View

__all__ = ["Sampler", "determinize"]


def _enter_destruction(game: Game, mandala: int, completed_by: int, first_picker: int, picker: int) -> None:
    """Put a freshly set-up game in the middle of a destruction (R11–R13).

    ``Game.from_position`` only builds positions where a turn is about to
    begin; a view taken during a destruction also fixes which mandala is
    being destroyed, who completed it, who picked first and who picks now.
    Picks follow from these alone, so this is all a destruction carries.
    """
    game.phase = PICK
    game.destroying = mandala
    game.completed_by = completed_by
    game.first_picker = first_picker
    game.to_move = picker
    game.current = completed_by  # the player whose action began it, as during a real pick
    game._forget_derived()


def _carry_reshuffle_count(game: Game, count: int) -> None:
    """Make ``game`` report ``count`` past reshuffles (R16), as the view does.

    Their orders are hidden and play no further part in the game, so the
    entries are left empty; a sampled game has no record (R23) anyway.
    """
    game.reshuffles = [[] for _ in range(count)]


class Sampler:
    """Deals the hidden cards of one seat's view at random, as often as asked.

    The public piles, the seat's own hand and cup and the destruction state
    are set up once; :meth:`sample` copies that template and deals the
    unseen cards into the opponent's hand, the opponent's starting cup and
    the draw deck.
    """

    __slots__ = ("seat", "_template", "_unseen", "_opp_hand", "_opp_cup", "_claimed")

    def __init__(self, view: View) -> None:
        if view.seat is None or view.private is None:
            raise ValueError("only a seat's view can be determinized: a spectator does not know a hand")
        if view.phase == "over":
            raise ValueError("the game is over: there is nothing hidden left to sample")
        me = view.seat
        opp = 1 - me
        players = view.players
        self.seat = me
        self._unseen = expand(view.unseen.counts())
        self._opp_hand = players[opp].hand_size
        self._opp_cup = players[opp].cup_unknown
        self._claimed = players[opp].cup_claimed.counts()
        if self._opp_hand + self._opp_cup + view.deck_size != len(self._unseen):
            raise ValueError("inconsistent view: unseen cards do not match the hidden piles")
        own_cup = view.private.cup.counts()
        own_claimed = players[me].cup_claimed.counts()
        hands = [[0] * 6, [0] * 6]
        starting = [[0] * 6, [0] * 6]
        cups = [[0] * 6, [0] * 6]
        hands[me] = view.private.hand.counts()
        starting[me] = [own_cup[c] - own_claimed[c] for c in range(6)]
        cups[me] = own_cup
        cups[opp] = self._claimed[:]
        # The template holds every hidden card in the deck, so it is a valid position.
        template = Game.from_position(
            hands=hands,
            deck=self._unseen,
            starting_cups=starting,
            cups=cups,
            rivers=[[COLOR_INDEX[c] for c in p.river] for p in players],
            mountains=[m.mountain.counts() for m in view.mandalas],
            fields=[[f.counts() for f in m.fields] for m in view.mandalas],
            discard=view.discard.counts(),
            to_move=view.to_move if view.to_move is not None else 0,
            first_player=view.first_player,
            turns=view.turns,
            deck_exhausted=view.deck_exhausted,
        )
        _carry_reshuffle_count(template, view.reshuffles)
        template._rng = None  # each sample gets a generator of its own
        d = view.destruction
        if view.phase == "pick" and d is not None and view.to_move is not None:
            _enter_destruction(template, d.mandala, d.completed_by, d.first_picker, view.to_move)
        self._template = template

    def sample(self, rng: random.Random) -> Game:
        """A new game consistent with the view; its future reshuffles follow from ``rng``."""
        cards = self._unseen[:]
        rng.shuffle(cards)
        game = self._template.copy()
        opp = 1 - self.seat
        h, k = self._opp_hand, self._opp_hand + self._opp_cup
        hand = [0] * 6
        for c in cards[:h]:
            hand[c] += 1
        start = [0] * 6
        for c in cards[h:k]:
            start[c] += 1
        _deal_hidden(game, opp, hand, start, [start[c] + self._claimed[c] for c in range(6)], cards[k:])
        game._rng = random.Random(rng.getrandbits(64))
        game._rng_owned = True
        return game


def _deal_hidden(game: Game, seat: int, hand: list[int], starting_cup: list[int], cup: list[int], deck: list[int]) -> None:
    """Give ``seat`` this hand and cup and make ``deck`` (top first) the draw deck.

    The template had all of these cards in its deck; moving them keeps the
    108 cards accounted for (R1).
    """
    game.hands[seat] = hand
    game.hand_sizes[seat] = sum(hand)
    game.starting_cups = [game.starting_cups[0][:], game.starting_cups[1][:]]
    game.starting_cups[seat] = starting_cup
    game.cups[seat] = cup
    game.deck = deck[::-1]
    game._forget_derived()


def determinize(view: View, rng: random.Random) -> Game:
    """A full game consistent with ``view`` (a seat's view), hidden cards dealt from ``rng``.

    The seat's own hand and cup and every public pile come from the view;
    the unseen cards go at random into the opponent's hand, the opponent's
    starting cup and the draw deck (in random order). Future reshuffles
    (R16) are drawn from a generator seeded by ``rng``.
    """
    return Sampler(view).sample(rng)
