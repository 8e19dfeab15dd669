"""What would the optimum do, and what does a choice cost: values of every keep and box.

For a batch of positions (dice, roll index, card) the oracle returns the expected points still
to come after each of the 32 keep patterns and each of the 13 boxes, under the optimal table
(or, without one, under the greedy one-turn horizon). Regret of a choice = best - chosen.
Within a turn the turn-start state does not change, so its tables are cached per game and
recomputed only for games that started a new turn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..game import OPEN, Rules, dice_index, tables, upper_sum
from ..game.rules import N_ROLLS, UPPER_BONUS_THRESHOLD, YAHTZEE_BOX
from ..game.tables import take
from .table import OptimalTable
from .turn import KeptDag, best_keep, box_values, kept_dag, reroll_values


def turn_state(card: torch.Tensor, rules: Rules) -> torch.Tensor:
    """``(..., 3)``: filled-box mask, capped upper sum, Yahtzee-bonus flag of each card."""
    bits = (card != OPEN).long() << torch.arange(card.shape[-1], device=card.device)
    flag = (card[..., YAHTZEE_BOX] == 50).long() if rules.yahtzee_bonus else torch.zeros_like(card[..., 0])
    return torch.stack([bits.sum(-1), upper_sum(card).clamp(max=UPPER_BONUS_THRESHOLD), flag], -1)


class TurnCache:
    """Per-game turn tables (each with the games as its last dimension), computed by ``compute``
    from the games' turn-start states and recomputed only for the games whose state changed:
    within a turn the state stays, so a batch's three decisions share one computation."""

    def __init__(self, compute: Callable[[torch.Tensor], Sequence[torch.Tensor]]) -> None:
        self.compute = compute
        self._key: torch.Tensor | None = None
        self._tables: tuple[torch.Tensor, ...] = ()

    def __call__(self, key: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if self._key is None or self._key.shape != key.shape or self._key.device != key.device:
            self._key, self._tables = key.clone(), tuple(self.compute(key))
            return self._tables
        changed = (self._key != key).any(-1).nonzero().squeeze(-1)
        if len(changed):
            for table, new in zip(self._tables, self.compute(key[changed]), strict=True):
                table[..., changed] = new
            self._key[changed] = key[changed]
        return self._tables


class TurnOracle:
    """Action values for batches of positions; ``table=None`` gives the greedy one-turn values."""

    def __init__(self, rules: Rules, table: OptimalTable | None = None) -> None:
        if table is not None and table.rules != rules:
            raise ValueError(f"the optimal table was built for {table.rules.tag()}, not {rules.tag()}")
        self.rules = rules
        self.table = table
        # Per game: (13, 252, N) value of each box per final dice, (462, N) of each kept multiset
        # before roll 3 and before roll 2.
        self._tables = TurnCache(self._compute)

    def _compute(self, key: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        V = None if self.table is None else self.table.values.to(key.device)
        dag = kept_dag(key.device)
        # Games often share a turn-start state (all of them at the first turn): solve each once.
        unique, inverse = torch.unique(key, dim=0, return_inverse=True)
        m, u, f = unique.unbind(-1)
        box = box_values(m, u.unsqueeze(1), f.unsqueeze(1), V, self.rules, reduce=False)  # (13, 252, S)
        k2, k1 = keep_tables(box, dag)
        return box[:, :, inverse], k2[:, inverse], k1[:, inverse]

    @torch.no_grad()
    def action_values(
        self, dice: torch.Tensor, roll: torch.Tensor, card: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(keep_values (N, 32), box_values (N, 13))``: expected points to come after each choice.

        Keep values are for the keep decision of ``roll`` (0 or 1); box values are for scoring the
        current dice (-inf for illegal boxes). Both are computed for every game whatever its roll.
        """
        return position_values(*self._tables(turn_state(card, self.rules)), dice, roll)

    def regret(
        self, dice: torch.Tensor, roll: torch.Tensor, card: torch.Tensor, keep: torch.Tensor, box: torch.Tensor
    ) -> torch.Tensor:
        """Expected points lost by the chosen action against the best one, per game."""
        return choice_regret(*self.action_values(dice, roll, card), roll, keep, box)


def keep_tables(box: torch.Tensor, dag: KeptDag) -> tuple[torch.Tensor, torch.Tensor]:
    """``box (13, 252, S)``: the value of each box per final dice (dice rows). Returns the values
    of each kept multiset ``(462, S)`` before the third roll and before the second."""
    k2 = reroll_values(box.amax(0), dag)
    return k2, reroll_values(best_keep(k2, dag), dag)


def position_values(
    box: torch.Tensor, k2: torch.Tensor, k1: torch.Tensor, dice: torch.Tensor, roll: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The turn tables of N games (column i is game i's turn) read at each game's dice and roll:
    ``(keep_values (N, 32), box_values (N, 13))``."""
    n = torch.arange(dice.shape[0], device=dice.device)
    d = dice_index(dice)
    dag = kept_dag(dice.device)
    box_now = box[:, dag.row_of_dice[d], n].T  # (N, 13)
    kept = dag.row_of_kept[take(tables(dice.device).keep_to_kept, d)]  # (N, 32) rows
    k = torch.where((roll == 0).unsqueeze(-1), k1.T.gather(1, kept), k2.T.gather(1, kept))
    return k, box_now


def choice_regret(
    keep_values: torch.Tensor, box_values: torch.Tensor, roll: torch.Tensor, keep: torch.Tensor, box: torch.Tensor
) -> torch.Tensor:
    """Expected points lost by each chosen action (the keep where ``roll < 2``, else the box)."""
    keep_regret = keep_values.amax(-1) - keep_values.gather(-1, keep.long().unsqueeze(-1)).squeeze(-1)
    box_regret = box_values.amax(-1) - box_values.gather(-1, box.long().unsqueeze(-1)).squeeze(-1)
    return torch.where(roll == N_ROLLS - 1, box_regret, keep_regret)
