"""Box scores, legality and bonuses for batches of dice and scorecards.

A scorecard is an int64 tensor ``(..., 13)`` holding each box's score, -1 while the box is open.
Everything here is vectorised over any batch shape and works on any device.
"""

from __future__ import annotations

import torch

from .rules import (
    N_BOXES,
    UPPER_BONUS,
    UPPER_BONUS_THRESHOLD,
    YAHTZEE_BONUS,
    YAHTZEE_BOX,
    Rules,
)
from .tables import tables, take

OPEN = -1


def upper_sum(card: torch.Tensor) -> torch.Tensor:
    """Sum of the filled upper boxes (0-5)."""
    return card[..., :6].clamp(min=0).sum(-1)


def card_total(card: torch.Tensor, yahtzee_bonuses: torch.Tensor) -> torch.Tensor:
    """Total score: filled boxes + upper bonus + 100 per Yahtzee bonus."""
    bonus = (upper_sum(card) >= UPPER_BONUS_THRESHOLD).long() * UPPER_BONUS
    return card.clamp(min=0).sum(-1) + bonus + YAHTZEE_BONUS * yahtzee_bonuses


def box_options(
    dice_idx: torch.Tensor, card: torch.Tensor, rules: Rules
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """What each box would score now, which boxes are legal, and the Yahtzee bonus earned.

    Returns ``(scores (..., 13) int64, legal (..., 13) bool, bonus (...) int64)`` where ``bonus``
    is the +100 Yahtzee bonus (0 or 100) that scoring these dice in any legal box earns.
    Scores of illegal boxes are 0.
    """
    T = tables(dice_idx.device)
    open_ = card == OPEN
    yahtzee = take(T.is_yahtzee, dice_idx)
    yahtzee_filled = card[..., YAHTZEE_BOX] != OPEN
    if rules.yahtzee_bonus:
        bonus = (yahtzee & (card[..., YAHTZEE_BOX] == 50)).long() * YAHTZEE_BONUS
    else:
        bonus = torch.zeros_like(dice_idx)
    legal = open_
    if rules.joker_active:
        joker = yahtzee & yahtzee_filled
        face = take(T.yahtzee_face, dice_idx).clamp(min=0)
        own_open = open_.gather(-1, face.unsqueeze(-1)).squeeze(-1)
        # Full house and the straights take joker values only once the Yahtzee's own upper box is
        # filled (under the forced rule the dice must go there first; under free choice they may
        # go elsewhere, but then they are no joker). This is the rule behind 254.5896.
        use_joker_values = joker & ~own_open
        scores = torch.where(
            use_joker_values.unsqueeze(-1), take(T.joker_scores, dice_idx), take(T.base_scores, dice_idx)
        )
        if rules.joker == "forced":
            lower_open = open_[..., 6:].any(-1)
            upper_only = torch.zeros_like(open_)
            upper_only.scatter_(-1, face.unsqueeze(-1), True)
            lower = torch.zeros_like(open_)
            lower[..., 6:] = True
            upper = ~lower
            allowed = torch.where(
                own_open.unsqueeze(-1), upper_only, torch.where(lower_open.unsqueeze(-1), lower, upper)
            )
            legal = torch.where(joker.unsqueeze(-1), open_ & allowed, open_)
    else:
        scores = take(T.base_scores, dice_idx)
    scores = torch.where(legal, scores, 0)
    return scores, legal, bonus


def score_box(
    dice_idx: torch.Tensor, card: torch.Tensor, yahtzee_bonuses: torch.Tensor, box: torch.Tensor, rules: Rules
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Score ``dice`` in ``box``: returns ``(new_card, new_yahtzee_bonuses, reward, legal)``.

    The reward is the change in total score (box + upper bonus reached + Yahtzee bonus).
    ``legal`` says per game whether the box was allowed; illegal games are left unchanged.
    """
    scores, legal_boxes, bonus = box_options(dice_idx, card, rules)
    box = box.long()
    legal = legal_boxes.gather(-1, box.unsqueeze(-1)).squeeze(-1)
    value = scores.gather(-1, box.unsqueeze(-1)).squeeze(-1)
    before = upper_sum(card)
    new_card = card.scatter(-1, box.unsqueeze(-1), value.unsqueeze(-1))
    new_card = torch.where(legal.unsqueeze(-1), new_card, card)
    after = upper_sum(new_card)
    crossed = (before < UPPER_BONUS_THRESHOLD) & (after >= UPPER_BONUS_THRESHOLD)
    bonus = torch.where(legal, bonus, 0)
    reward = torch.where(legal, value, 0) + crossed.long() * UPPER_BONUS + bonus
    return new_card, yahtzee_bonuses + bonus // 100, reward, legal


def empty_card(batch_shape: tuple[int, ...], rules: Rules, device: torch.device | str | None = None) -> torch.Tensor:
    """A fresh card: boxes in play open, boxes out of play filled with 0."""
    card = torch.full((*batch_shape, N_BOXES), OPEN, dtype=torch.int64, device=device)
    for b in rules.boxes_out_of_play:
        card[..., b] = 0
    return card
