"""Observation features: the fast paths (a row per dice multiset, values shared within a call)
give what the plain formulas give."""

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
