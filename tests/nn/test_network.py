"""The policy/value network: config round trip, encoders, switches, heads, and the roll-gated policy."""

import json

import pytest
import torch
from torch import nn

from yahtzee_lightning.env import YahtzeeEnv
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.env.features import feature_size
from yahtzee_lightning.game import Rules
from yahtzee_lightning.nn import (
    DICE_ENCODERS,
    LOG_PROB,
    VALUE,
    PolicyModule,
    PolicyValueNet,
    ReplayDropout,
    distribution,
    transfer_weights,
)
from yahtzee_lightning.players.agent import AgentPlayer

SMALL = {"d_h": 32, "n_layers": 2, "head_hidden": 16}


def _states(n: int = 64, rolls: int = 0, seed: int = 0):
    """``n`` fresh full-game states after ``rolls`` keep decisions (roll index == ``rolls``)."""
    env = YahtzeeEnv(n, seed=seed)
    td = env.reset()
    g = torch.Generator().manual_seed(seed)
    for _ in range(rolls):
        td[K.KEEP] = torch.randint(0, 32, (n,), generator=g)
        td[K.BOX] = torch.zeros(n, dtype=torch.long)
        td = env.step(td)["next"]
    return td


def test_config_is_json_and_rebuilds_the_same_network():
    net = PolicyValueNet(dice_encoder="pos_emb", features=["card_mask", "roll_onehot"], roll_head="bernoulli", **SMALL)
    config = json.loads(json.dumps(net.config))
    twin = PolicyValueNet(**config)
    twin.load_state_dict(net.state_dict())
    assert twin.config == net.config
    obs = _states()
    net.eval()
    twin.eval()
    for a, b in zip(net(obs), twin(obs), strict=True):
        assert torch.equal(a, b)


def test_rules_travel_with_the_config():
    rules = Rules(joker="forced", yahtzee_bonus=True)
    net = PolicyValueNet(rules=rules.to_dict(), **SMALL)
    assert PolicyValueNet(**net.config).rules == rules


@pytest.mark.parametrize("encoder", DICE_ENCODERS)
def test_every_dice_encoder_runs_and_sizes_its_input(encoder):
    net = PolicyValueNet(dice_encoder=encoder, features="single_turn", d_emb=4, **SMALL)
    obs = _states(8)
    x = net.encode(obs)
    rest = feature_size(["card_mask", "bonus_progress", "roll_onehot"])
    dice = {"onehot": 30, "bin": 6, "combined": 36, "emb": 5 * 4, "pos_emb": 5 * 4}[encoder]
    assert x.shape == (8, dice + rest)
    assert net.trunk[0].in_features == dice + rest
    learned = encoder in ("emb", "pos_emb")
    assert (net.dice_embedding is not None) == learned
    if learned:
        assert net.dice_embedding.embed.weight.shape == (6, 4)
        assert bool(net.dice_embedding.position.abs().sum() > 0) == (encoder == "pos_emb")


def test_unknown_choices_fail_by_name():
    with pytest.raises(ValueError, match="dice_encoder"):
        PolicyValueNet(dice_encoder="glove")
    with pytest.raises(ValueError, match="roll_head"):
        PolicyValueNet(roll_head="poisson")
    with pytest.raises(ValueError, match="unknown features"):
        PolicyValueNet(features=["card_mask", "dice_colour"])


def test_trunk_layers_and_switches():
    net = PolicyValueNet(n_layers=3, d_h=24, dropout=0.1)
    kinds = [type(m) for m in net.trunk]
    assert kinds == [nn.Linear, nn.LayerNorm, nn.SiLU, ReplayDropout] * 3  # dropout whose masks can be replayed
    bare = PolicyValueNet(n_layers=2, d_h=24, dropout=0.0, layer_norm=False, activation="relu")
    assert [type(m) for m in bare.trunk] == [nn.Linear, nn.Identity, nn.ReLU] * 2
    # Baseline: the study's width and depth, one hidden layer per head.
    base = PolicyValueNet()
    assert (base.config["d_h"], base.config["n_layers"], base.config["dropout"]) == (600, 3, 0.1)
    for head in (base.roll_head, base.score_head, base.value_head):
        assert sum(isinstance(m, nn.Linear) for m in head) == 2


@pytest.mark.parametrize("roll_head, width", [("categorical", 32), ("bernoulli", 5)])
def test_heads_shapes_mask_and_elu_value(roll_head, width):
    net = PolicyValueNet(roll_head=roll_head, **SMALL)
    obs = _states(16, rolls=2)
    roll_logits, box_logits, value = net(obs)
    assert roll_logits.shape == (16, width) and box_logits.shape == (16, 13) and value.shape == (16,)
    assert torch.isneginf(box_logits[~obs[K.BOX_MASK]]).all()
    assert torch.isfinite(box_logits[obs[K.BOX_MASK]]).all()
    assert (value >= -1).all()


def test_illegal_boxes_are_never_sampled():
    torch.manual_seed(0)
    net = PolicyValueNet(**SMALL)
    obs = _states(32, rolls=2)
    obs[K.BOX_MASK] = obs[K.BOX_MASK] & (torch.arange(13) % 3 == 0)  # only boxes 0, 3, 6, 9, 12 legal
    dist, _ = distribution(net, obs)
    boxes = torch.stack([dist.sample()[1] for _ in range(50)])
    assert (boxes % 3 == 0).all()
    assert (dist.mode[1] % 3 == 0).all()


@pytest.mark.parametrize("roll_head", ["categorical", "bernoulli"])
def test_log_prob_counts_only_the_head_the_roll_index_uses(roll_head):
    net = PolicyValueNet(roll_head=roll_head, **SMALL).eval()
    keeps = torch.arange(32)
    for rolls in (0, 1, 2):
        obs = _states(1, rolls=rolls).expand(32).clone()
        dist, _ = distribution(net, obs)
        box0 = torch.zeros(32, dtype=torch.long)
        box_other = torch.full((32,), int(obs[K.BOX_MASK][0].nonzero()[-1]))
        lp, lp_other_box = dist.log_prob(keeps, box0), dist.log_prob(keeps, box_other)
        if rolls < 2:
            # The keep head alone: the box is ignored and the 32 patterns form a distribution.
            assert torch.equal(lp, lp_other_box)
            assert torch.allclose(lp.exp().sum(), torch.tensor(1.0), atol=1e-5)
        else:
            # The box head alone: the keep is ignored.
            assert torch.equal(lp, dist.log_prob(torch.zeros(32, dtype=torch.long), box0))
            legal = obs[K.BOX_MASK][0]
            dist13, _ = distribution(net, obs[:13])
            all_boxes = dist13.log_prob(keeps[:13], torch.arange(13))
            assert torch.allclose(all_boxes[legal].exp().sum(), torch.tensor(1.0), atol=1e-5)


def test_bernoulli_keep_entropy_is_the_sum_over_dice():
    net = PolicyValueNet(roll_head="bernoulli", **SMALL).eval()
    dist, _ = distribution(net, _states(4))
    bits = torch.distributions.Bernoulli(logits=net(_states(4))[0])
    assert torch.allclose(dist.keep_entropy(), bits.entropy().sum(-1))


def test_policy_module_in_a_torchrl_collector_records_consistent_log_probs():
    from torchrl.collectors import Collector

    net = PolicyValueNet(**SMALL)
    env = YahtzeeEnv(4, seed=0)
    collector = Collector(
        env,
        PolicyModule(net),
        frames_per_batch=156,
        total_frames=156,
        trust_policy=True,
        auto_register_policy_transforms=False,
    )
    batch = next(iter(collector))
    collector.shutdown()
    assert batch.shape == (4, 39)
    assert bool(batch["next", K.DONE][:, -1].all())  # whole games
    flat = batch.reshape(-1)
    dist, value = distribution(net.eval(), flat)
    assert torch.allclose(flat[LOG_PROB], dist.log_prob(flat[K.KEEP], flat[K.BOX]), atol=1e-5)
    assert torch.allclose(flat[VALUE], value, atol=1e-5)


def test_agent_player_is_greedy_or_samples():
    torch.manual_seed(0)
    net = PolicyValueNet(**SMALL)
    obs = _states(64, rolls=1)
    greedy = AgentPlayer(net, greedy=True)
    assert torch.equal(greedy.act(obs)[0], greedy.act(obs)[0])
    assert torch.equal(greedy.act(obs)[0], net.eval()(obs)[0].argmax(-1))
    sampled = AgentPlayer(net, greedy=False)
    assert not torch.equal(sampled.act(obs)[0], sampled.act(obs)[0])


def test_a_network_starts_from_one_that_differs_in_dropout_alone():
    """Dropout has no weights (a training choice): a fine-tune without it starts from an agent trained
    with it (its layers sit at other module indices) and plays exactly as that agent; a network of
    another width or roll head is refused, naming the layer."""
    torch.manual_seed(0)
    kwargs = {"d_h": 16, "n_layers": 2, "head_hidden": 8, "features": "full_game"}
    source, target = PolicyValueNet(dropout=0.1, **kwargs), PolicyValueNet(dropout=0.0, **kwargs)
    assert len(source.trunk) != len(target.trunk)
    transfer_weights(source, target)
    obs = YahtzeeEnv(8, seed=1).reset()
    source.eval()
    for a, b in zip(source(obs), target(obs), strict=True):
        assert torch.equal(a, b)
    transfer_weights(target, PolicyValueNet(dropout=0.2, **kwargs))  # and back the other way
    with pytest.raises(ValueError, match=r"differ in trunk\.0\.weight: \(16, \d+\) and \(32, \d+\)"):
        transfer_weights(source, PolicyValueNet(**{**kwargs, "d_h": 32}))
    with pytest.raises(ValueError, match=r"differ in roll_head"):
        transfer_weights(source, PolicyValueNet(roll_head="bernoulli", **kwargs))
