"""StackedNet: K members' forward pass in one call gives each member's own outputs."""

import pytest
import torch

from yahtzee_lightning.env import YahtzeeEnv
from yahtzee_lightning.nn import PolicyValueNet
from yahtzee_lightning.nn.ensemble import StackedNet


@pytest.mark.parametrize(
    "config",
    [
        {"dice_encoder": "combined"},
        {"dice_encoder": "pos_emb", "roll_head": "bernoulli"},
        {"dice_encoder": "emb", "layer_norm": False, "features": "all"},
    ],
)
def test_the_stacked_forward_is_each_members_forward(config):
    torch.manual_seed(0)
    nets = [PolicyValueNet(d_h=16, n_layers=2, head_hidden=8, **config).eval() for _ in range(3)]
    stacked = StackedNet(PolicyValueNet(d_h=16, n_layers=2, head_hidden=8, **config), 3).eval().load_(nets)
    obs = YahtzeeEnv(12, seed=1).reset()
    with torch.no_grad():
        out = stacked(obs)
        for k, net in enumerate(nets):
            for got, want in zip(out, net(obs[4 * k : 4 * (k + 1)]), strict=True):
                torch.testing.assert_close(got[4 * k : 4 * (k + 1)], want)
        nets[1].trunk[0].weight.add_(1.0)  # a copy of the weights: refreshed only by load_
        assert torch.equal(stacked(obs)[2], out[2])
        assert not torch.equal(stacked.load_(nets)(obs)[2][4:8], out[2][4:8])


def test_a_layer_it_cannot_batch_is_named():
    net = PolicyValueNet(d_h=16, n_layers=1, head_hidden=8)
    net.value_head[0] = torch.nn.Bilinear(16, 16, 8)
    with pytest.raises(ValueError, match="cannot batch value_head.0 \\(Bilinear\\)"):
        StackedNet(net, 2)
