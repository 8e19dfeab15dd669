"""Batched game state and its transitions: the whole rules engine on tensors.

One decision per step: a keep pattern while ``roll < 2``, a box when ``roll == 2``. Keeping all
five dice ends the rolling early in effect (the dice stay), so every turn is three steps.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import torch

from .rules import N_DICE, N_FACES, N_KEEPS, N_ROLLS, Rules
from .scoring import OPEN, card_total, empty_card, legal_mask, score_box
from .tables import tables, take


@dataclass
class GameState:
    """A batch of games; every field has the same leading batch shape."""

    dice_idx: torch.Tensor  # (...) multiset index 0..251 of the sorted dice
    card: torch.Tensor  # (..., 13) box scores, -1 open
    roll: torch.Tensor  # (...) 0, 1, 2: rolls made this turn minus one
    turn: torch.Tensor  # (...) boxes filled so far (in play)
    yahtzee_bonuses: torch.Tensor  # (...) Yahtzee bonuses earned

    @property
    def dice(self) -> torch.Tensor:
        """Sorted face values ``(..., 5)``."""
        return take(tables(self.dice_idx.device).dice, self.dice_idx)

    @property
    def score(self) -> torch.Tensor:
        return card_total(self.card, self.yahtzee_bonuses)

    def tensors(self) -> tuple[torch.Tensor, ...]:
        """Its fields in order (``GameState(*state.tensors())`` is ``state``): a compiled step's inputs."""
        return tuple(getattr(self, f.name) for f in fields(self))

    def where(self, cond: torch.Tensor, other: GameState) -> GameState:
        """Per game, this state where ``cond`` else ``other``."""
        out = {}
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            c = cond.reshape(cond.shape + (1,) * (a.dim() - cond.dim()))
            out[f.name] = torch.where(c, a, b)
        return GameState(**out)


class ReadAhead:
    """K generators' streams of one kind of draw, read ahead: every block's next values in one slice.

    A pack of K members draws its games' dice, dropout masks and action noise from one generator a
    member (so that a member's games do not depend on its pack), and drawing block by block cost
    K calls and a concatenation a step, for each kind: most of what a pack of 64's collection
    dispatched beyond one run's. Held here, the values of many steps are drawn at once, one call a
    generator, and each step takes its share of every block with one slice.

    ``make`` is the kind (``torch.rand``, or ``randint``'s partial for one range): one object
    serves one kind, since a generator's stream of one kind is not that of another. A CPU
    generator's stream is serial, so the values are those drawing each time would give, to the
    bit (``tests/game/test_read_ahead.py``); on CUDA the same law, other numbers.

    How far ahead: ``free`` generators (the env's dice: nothing else draws from them) read ahead
    up to 64 draws at a time; the others only as far as ``allow`` says, and otherwise exactly
    what is asked, since after these draws the generator has another user (a member's generator
    draws its minibatch orders after the batch's noise) and nothing may be drawn that was its.
    """

    #: Values held at most, over all generators (a pack of K holds ``HELD // K`` a generator).
    HELD = 1 << 24

    def __init__(self, generators: Sequence[torch.Generator], make: Callable[..., torch.Tensor], free: bool = False):
        self.generators, self.make, self.free = list(generators), make, free
        self.budget = 0  # values a generator may still draw ahead of what is asked (``allow``)
        self._held: torch.Tensor | None = None  # (K, n): each generator's values not yet served

    def __len__(self) -> int:
        return len(self.generators)

    @property
    def held(self) -> int:
        """Values a generator holds, drawn and not yet served."""
        return 0 if self._held is None else self._held.shape[1]

    def allow(self, values: int) -> None:
        """The next ``values`` values a generator will all be asked for: draw them ahead."""
        self.budget = values

    def clear(self) -> None:
        """Forget the held values (after a generator is reseeded)."""
        self._held, self.budget = None, 0

    def __call__(self, make: Callable[..., torch.Tensor], shape: tuple[int, ...], device: Any) -> torch.Tensor:
        """``make(shape)`` drawn by blocks of the leading dimension, one block a generator."""
        if make is not self.make:
            raise TypeError(f"a ReadAhead of {self.make} was asked for another kind of draw ({make})")
        k = len(self.generators)
        n = math.prod(shape) // k
        have = self.held
        if have < n:
            ahead = n * 64 if self.free else self.budget
            more = max(n - have, min(ahead, self.HELD // k))
            self.budget = max(0, self.budget - more)
            fresh = torch.stack([self.make((more,), device=device, generator=g) for g in self.generators])
            self._held = fresh if have == 0 else torch.cat([self._held, fresh], 1)
        out, self._held = self._held[:, :n], self._held[:, n:]
        return out.reshape(shape)


#: Where a batch's randomness comes from: the global generator (None), one generator, or one
#: generator per equal block of the leading (games) dimension, so that each block of games (an
#: ensemble member's) plays the same dice whatever the other blocks' generators were seeded with
#: (or those generators read ahead, ``ReadAhead``).
Generators = torch.Generator | Sequence[torch.Generator] | ReadAhead | None


def draw(
    make: Callable[..., torch.Tensor], shape: tuple[int, ...], device: torch.device | str | None, generator: Generators
) -> torch.Tensor:
    """``make(shape, device=, generator=)`` (``torch.rand`` or a ``randint`` partial), by blocks
    of the leading dimension when ``generator`` is a sequence (one call per generator)."""
    if generator is None or isinstance(generator, torch.Generator):
        return make(shape, device=device, generator=generator)
    if isinstance(generator, ReadAhead):
        return generator(make, shape, device)
    n = shape[0] // len(generator)
    return torch.cat([make((n, *shape[1:]), device=device, generator=g) for g in generator])


@functools.cache
def randint(high: int) -> Callable[..., torch.Tensor]:
    """``torch.randint(0, high, ...)`` as a ``make`` for ``draw`` (one object per ``high``)."""
    return functools.partial(torch.randint, 0, high)


def fresh_faces(shape: tuple[int, ...], device: torch.device | str | None, generator: Generators) -> torch.Tensor:
    """``(*shape, 5)`` faces 0..5: the roll of five dice of each game, of which a step keeps some."""
    return draw(randint(N_FACES), (*shape, N_DICE), device, generator)


def roll_dice(
    shape: tuple[int, ...], device: torch.device | str | None = None, generator: Generators = None
) -> torch.Tensor:
    """Multiset indices of fresh rolls of five dice."""
    return reroll(None, None, shape, device, generator)


def reroll(
    dice_idx: torch.Tensor | None,
    keep: torch.Tensor | None,
    shape: tuple[int, ...] | None = None,
    device: torch.device | str | None = None,
    generator: Generators = None,
    fresh: torch.Tensor | None = None,
) -> torch.Tensor:
    """Re-roll the dice not kept. ``keep`` is a pattern index (0..31) or None (roll all).
    ``fresh``: the five faces (0..5) each game would roll, drawn by the caller (``fresh_faces``)."""
    if dice_idx is not None:
        shape, device = tuple(dice_idx.shape), dice_idx.device
    T = tables(device)
    if fresh is None:
        fresh = fresh_faces(shape, device, generator)
    if dice_idx is not None and keep is not None:
        fresh = torch.where(take(T.keep_bits, keep), take(T.dice, dice_idx) - 1, fresh)
    code = (fresh * _powers(device)).sum(-1)
    return take(T.code_to_index, code)


_POWERS: dict[torch.device, torch.Tensor] = {}


def _powers(device: torch.device | str | None) -> torch.Tensor:
    device = torch.device(device if device is not None else "cpu")
    if device not in _POWERS:
        _POWERS[device] = N_FACES ** torch.arange(N_DICE, device=device)
    return _POWERS[device]


def dice_index(dice: torch.Tensor) -> torch.Tensor:
    """Multiset index of face values ``(..., 5)`` in any order."""
    return take(tables(dice.device).code_to_index, ((dice.long() - 1) * _powers(dice.device)).sum(-1))


def keep_bits_to_pattern(bits: torch.Tensor) -> torch.Tensor:
    """Five keep bits ``(..., 5)`` to a pattern index 0..31."""
    return (bits.long() << torch.arange(N_DICE, device=bits.device)).sum(-1)


def new_games(
    shape: tuple[int, ...],
    rules: Rules,
    device: torch.device | str | None = None,
    generator: Generators = None,
    card: torch.Tensor | None = None,
) -> GameState:
    """Games at the first roll of their first turn (or of the given, partly filled ``card``)."""
    if card is None:
        card = empty_card(shape, rules, device)
    n_out = len(rules.boxes_out_of_play)
    zeros = torch.zeros(shape, dtype=torch.int64, device=device)
    return GameState(
        dice_idx=roll_dice(shape, device, generator),
        card=card,
        roll=zeros,
        turn=(card != OPEN).sum(-1) - n_out,
        yahtzee_bonuses=zeros.clone(),
    )


def random_partial_cards(
    shape: tuple[int, ...],
    rules: Rules,
    device: torch.device | str | None = None,
    generator: Generators = None,
) -> torch.Tensor:
    """Cards with a uniform number (0..n-1) of boxes in play filled, each scored on a random roll.

    A cheap, plausible start distribution for single-turn training: every in-play box is equally
    likely to be filled and its score is what a random roll would give there.
    """
    card = empty_card(shape, rules, device)
    in_play = torch.tensor(rules.boxes, device=device)
    n = len(rules.boxes)
    k = draw(randint(n), shape, device, generator)
    rank = draw(torch.rand, (*shape, n), device, generator).argsort(-1).argsort(-1)
    fill = rank < k.unsqueeze(-1)
    dice = roll_dice((*shape, n), device, generator)
    base = tables(device).base_scores[dice].gather(-1, in_play.expand(*shape, n).unsqueeze(-1)).squeeze(-1)
    card[..., in_play] = torch.where(fill, base, OPEN)
    return card


def staggered_games(
    shape: tuple[int, ...],
    rules: Rules,
    device: torch.device | str | None = None,
    generator: Generators = None,
    block: int | None = None,
) -> GameState:
    """Games spread over the turns of a game: game ``i`` (of the flattened batch; of its block of
    ``block`` games, one a generator, where given) is played by uniformly random keeps and legal
    boxes to the first roll of turn ``i mod n`` (``n`` boxes in play). Where single turns continue
    their own cards (``start_card: own_play``), this first batch holds every stage of a game at
    once, as the published code's staggered environments did."""
    n, count = len(rules.boxes), math.prod(shape)
    target = (torch.arange(count, device=device) % (block or count) % n).reshape(shape)
    state = new_games(shape, rules, device, generator)
    for _ in range(int(target.max()) * N_ROLLS):  # the furthest game's turns, three steps each
        keep = draw(randint(N_KEEPS), shape, device, generator)
        legal = legal_mask(state.dice_idx, state.card, rules)
        box = torch.where(legal, draw(torch.rand, (*shape, legal.shape[-1]), device, generator), -1.0).argmax(-1)
        state = step(state, keep, box, rules, generator).state.where(state.turn < target, state)
    return state


@dataclass
class StepResult:
    state: GameState
    reward: torch.Tensor  # (...) int64 change in total score
    legal: torch.Tensor  # (...) bool: False where the chosen box was illegal (its result is undefined)
    game_over: torch.Tensor  # (...) bool: every box filled


def step(
    state: GameState,
    keep: torch.Tensor,
    box: torch.Tensor,
    rules: Rules,
    generator: Generators = None,
    fresh: torch.Tensor | None = None,
) -> StepResult:
    """Advance every game by one decision: ``keep`` where ``roll < 2``, ``box`` where ``roll == 2``.

    Both branches are computed for the whole batch and selected per game, so there is no Python
    branching on data. A scoring game gets a fresh roll of five for its next turn. Actions are
    assumed legal (masks guarantee it); ``legal`` reports games whose box was not, for callers
    that check (the env raises on them).
    """
    scoring = state.roll == N_ROLLS - 1
    new_card, new_bonus, reward, legal = score_box(
        state.dice_idx, state.card, state.yahtzee_bonuses, box, rules, scoring=scoring
    )
    scored = scoring & legal
    # A scoring game rolls all five (pattern 0 keeps nothing).
    keep = keep.long().masked_fill(scoring, 0)
    next_state = GameState(
        dice_idx=reroll(state.dice_idx, keep, generator=generator, fresh=fresh),
        card=new_card,  # unchanged where no box was scored
        roll=(state.roll + 1).masked_fill(scoring, 0),
        turn=state.turn + scored,
        yahtzee_bonuses=new_bonus,
    )
    game_over = next_state.turn == len(rules.boxes)  # every box in play filled
    return StepResult(next_state, reward, legal | ~scoring, game_over)


def legal_boxes(state: GameState, rules: Rules) -> torch.Tensor:
    """Boxes that may be scored with the current dice ``(..., 13)``."""
    return legal_mask(state.dice_idx, state.card, rules)
