"""The exact last turn of a match: hand-checked win probabilities, and the engine agrees with them."""

import pytest
import torch

from yahtzee_lightning.game import OPEN, Rules, engine, tables
from yahtzee_lightning.solver.endgame import win_values

RULES = Rules()
P_YAHTZEE = 2783176 / 60466176  # P(a Yahtzee within three rolls, keeping the most common face)


def card_with_open(box: int, upper: int = 0) -> torch.Tensor:
    """A full card but ``box``; its upper boxes add up to ``upper`` (every one holds what it can)."""
    card = torch.tensor([0, 0, 0, 0, 0, 0, 20, 20, 25, 30, 40, 50, 20])
    for b in range(5, -1, -1):
        if b != box:
            card[b] = min(upper, 5 * (b + 1)) // (b + 1) * (b + 1)
            upper -= int(card[b])
    card[box] = OPEN
    return card


def start_value(card: torch.Tensor, need: int) -> float:
    """P(win) + P(draw) / 2 from the start of the turn: the best keep of every first roll."""
    T = tables()
    n = len(T.dice)
    keep_values, _ = win_values(
        T.dice, torch.zeros(n, dtype=torch.long), card.expand(n, 13), torch.full((n,), need), RULES
    )
    return float(T.first_roll @ keep_values.amax(-1).double())


@pytest.mark.parametrize(
    ("need", "value"),
    [(-1, 1.0), (0, P_YAHTZEE + (1 - P_YAHTZEE) / 2), (49, P_YAHTZEE), (50, P_YAHTZEE / 2), (51, 0.0)],
)
def test_needing_a_yahtzee(need, value):
    card = card_with_open(11)
    card[11] = OPEN
    assert start_value(card, need) == pytest.approx(value, abs=1e-12)


def test_a_draw_is_worth_half_and_the_keep_follows_the_need():
    """Chance left, 5 5 5 6 6 (27) before the last roll: needing 27 (a draw ties), keep them all;
    needing 28, re-roll one 5 for a sixth of a draw (a 6), which beats every other keep."""
    card = card_with_open(12)
    dice = torch.tensor([[5, 5, 5, 6, 6]])
    keep_values, box_values = win_values(dice, torch.tensor([1]), card.unsqueeze(0), torch.tensor([27]), RULES)
    assert int(keep_values.argmax()) == 31 and float(keep_values.max()) == 0.5
    assert float(box_values[0, 12]) == 0.5 and bool((box_values[0, :12] == float("-inf")).all())
    keep_values, _ = win_values(dice, torch.tensor([1]), card.unsqueeze(0), torch.tensor([28]), RULES)
    assert float(keep_values[0, 31]) == 0.0
    assert float(keep_values.max()) == pytest.approx(1 / 12) == float(keep_values[0, 0b11110])  # keep 5 5 6 6


def test_the_engine_wins_as_often_as_predicted():
    """Sixes left with 45 in the upper boxes and a Yahtzee scored, needing 58: four sixes win (24 +
    the 35 bonus) and so does any Yahtzee (the +100 bonus, as a joker or in sixes). Played with the
    best keeps through the game engine, the wins match the predicted probability."""
    card = card_with_open(5, upper=45)
    assert int(card[:6].clamp(min=0).sum()) == 45 and int(card[11]) == 50
    n, need = 20_000, torch.full((20_000,), 58)
    gen = torch.Generator().manual_seed(0)
    state = engine.new_games((n,), RULES, generator=gen, card=card.expand(n, 13).clone())
    start = state.score
    predicted = start_value(card, 58)
    for _ in range(3):
        keep_values, box_values = win_values(state.dice, state.roll, state.card, need, RULES)
        state = engine.step(state, keep_values.argmax(-1), box_values.argmax(-1), RULES, gen).state
    gain = state.score - start
    won = (gain > need).double() + 0.5 * (gain == need).double()
    assert 0.1 < predicted < 0.15
    assert abs(float(won.mean()) - predicted) < 4 * float(won.std()) / n**0.5


def test_only_the_last_turn():
    card = card_with_open(12)
    card[0] = OPEN
    with pytest.raises(ValueError, match="exactly one open box"):
        win_values(torch.tensor([[1, 1, 1, 1, 1]]), torch.tensor([0]), card.unsqueeze(0), torch.tensor([0]), RULES)
