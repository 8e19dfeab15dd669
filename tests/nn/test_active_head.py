"""Each row runs only the policy head that acts there, where the caller knows the rows' rolls.

The keep head acts before the last roll, the box head at it; the other head's logits reach no
action, log-probability or gradient. Given the rows' rolls, the network leaves it out: the active
logits and the values are those of the full forward pass (to float tolerance: the products have
other shapes), the inactive ones placeholders.
"""

from __future__ import annotations

import pytest
import torch

from yahtzee_lightning.env import YahtzeeEnv
from yahtzee_lightning.nn import WHOLE_TURNS, PolicyModule, PolicyValueNet, network
from yahtzee_lightning.nn.ensemble import StackedNet


def whole_turns(games: int = 4, turns: int = 3, seed: int = 0):
    """Flat steps of ``games`` games' first ``turns`` turns, random legal actions: rows in whole turns."""
    torch.manual_seed(seed)
    return YahtzeeEnv(games, seed=seed).rollout(3 * turns, break_when_any_done=False).reshape(-1)


def assert_active_parts_equal(part, full, roll: torch.Tensor, box_mask: torch.Tensor) -> None:
    rolling = roll < 2
    torch.testing.assert_close(part[0][rolling], full[0][rolling])
    torch.testing.assert_close(part[1][~rolling], full[1][~rolling])
    torch.testing.assert_close(part[2], full[2])
    assert (part[0][~rolling] == 0).all()  # placeholders: nothing learnt, nothing read
    placeholder_box = part[1][rolling]
    assert (placeholder_box[box_mask[rolling]] == 0).all()
    assert torch.isneginf(placeholder_box[~box_mask[rolling]]).all()


@pytest.mark.parametrize("layout", ["standard", "published"])
@pytest.mark.parametrize("roll_head", ["categorical", "bernoulli"])
@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_whole_turns_give_the_full_forward_on_the_heads_that_act(roll_head, dropout, layout):
    torch.manual_seed(1)
    net = PolicyValueNet(d_h=16, n_layers=2, head_hidden=8, roll_head=roll_head, dropout=dropout, layout=layout)
    obs = whole_turns()
    mask = net.draw_dropout_mask(obs.shape[0])
    full = net(obs, None, mask)
    part = net(obs, None, mask, WHOLE_TURNS)
    assert_active_parts_equal(part, full, obs["roll"], obs["box_mask"])
    for r in range(3):  # a collection step: every row at one roll
        rows = obs["roll"] == r
        sub = obs[rows]
        one = net(sub, None, None if mask is None else mask[rows], r)
        assert_active_parts_equal(one, tuple(x[rows] for x in full), sub["roll"], sub["box_mask"])


@pytest.mark.parametrize("layout", ["standard", "published"])
@pytest.mark.parametrize("split", [True, False], ids=["split", "unsplit"])
@pytest.mark.parametrize("roll_head", ["categorical", "bernoulli"])
def test_rows_in_any_order_given_their_rolls_give_the_full_forward_on_the_heads_that_act(
    roll_head, split, layout, monkeypatch
):
    """PPO's minibatches of random steps: each row's roll as a tensor, each head on its own rows
    (split: the CPU's way) or on every row with the other zeroed (a GPU's way, run here on the CPU);
    a published layout's heads under their own rows' masks."""
    if not split:
        monkeypatch.setattr(network, "SPLIT_ROWS_DEVICES", frozenset())
    torch.manual_seed(4)
    net = PolicyValueNet(d_h=16, n_layers=2, head_hidden=8, roll_head=roll_head, dropout=0.2, layout=layout)
    obs = whole_turns()[torch.randperm(36)]
    mask = net.draw_dropout_mask(obs.shape[0])
    full = net(obs, None, mask)
    part = net(obs, None, mask, obs["roll"])
    assert_active_parts_equal(part, full, obs["roll"], obs["box_mask"])
    for rows in (obs["roll"] < 2, obs["roll"] == 2):  # a minibatch of one head's rows only
        sub = obs[rows]
        one = net(sub, None, mask[rows], sub["roll"])
        assert_active_parts_equal(one, tuple(x[rows] for x in full), sub["roll"], sub["box_mask"])


@pytest.mark.parametrize("layout", ["standard", "published"])
def test_a_stacked_pack_leaves_out_the_same_heads(layout):
    torch.manual_seed(2)
    members = [PolicyValueNet(d_h=16, n_layers=1, head_hidden=8, dropout=0.0, layout=layout) for _ in range(2)]
    stacked = StackedNet(members[0], 2).load_(members)
    obs = whole_turns(games=6)  # member-major: each member's 3 games, whole turns
    full = stacked(obs)
    part = stacked(obs, None, None, WHOLE_TURNS)
    assert_active_parts_equal(part, full, obs["roll"], obs["box_mask"])


@pytest.mark.parametrize("layout", ["standard", "published"])
@pytest.mark.parametrize("split", [True, False], ids=["split", "unsplit"])
def test_the_gradient_of_a_loss_is_the_one_of_every_head_on_every_row(split, layout, monkeypatch):
    """What the update differentiates is unchanged: the inactive head had no gradient anyway."""
    if not split:
        monkeypatch.setattr(network, "SPLIT_ROWS_DEVICES", frozenset())
    torch.manual_seed(3)
    net = PolicyValueNet(d_h=16, n_layers=2, head_hidden=8, dropout=0.1, layout=layout)
    obs = whole_turns()
    mask = net.draw_dropout_mask(obs.shape[0])
    rolling = obs["roll"] < 2
    grads = []
    for rolls in (None, WHOLE_TURNS, obs["roll"]):
        net.zero_grad()
        roll_logits, box_logits, value = net(obs, None, mask, rolls)
        keep_lp = roll_logits.log_softmax(-1).gather(-1, obs["action", "keep"].unsqueeze(-1)).squeeze(-1)
        safe = torch.where(torch.isinf(box_logits).all(-1, keepdim=True), 0.0, box_logits)
        box_lp = safe.log_softmax(-1).gather(-1, obs["action", "box"].unsqueeze(-1)).squeeze(-1)
        (torch.where(rolling, keep_lp, box_lp).sum() + value.pow(2).sum()).backward()
        grads.append([p.grad.clone() for p in net.parameters()])
    for every_head, *given_rolls in zip(*grads, strict=True):
        for grad in given_rolls:
            torch.testing.assert_close(grad, every_head)


def test_bad_rolls_are_refused_by_name():
    net = PolicyValueNet(d_h=16, n_layers=1, head_hidden=8, dropout=0.0)
    obs = whole_turns()
    with pytest.raises(ValueError, match="multiples of 3"):
        net(obs[:4], None, None, WHOLE_TURNS)
    with pytest.raises(ValueError, match="rolls must be"):
        net(obs, None, None, "sometimes")
    with pytest.raises(ValueError, match="one roll a row"):
        net(obs, None, None, obs["roll"][:5])
    members = [PolicyValueNet(d_h=16, n_layers=1, head_hidden=8, dropout=0.0) for _ in range(2)]
    stacked = StackedNet(members[0], 2).load_(members)
    with pytest.raises(ValueError, match="not a tensor of rows' rolls"):
        stacked(obs, None, None, obs["roll"])
    with pytest.raises(ValueError, match="roll must be 0..2"):
        PolicyModule(net)(YahtzeeEnv(2, seed=0).reset(), roll=3)
