"""One game at a time in pure Python: the batched engine's rules over plain lists.

A batched tensor engine pays a few microseconds of dispatch per operation, which a batch of
thousands hides and a batch of one does not. ``SingleGame`` plays the same rules (every
``Rules`` variant, the same start cards) from Python lists built once
from the shared tables, so that one decision costs a few list look-ups. ``tests/game/test_single_game.py``
checks it move by move against ``step``.

Randomness comes in as a *roll code*: an int in ``0..7775``, the base-6 digits of five fresh
dice in die order (digit i is die i's face minus one), exactly what the batched engine draws. A
keep takes the kept (sorted) dice from the current roll and the others from the code, so that
fed the batched engine's own draws it lands on the same dice.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache
from operator import mul

import torch

from .rules import (
    N_BOXES,
    N_DICE,
    N_FACES,
    UPPER_BONUS,
    UPPER_BONUS_THRESHOLD,
    YAHTZEE_BONUS,
    YAHTZEE_BOX,
    Rules,
)
from .tables import tables

N_CODES = N_FACES**N_DICE  # 7776 ordered rolls of five
OPEN = -1


@dataclass(frozen=True)
class ListTables:
    """The shared tables as nested Python lists (indexing a list beats indexing a tensor by far)."""

    faces: list[list[int]]  # [dice] sorted face values
    counts: list[list[int]]  # [dice] face counts
    base: list[list[int]]  # [dice] box scores without joker
    joker: list[list[int]]  # [dice] box scores played as a joker
    is_yahtzee: list[bool]  # [dice]
    yahtzee_face: list[int]  # [dice] face index 0..5 of a Yahtzee, -1 otherwise
    code_to_index: list[int]  # [roll code] sorted-multiset index
    kept_code: list[list[int]]  # [dice][keep]: the kept dice's part of the next roll code
    free_code: list[list[int]]  # [keep][roll code]: that code with the kept dice's digits zeroed


@cache
def list_tables() -> ListTables:
    """Built once per process from ``tables``."""
    T = tables("cpu")
    powers = N_FACES ** torch.arange(N_DICE)
    keeps = T.keep_bits.long().T  # (5, 32)
    digits = torch.arange(N_CODES).unsqueeze(-1) // powers % N_FACES  # (7776, 5)
    kept_code = ((T.dice - 1) * powers) @ keeps  # (252, 32)
    free_code = (digits * powers) @ (1 - keeps)  # (7776, 32)
    return ListTables(
        faces=T.dice.tolist(),
        counts=T.counts.tolist(),
        base=T.base_scores.tolist(),
        joker=T.joker_scores.tolist(),
        is_yahtzee=T.is_yahtzee.tolist(),
        yahtzee_face=T.yahtzee_face.tolist(),
        code_to_index=T.code_to_index.tolist(),
        kept_code=kept_code.tolist(),
        free_code=free_code.T.tolist(),
    )


class SingleGame:
    """One game of solitaire Yahtzee: the state of the batched engine's ``GameState`` for one game.

    ``dice`` (multiset index 0..251), ``card`` (13 box scores, -1 open), ``roll`` (0, 1, 2),
    ``turn`` (boxes in play filled), ``yahtzee_bonuses``, ``score`` (the card's total) and ``upper``
    (the upper section's sum); ``is_open`` (13 ints, 1 = open) and ``legal`` (13 ints, 1 = the box
    may be scored now) are lists that are replaced, never changed in place. After
    each change of dice or card it caches what every box would score (``values``), which boxes are
    legal (``legal``), the Yahtzee bonus a box would earn now (``bonus``) and whether a joker is
    active (``joker``): the observation and the next scoring read them.
    """

    __slots__ = ("rules", "card", "dice", "roll", "turn", "yahtzee_bonuses", "score", "upper", "values", "legal")
    __slots__ += ("is_open", "bonus", "joker", "_t", "_forced", "_joker_on", "_bonus_on", "n_turns")

    def __init__(self, rules: Rules | None = None) -> None:
        self.rules = rules or Rules()
        self._t = list_tables()
        self._forced = self.rules.joker == "forced"
        self._joker_on = self.rules.joker_active
        self._bonus_on = self.rules.yahtzee_bonus
        self.n_turns = len(self.rules.boxes)
        self.start(self.empty_card(), 0)

    # ------------------------------------------------------------------ start
    def start(self, card: list[int], code: int) -> None:
        """Begin at the first roll of a turn on ``card`` (a list of 13 scores, -1 open) with roll ``code``."""
        self.card = list(card)
        self.is_open = [int(c == OPEN) for c in self.card]
        self.dice = self._t.code_to_index[code]
        self.roll = 0
        self.turn = sum(c != OPEN for c in self.card) - (N_BOXES - self.n_turns)
        self.yahtzee_bonuses = 0
        self.upper = upper = sum(max(c, 0) for c in self.card[:6])
        self.score = sum(max(c, 0) for c in self.card) + (UPPER_BONUS if upper >= UPPER_BONUS_THRESHOLD else 0)
        self._evaluate()

    def empty_card(self) -> list[int]:
        """A fresh card: boxes in play open, the others filled with 0."""
        return [OPEN if b in self.rules.boxes else 0 for b in range(N_BOXES)]

    def random_card(self, rng: random.Random) -> list[int]:
        """A random partly filled card, drawn as ``random_partial_cards``
        draws them: a uniform number (0..n-1) of the boxes in play, each scored on a random roll."""
        card = self.empty_card()
        boxes = self.rules.boxes
        for b in rng.sample(boxes, rng.randrange(len(boxes))):
            card[b] = self._t.base[self._t.code_to_index[rng.randrange(N_CODES)]][b]
        return card

    # ------------------------------------------------------------------ rules
    @property
    def faces(self) -> list[int]:
        """The sorted face values of the dice."""
        return self._t.faces[self.dice]

    @property
    def over(self) -> bool:
        """Every box in play is filled."""
        return self.turn >= self.n_turns

    def _evaluate(self) -> None:
        """Scores, legality and the bonus of every box for the current dice (``box_options``'s rules)."""
        t, card, d = self._t, self.card, self.dice
        legal = self.is_open  # never changed in place: score_box makes a new list
        row = t.base[d]
        yahtzee_box = card[YAHTZEE_BOX]
        yahtzee = t.is_yahtzee[d]
        joker = yahtzee and self._joker_on and yahtzee_box != OPEN
        if joker:
            face = t.yahtzee_face[d]
            own_open = card[face] == OPEN
            if not own_open:
                row = t.joker[d]  # full house and the straights at joker values
            if self._forced:
                if own_open:
                    allowed = [b == face for b in range(N_BOXES)]
                elif OPEN in card[6:]:
                    allowed = [b >= 6 for b in range(N_BOXES)]
                else:
                    allowed = [b < 6 for b in range(N_BOXES)]
                legal = [int(a and b) for a, b in zip(legal, allowed, strict=True)]
        self.values = list(map(mul, row, legal))  # 0 where illegal
        self.legal = legal
        self.joker = joker
        self.bonus = YAHTZEE_BONUS if self._bonus_on and yahtzee and yahtzee_box == 50 else 0

    # ---------------------------------------------------------------- actions
    def keep(self, pattern: int, code: int) -> None:
        """Keep the dice of ``pattern`` (bit i keeps sorted die i) and re-roll the others from ``code``."""
        t = self._t
        self.dice = t.code_to_index[t.kept_code[self.dice][pattern] + t.free_code[pattern][code]]
        self.roll += 1
        self._evaluate()

    def score_box(self, box: int, code: int) -> int:
        """Score the dice in ``box`` (it must be legal: see ``legal``), roll ``code`` for the next turn;
        returns the reward, the change in total score (box, upper bonus reached, Yahtzee bonus)."""
        card = self.card
        value = self.values[box]
        reward = value + self.bonus
        if box < 6:
            before = self.upper
            self.upper = before + value
            if before < UPPER_BONUS_THRESHOLD <= before + value:
                reward += UPPER_BONUS
        card[box] = value
        self.is_open = self.is_open.copy()
        self.is_open[box] = 0
        self.yahtzee_bonuses += self.bonus // YAHTZEE_BONUS
        self.score += reward
        self.turn += 1
        self.roll = 0
        self.dice = self._t.code_to_index[code]
        self._evaluate()
        return reward
