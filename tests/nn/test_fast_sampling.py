"""Collection's fast path: the actions, log-probabilities and features the plain path gives."""

import pytest
import torch

from yahtzee_lightning.env import YahtzeeEnv
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.nn import FEATURES, LOG_PROB, PolicyModule, PolicyValueNet, TurnDistribution, carried


class _Plain(PolicyModule):
    """The same policy through TurnDistribution (a subclass's ``choose`` takes that path)."""

    def choose(self, td, dist):
        return super().choose(td, dist)


def _positions(n: int = 64) -> "torch.Tensor":
    env = YahtzeeEnv(n, seed=5)
    td = env.reset()
    played = PolicyModule(PolicyValueNet(d_h=16, n_layers=1, head_hidden=8))
    for _ in range(7):  # some rolls, a box or two: masks with illegal boxes
        td = env.step_mdp(env.step(played(td)))
    return td


@pytest.mark.parametrize("deterministic", [False, True])
def test_the_fast_path_plays_what_the_distribution_plays(deterministic):
    net = PolicyValueNet(d_h=16, n_layers=1, head_hidden=8)
    td = _positions()
    out = []
    for cls in (PolicyModule, _Plain):
        policy = cls(net, deterministic=deterministic)
        policy.generators = [torch.Generator().manual_seed(11), torch.Generator().manual_seed(12)]
        out.append(policy(td.clone()))
    fast, plain = out
    assert torch.equal(fast[K.KEEP], plain[K.KEEP]) and torch.equal(fast[K.BOX], plain[K.BOX])
    assert torch.equal(fast[LOG_PROB], plain[LOG_PROB])
    assert bool(fast[K.BOX_MASK].gather(-1, fast[K.BOX].unsqueeze(-1)).all())  # only legal boxes


def test_the_samples_follow_the_policy():
    """Gumbel-max draws with the categorical's own frequencies (8,000 draws of one position)."""
    logits = torch.tensor([[2.0, 0.0, -1.0] + [-30.0] * 29])
    box = torch.zeros(1, 13)
    dist = TurnDistribution(logits.expand(8000, -1), box.expand(8000, -1), torch.zeros(8000, dtype=torch.long))
    torch.manual_seed(0)
    keep, _ = dist.sample()
    freq = torch.bincount(keep, minlength=32)[:3].float() / 8000
    assert torch.allclose(freq, logits[0, :3].softmax(-1), atol=0.02)


def test_carried_features_are_the_features_and_give_the_same_forward():
    net = PolicyValueNet(d_h=16, n_layers=1, head_hidden=8, features="all", dropout=0.0)
    td = PolicyModule(net)(_positions())
    assert torch.equal(carried(td), net.fixed_features(td))
    fresh, reused = net(td), net(td, carried(td))
    assert all(torch.equal(a, b) for a, b in zip(fresh, reused, strict=True))
    with pytest.raises(ValueError, match="carried features have width 3"):
        net(td, td[FEATURES][..., :3])
