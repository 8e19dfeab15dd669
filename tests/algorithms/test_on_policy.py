"""On-policy means the policy that acted: the update's first log-probabilities are the recorded ones.

With dropout the behaviour policy is the network under the masks it acted with; the collection
records them and every loss replays them. So, for every on-policy algorithm, single or packed, at
dropout 0 and 0.1, the log-probabilities of the taken actions that the update differentiates at a
member's first optimizer step equal (to the bit) those the collection recorded: PPO's first ratio
is exactly 1. The same test fails on an update that draws fresh masks (the fault this guards).
"""

import pytest
import torch
from quick_fit import fit_quietly
from torch import nn

from yahtzee_lightning.algorithms import A2C, PPO, AnchoredPPO, Reinforce
from yahtzee_lightning.algorithms.policy_gradient import PolicyGradient
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.nn import DROPOUT_MASK, LOG_PROB, PolicyValueNet, ReplayDropout, as_played, distribution

TINY = {"d_h": 32, "n_layers": 2, "head_hidden": 16, "evaluations": 1, "eval_games": 4, "final_eval_games": 0}
ALGORITHMS = [Reinforce, A2C, PPO, AnchoredPPO]


def _first_log_probs(cls, dropout: float, ensemble: int | None) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per member, (recorded, differentiated) log-probabilities at its first optimizer step."""
    firsts: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    class Probe(cls):
        def evaluate_actions(self, obs, dist_value=None):
            out = super().evaluate_actions(obs, dist_value)
            k = self._member if isinstance(self._member, int) else 0
            if k not in firsts:
                firsts[k] = (obs[LOG_PROB].detach().clone(), out[0].detach().clone())
            return out

    torch.manual_seed(0)
    model = Probe(**TINY, dropout=dropout, total_games=8, games_per_batch=4, diagnose_games=0, ensemble=ensemble)
    fit_quietly(model)
    return [firsts[k] for k in sorted(firsts)]


@pytest.mark.parametrize("dropout", [0.0, 0.1])
@pytest.mark.parametrize("cls", ALGORITHMS, ids=lambda c: c.__name__)
def test_the_update_differentiates_the_policy_that_acted(cls, dropout):
    (recorded, learned), *_ = _first_log_probs(cls, dropout, None)
    assert torch.equal(recorded, learned)
    assert float((learned - recorded).exp().max()) == 1.0  # PPO's first ratio, exactly 1


@pytest.mark.parametrize("dropout", [0.0, 0.1])
@pytest.mark.parametrize("cls", [A2C, PPO], ids=lambda c: c.__name__)
def test_each_member_of_a_pack_differentiates_the_policy_that_acted(cls, dropout):
    """A pack plays through the stacked network (batched products: its rounding may differ from a
    member's own layers by an ulp); what must hold is that each member learns under its own masks."""
    members = _first_log_probs(cls, dropout, 3)
    assert len(members) == 3
    for recorded, learned in members:
        torch.testing.assert_close(learned, recorded, rtol=0, atol=1e-5)
    # Fresh masks instead of the recorded ones move the log-probabilities far more than that.


def test_fresh_masks_would_learn_another_policy():
    """The fault the replay removes: the update's own dropout draws give other log-probabilities."""
    torch.manual_seed(0)
    model = PPO(**TINY, dropout=0.1, total_games=8, games_per_batch=4, diagnose_games=0)
    batch = model.collect().reshape(-1)
    assert batch[DROPOUT_MASK].shape == (batch.shape[0], 2, 32)
    assert 0.8 < float(batch[DROPOUT_MASK].mean()) < 1.0  # about 1 - p of the units kept
    model.net.train()
    with torch.no_grad():
        replayed = as_played(model.net, batch)[0].log_prob(batch[K.KEEP], batch[K.BOX])
        fresh = distribution(model.net, batch, batch["features"])[0].log_prob(batch[K.KEEP], batch[K.BOX])
    assert torch.equal(replayed, batch[LOG_PROB])
    assert float((fresh - batch[LOG_PROB]).abs().max()) > 1e-3


def test_without_a_mask_the_network_is_the_usual_dropout():
    """Evaluation plays the mean network; a bare training forward draws fresh masks."""
    torch.manual_seed(0)
    net = PolicyValueNet(d_h=16, n_layers=2, head_hidden=8, dropout=0.5)
    assert sum(isinstance(m, ReplayDropout) for m in net.trunk) == 2 and net.dropout_shape == (2, 16)
    x = torch.ones(1000, 16)
    drop = net.trunk[3]
    drop.eval()
    assert torch.equal(drop(x), x)
    drop.train()
    y = drop(x)
    assert set(y.unique().tolist()) == {0.0, 2.0}
    mask = net.draw_dropout_mask(1000)[:, 0]
    assert torch.equal(drop.eval()(x, mask), x * mask * 2.0)  # a given mask applies in any mode
    assert PolicyValueNet(d_h=16, n_layers=1, dropout=0.0).draw_dropout_mask(5) is None


def test_a_network_whose_dropout_cannot_replay_its_masks_is_refused():
    class PlainDropout(PPO):
        def build_network(self):
            net = super().build_network()
            net.trunk[3] = nn.Dropout(0.2)
            return net

    with pytest.raises(ValueError, match=r"^dropout: PlainDropout .* trunk\.3 \(Dropout, p=0\.2\) cannot replay"):
        PlainDropout(**TINY, dropout=0.1, total_games=8, games_per_batch=4)


def test_saturation_signs_are_the_raw_logits_and_the_taken_log_probs():
    roll = torch.tensor([0, 2])
    keep = torch.zeros(2, 32)
    keep[0, 5] = 3000.0
    box = torch.zeros(2, 13)
    box[1, 2] = -40.0
    box[1, 3] = float("-inf")
    from yahtzee_lightning.nn import TurnDistribution

    dist = TurnDistribution(keep, box, roll)
    log_prob = dist.log_prob(torch.tensor([5, 0]), torch.tensor([0, 0]))
    signs = PolicyGradient.saturation(dist, log_prob)
    assert float(signs["max_logit_keep"]) == 3000.0 and float(signs["max_logit_box"]) == 40.0
    assert float(signs["log_prob_taken"]) == pytest.approx(float(log_prob.mean()))
