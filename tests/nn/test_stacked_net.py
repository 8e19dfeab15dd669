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
        {"dice_encoder": "onehot", "layout": "published"},  # LayerNorm and dropout in the heads
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


def test_a_members_outputs_do_not_depend_on_the_other_members():
    # 20 games a member: not a multiple of the CPU's SIMD block, so SiLU's and ELU's scalar tail
    # and the BLAS's choice of kernel for the one-output value layer would fall on different
    # members' rows in stacks of 1, 2 and 5 if the stacked pass computed them all in one call.
    torch.manual_seed(0)
    config = {"d_h": 20, "n_layers": 2, "head_hidden": 12, "activation": "silu"}
    nets = [PolicyValueNet(**config).eval() for _ in range(5)]
    obs = YahtzeeEnv(100, seed=3).reset()
    with torch.no_grad():
        five = StackedNet(PolicyValueNet(**config), 5).eval().load_(nets)(obs)
        for k in (1, 3):
            rows = slice(20 * k, 20 * (k + 1))
            one = StackedNet(PolicyValueNet(**config), 1).eval().load_([nets[k]])(obs[rows])
            pair = StackedNet(PolicyValueNet(**config), 2).eval().load_([nets[k], nets[0]])(obs[20 * k : 20 * k + 40])
            for got_five, got_one, got_pair in zip(five, one, pair, strict=True):
                assert torch.equal(got_five[rows], got_one)
                assert torch.equal(got_five[rows], got_pair[:20])


def test_the_one_kernel_activation_a_gpu_takes_gives_each_members_outputs(monkeypatch):
    """On a GPU the activations take the whole stacked tensor (one kernel, not one a member); the
    same code path, run here on the CPU, still gives each member its own outputs (to rounding: the
    CPU's scalar tail is why the CPU itself goes member by member)."""
    from yahtzee_lightning.nn import ensemble

    torch.manual_seed(0)
    config = {"d_h": 20, "n_layers": 2, "head_hidden": 12, "activation": "silu"}
    nets = [PolicyValueNet(**config).eval() for _ in range(3)]
    stacked = StackedNet(PolicyValueNet(**config), 3).eval().load_(nets)
    obs = YahtzeeEnv(60, seed=3).reset()
    calls = []
    real = torch.nn.SiLU.forward
    monkeypatch.setattr(torch.nn.SiLU, "forward", lambda self, x: calls.append(x.shape[0]) or real(self, x))
    monkeypatch.setattr(ensemble, "PER_MEMBER_DEVICES", frozenset())
    with torch.no_grad():
        out = stacked(obs)
        for k, net in enumerate(nets):
            calls.clear()
            for got, want in zip(out, net(obs[20 * k : 20 * (k + 1)]), strict=True):
                torch.testing.assert_close(got[20 * k : 20 * (k + 1)], want)
        calls.clear()
        stacked(obs)
    assert calls and all(rows == 60 for rows in calls)  # every activation saw all three members' rows
