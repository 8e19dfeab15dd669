"""The advantages A2C and PPO learn from: TD(0) at lambda 0, the game's return-to-go at lambda 1."""

import pytest
import torch
from quick_fit import SMALL

from yahtzee_lightning.algorithms import A2C
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.nn import VALUE


@pytest.fixture(scope="module")
def played():
    torch.manual_seed(0)
    model = A2C(games_per_batch=4, total_games=8, seed=0, **SMALL)
    return model, model.collect().clone()


def test_lambda_zero_is_the_one_step_td_error(played):
    model, batch = played
    advantage, returns = model.advantages(batch, 0.9, 0.0)
    nxt = batch["next"]
    reward, terminated = nxt[K.REWARD].squeeze(-1), nxt[K.TERMINATED].squeeze(-1)
    expected = reward + 0.9 * model.next_values(batch) * ~terminated - batch[VALUE]
    torch.testing.assert_close(advantage, expected)
    torch.testing.assert_close(returns, expected + batch[VALUE])


def test_lambda_one_without_discount_is_the_points_still_to_come(played):
    model, batch = played
    advantage, returns = model.advantages(batch, 1.0, 1.0)
    reward = batch["next", K.REWARD].squeeze(-1)  # every game fills the batch: one game a row
    to_go = reward.flip(-1).cumsum(-1).flip(-1)
    assert bool(batch["next", K.TERMINATED][:, -1].all()) and reward.sum(-1).min() > 0
    torch.testing.assert_close(returns, to_go, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(advantage, to_go - batch[VALUE], rtol=1e-4, atol=1e-3)
