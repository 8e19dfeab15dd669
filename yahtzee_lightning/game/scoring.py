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


def _evaluate(
    dice_idx: torch.Tensor, card: torch.Tensor, rules: Rules, box: torch.Tensor | None = None, scores: bool = True
) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor | None]:
    """The one implementation of box scores, legality and the Yahtzee bonus.

    ``box=None`` evaluates every box (``(..., 13)`` scores and legality); a ``box (...)`` tensor
    evaluates only that box per game (``(...)`` outputs), which is all a step needs.
    ``scores=False`` skips the scores and the bonus (legality alone is one comparison without the
    forced joker).
    """
    T = tables(dice_idx.device)
    chosen = None if box is None else box.long().unsqueeze(-1)
    open_ = (card if chosen is None else card.gather(-1, chosen)) == OPEN
    legal, row = open_, dice_idx
    yahtzee_box = card[..., YAHTZEE_BOX]
    # Only the forced joker bars an open box: legality alone needs no joker work otherwise.
    yahtzee = take(T.is_yahtzee, dice_idx) if scores or rules.joker == "forced" else None
    if rules.joker_active and yahtzee is not None:
        joker = yahtzee & (yahtzee_box != OPEN)
        face = take(T.yahtzee_face, dice_idx).clamp(min=0)
        own_open = card.gather(-1, face.unsqueeze(-1)).squeeze(-1) == OPEN
        # Full house and the straights take joker values only once the Yahtzee's own upper box is
        # filled (under the forced rule the dice must go there first; under free choice they may
        # go elsewhere, but then they are no joker). This is the rule behind 254.5896.
        row = dice_idx.add(joker > own_open, alpha=252)  # joker and its own box filled: the joker rows follow
        if rules.joker == "forced":
            boxes = torch.arange(N_BOXES, device=card.device) if chosen is None else chosen
            lower_open = (card[..., 6:] == OPEN).any(-1, keepdim=True)
            allowed = torch.where(
                own_open.unsqueeze(-1),
                boxes == face.unsqueeze(-1),  # the Yahtzee's own upper box first
                torch.where(lower_open, boxes >= 6, boxes < 6),  # then any lower box, then any upper
            )
            legal = open_ & (~joker.unsqueeze(-1) | allowed)
    if chosen is not None:
        legal = legal.squeeze(-1)
    if not scores:
        return None, legal, None
    if rules.yahtzee_bonus:
        bonus = (yahtzee & (yahtzee_box == 50)) * YAHTZEE_BONUS
    else:
        bonus = torch.zeros_like(dice_idx)
    if chosen is None:
        values = take(T.score_rows, row)
    else:
        values = take(T.score_rows.view(-1), row * N_BOXES + box.long())
    return values * legal, legal, bonus  # an illegal box scores 0


def box_options(
    dice_idx: torch.Tensor, card: torch.Tensor, rules: Rules
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """What each box would score now, which boxes are legal, and the Yahtzee bonus earned.

    Returns ``(scores (..., 13) int64, legal (..., 13) bool, bonus (...) int64)`` where ``bonus``
    is the +100 Yahtzee bonus (0 or 100) that scoring these dice in any legal box earns.
    Scores of illegal boxes are 0.
    """
    return _evaluate(dice_idx, card, rules)


def legal_mask(dice_idx: torch.Tensor, card: torch.Tensor, rules: Rules) -> torch.Tensor:
    """Which boxes may be scored with these dice ``(..., 13)``, without computing the scores."""
    return _evaluate(dice_idx, card, rules, scores=False)[1]


def score_box(
    dice_idx: torch.Tensor,
    card: torch.Tensor,
    yahtzee_bonuses: torch.Tensor,
    box: torch.Tensor,
    rules: Rules,
    scoring: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Score ``dice`` in ``box``: returns ``(new_card, new_yahtzee_bonuses, reward, legal)``.

    The reward is the change in total score (box + upper bonus reached + Yahtzee bonus).
    ``legal`` says per game whether the box was allowed; illegal games are left unchanged, and
    so are games outside ``scoring`` (a bool mask; None = every game scores).
    """
    box = box.long()
    value, legal, bonus = _evaluate(dice_idx, card, rules, box=box)
    write = legal if scoring is None else legal & scoring
    before = upper_sum(card)
    chosen = box.unsqueeze(-1)
    new_card = card.scatter(-1, chosen, torch.where(write, value, card.gather(-1, chosen).squeeze(-1)).unsqueeze(-1))
    crossed = write & (box < 6) & (before < UPPER_BONUS_THRESHOLD) & (before + value >= UPPER_BONUS_THRESHOLD)
    bonus = bonus * write
    reward = value * write + crossed * UPPER_BONUS + bonus
    return new_card, yahtzee_bonuses + bonus // YAHTZEE_BONUS, reward, legal


def empty_card(batch_shape: tuple[int, ...], rules: Rules, device: torch.device | str | None = None) -> torch.Tensor:
    """A fresh card: boxes in play open, boxes out of play filled with 0."""
    card = torch.full((*batch_shape, N_BOXES), OPEN, dtype=torch.int64, device=device)
    for b in rules.boxes_out_of_play:
        card[..., b] = 0
    return card
