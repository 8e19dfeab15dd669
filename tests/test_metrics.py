"""Training and policy-collapse metrics (docs/metrics.md)."""

import math

import pytest
import torch

from yahtzee_lightning.metrics import action_counts, approx_kl, explained_variance, mask_diversity, top_k_share


def test_explained_variance():
    returns = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert float(explained_variance(returns, returns)) == pytest.approx(1.0)
    assert float(explained_variance(torch.full((4,), 2.5), returns)) == pytest.approx(0.0)
    assert explained_variance(-returns, returns) < 0  # worse than a constant
    assert math.isnan(explained_variance(returns, torch.ones(4)))


def test_mask_diversity_and_top_k_share_detect_collapse():
    varied = action_counts(torch.arange(32).repeat(3), 32)
    collapsed = action_counts(torch.tensor([31] * 90 + [0] * 6), 32)
    assert mask_diversity(varied) == 32 and mask_diversity(collapsed) == 2
    assert float(top_k_share(varied, 3)) == pytest.approx(3 / 32)
    assert float(top_k_share(collapsed, 1)) == pytest.approx(90 / 96)
    assert top_k_share(collapsed, 3) == 1.0
    assert math.isnan(top_k_share(action_counts(torch.tensor([], dtype=torch.long), 32)))


def test_action_counts_count_only_where_asked():
    actions = torch.tensor([[1, 1, 2], [0, 2, 2]])
    where = torch.tensor([[True, False, True], [True, True, False]])
    assert action_counts(actions, 4).tolist() == [1, 2, 3, 0]
    assert action_counts(actions, 4, where).tolist() == [1, 1, 2, 0]


def test_approx_kl_is_zero_for_the_same_policy_and_matches_the_exact_kl():
    g = torch.Generator().manual_seed(0)
    old = torch.distributions.Categorical(logits=torch.randn(32, generator=g))
    new = torch.distributions.Categorical(logits=old.logits + 0.3 * torch.randn(32, generator=g))
    torch.manual_seed(0)
    actions = old.sample((200_000,))
    assert approx_kl(old.log_prob(actions), old.log_prob(actions)) == 0.0
    exact = float(torch.distributions.kl_divergence(old, new))
    assert float(approx_kl(old.log_prob(actions), new.log_prob(actions))) == pytest.approx(exact, rel=0.1)
