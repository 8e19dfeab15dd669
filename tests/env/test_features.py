"""Observation features: the fast paths (a row per dice multiset, values shared within a call)
give what the plain formulas give."""

import pytest
import torch
from tensordict import TensorDict

from yahtzee_lightning.env import YahtzeeEnv
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.env.features import FEATURES, PRESETS, encode
from yahtzee_lightning.game import Rules, upper_sum


def _states(n: int = 300) -> TensorDict:
    env = YahtzeeEnv(n, seed=3)
    td = env.reset()
    for _ in range(10):  # filled boxes, upper sums, later turns
        td["action", "keep"] = torch.randint(0, 32, (n,))
        td["action", "box"] = torch.multinomial(td[K.BOX_MASK].float(), 1).squeeze(-1)
        td = env.step_mdp(env.step(td))
    return td


def test_dice_features_are_the_one_hot_and_counts_of_the_sorted_dice():
    td = _states()
    d = td[K.DICE].long() - 1
    onehot = torch.nn.functional.one_hot(d, 6).flatten(-2).float()
    counts = torch.nn.functional.one_hot(d, 6).sum(-2).float() / 5
    rules = Rules()
    assert torch.equal(FEATURES["dice_onehot"].fn(td, rules), onehot)
    assert torch.equal(FEATURES["dice_bin"].fn(td, rules), counts)
    assert torch.equal(encode(td, ["dice_combined"], rules), torch.cat([onehot, counts], -1))
    # Dice in another order: the features of the same multiset (the sorted dice's one-hot).
    shuffled = td.clone()
    shuffled[K.DICE] = td[K.DICE].flip(-1)
    assert torch.equal(encode(shuffled, ["dice_combined"], rules), torch.cat([onehot, counts], -1))


def test_shared_values_do_not_leak_between_calls():
    td, other = _states(), _states(40)
    rules = Rules()
    for preset in PRESETS:
        if preset == "two_player":
            continue
        first = encode(td, preset, rules)
        assert encode(other, preset, rules).shape[0] == 40  # another state between two calls
        assert torch.equal(encode(td, preset, rules), first)
    progress = FEATURES["bonus_progress"].fn(td, rules).squeeze(-1)
    assert torch.equal(progress, (upper_sum(td[K.CARD]).float() / 63).clamp(max=1))


@pytest.mark.parametrize("rules", [Rules(), Rules(boxes=(0, 12))], ids=["full", "two boxes"])
def test_the_progress_features_read_from_tables_equal_their_formulas_bit_for_bit(rules):
    """bonus_progress and turn_progress are one lookup a step: the same floats as the formula, for
    every upper sum (0..105) and every turn (0..13)."""
    from yahtzee_lightning.env.features import bonus_progress, turn_progress
    from yahtzee_lightning.game.rules import UPPER_BONUS_THRESHOLD

    ups = torch.arange(106)
    card = torch.full((106, 13), -1)
    for face, (start, cap) in enumerate([(100, 5), (90, 10), (75, 15), (55, 20), (30, 25), (0, 30)]):
        card[:, face] = (ups - start).clamp(0, cap)  # the upper boxes filled to every sum 0..105
    td = {K.CARD: card, K.TURN: torch.arange(106) % 14}
    assert torch.equal(card[:, :6].sum(-1), ups)
    want_bonus = (ups.float() / UPPER_BONUS_THRESHOLD).clamp(max=1).unsqueeze(-1)
    want_turn = (td[K.TURN].float() / max(rules.n_turns - 1, 1)).clamp(max=1).unsqueeze(-1)
    assert torch.equal(bonus_progress(td, rules), want_bonus)
    assert torch.equal(turn_progress(td, rules), want_turn)
