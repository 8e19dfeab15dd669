"""The exact win-maximising play of a player's last turn, once every opponent has finished.

A match is won by more points than the best opponent. With one box left and the opponents'
final scores known, the only question is whether this turn gains more than ``need = best
opponent's final score - own score`` points, so the value of the final dice is 1 for a gain above
``need``, 1/2 for a gain equal to it (a draw counts half) and 0 below: maximising
``P(win) + P(draw) / 2`` is maximising the expected +1/0/-1 match result. The gain is the solver's
own points of scoring the box (box score, upper bonus reached, Yahtzee bonus; the joker decides
legality and values), and the keeps are the turn's expectimax (``.turn``) over this value
instead of points. A ``need`` below 0 is a match already won (every keep has value 1).

Only the last turn is solved: in alternating play, a player with two boxes left always has an
opponent still to play, so "points still needed" is not known there.
"""

from __future__ import annotations

import torch

from ..game import OPEN, Rules
from .oracle import keep_tables, position_values, turn_state
from .turn import box_values, kept_dag


def last_turn(card: torch.Tensor) -> torch.Tensor:
    """``(N,)`` bool: the cards with exactly one box (in play) still open."""
    return (card == OPEN).sum(-1) == 1


@torch.no_grad()
def win_values(
    dice: torch.Tensor, roll: torch.Tensor, card: torch.Tensor, need: torch.Tensor, rules: Rules
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(keep_values (N, 32), box_values (N, 13))``: ``P(win) + P(draw) / 2`` after each choice.

    Every card must have exactly one open box (``last_turn``); ``need (N,)`` is the best
    opponent's final score minus the player's score now. Box values are -inf for illegal boxes.
    """
    if not bool(last_turn(card).all()):
        raise ValueError("win_values needs cards with exactly one open box (the last turn)")
    # Positions share their turn (card state and need) often: solve each turn once.
    key = torch.cat([turn_state(card, rules), need.long().clamp(min=-1).unsqueeze(-1)], -1)
    unique, inverse = torch.unique(key, dim=0, return_inverse=True)
    m, u, f, n = unique.unbind(-1)
    gain = box_values(m, u.unsqueeze(1), f.unsqueeze(1), None, rules, reduce=False)  # (13, 252, S)
    n = n.to(gain.dtype)
    value = (gain > n).to(gain.dtype) + 0.5 * (gain == n)
    box = value.masked_fill_(gain == float("-inf"), float("-inf"))
    k2, k1 = keep_tables(box, kept_dag(card.device))
    return position_values(box[:, :, inverse], k2[:, inverse], k1[:, inverse], dice, roll)
