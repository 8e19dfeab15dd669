"""The network as TorchRL's actor and critic: collectors, GAE / TD(0) and ClipPPOLoss run on it."""

import pytest
import torch
from tensordict.nn import InteractionType, set_interaction_type
from torchrl.collectors import Collector
from torchrl.objectives import ClipPPOLoss
from torchrl.objectives.value import GAE, TD0Estimator

from yahtzee_lightning.env import YahtzeeEnv
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.nn import LOG_PROB, VALUE, PolicyValueNet, distribution, make_actor, make_critic

SMALL = {"d_h": 32, "n_layers": 1, "head_hidden": 16, "dropout": 0.0}


@pytest.fixture(scope="module")
def collected():
    torch.manual_seed(0)
    net = PolicyValueNet(**SMALL)
    actor = make_actor(net)
    collector = Collector(
        YahtzeeEnv(4, seed=0),
        actor,
        frames_per_batch=4 * 39,
        total_frames=4 * 39,
        auto_register_policy_transforms=False,
    )
    batch = next(iter(collector))
    collector.shutdown()
    return net, actor, batch


def test_probabilistic_actor_collects_whole_games_with_roll_gated_log_probs(collected):
    net, _, batch = collected
    assert batch.shape == (4, 39) and bool(batch["next", K.DONE][:, -1].all())
    flat = batch.reshape(-1)
    dist, _ = distribution(net, flat)
    assert torch.allclose(flat[LOG_PROB], dist.log_prob(flat[K.KEEP], flat[K.BOX]), atol=1e-5)
    # The log-prob of a keep step ignores the box entry, and the other way round.
    rolling = flat[K.ROLL] < 2
    other = flat.clone()
    other[K.BOX] = (other[K.BOX] + 1) % 13
    other[K.KEEP] = (other[K.KEEP] + 1) % 32
    lp_other = dist.log_prob(other[K.KEEP], other[K.BOX])
    assert not torch.allclose(lp_other[rolling], flat[LOG_PROB][rolling])
    assert not torch.allclose(lp_other[~rolling], flat[LOG_PROB][~rolling])


def test_greedy_interaction_plays_the_mode(collected):
    net, actor, batch = collected
    obs = batch[:, :6].reshape(-1).exclude("next", K.ACTION, LOG_PROB)
    with set_interaction_type(InteractionType.DETERMINISTIC), torch.no_grad():
        out = actor(obs.clone())
    keep, box = distribution(net, obs)[0].mode
    assert torch.equal(out[K.KEEP], keep) and torch.equal(out[K.BOX], box)


def test_gae_and_clip_ppo_loss_run_on_the_batch(collected):
    net, actor, batch = collected
    critic = make_critic(net)
    batch = batch.clone().exclude(VALUE, ("next", VALUE))  # the estimator writes the values itself
    GAE(gamma=1.0, lmbda=0.95, value_network=critic)(batch)
    assert batch["advantage"].shape == (4, 39, 1)
    loss = ClipPPOLoss(actor, critic, critic_coeff=0.01, loss_critic_type="l2", functional=False)
    loss.set_keys(action=K.ACTION, sample_log_prob=LOG_PROB, value=VALUE)
    out = loss(batch.reshape(-1))
    # Same policy as the one that collected: ratio 1, nothing clipped, no KL.
    assert float(out["clip_fraction"]) == 0.0 and abs(float(out["kl_approx"])) < 1e-5
    (out["loss_objective"] + out["loss_critic"] + out["loss_entropy"]).backward()
    assert all(p.grad is not None for p in net.trunk.parameters())


def test_td0_estimator_runs_on_the_batch(collected):
    # TorchRL's A2CLoss is not run here: in torchrl 0.14 it reads a nested action as a composite
    # one and sums per-head log-probs, which is what the roll-gated distribution must avoid.
    net, _, batch = collected
    critic = make_critic(net)
    batch = batch.clone().exclude(VALUE, ("next", VALUE))
    TD0Estimator(gamma=0.99, value_network=critic)(batch)
    with torch.no_grad():
        v_next = critic(batch["next"].clone())[VALUE]
    expected = batch["next", K.REWARD] + 0.99 * v_next * ~batch["next", K.TERMINATED]
    assert torch.allclose(batch["value_target"], expected, atol=1e-5)


def test_ppo_loss_is_clip_ppo_loss_on_the_same_minibatch():
    """Our PPO writes TorchRL's ClipPPOLoss out (one trunk forward instead of two); on the same
    minibatch, with a policy that has moved since collection, both give the same objective and
    critic loss."""
    from yahtzee_lightning.algorithms.ppo import PPO

    torch.manual_seed(0)
    module = PPO(**SMALL, total_games=8, games_per_batch=4, final_eval_games=0, normalize_advantage=False)
    batch = module.collect().reshape(-1).clone()
    with torch.no_grad():  # the policy has moved: ratios away from 1, some clipped
        for p in module.net.parameters():
            p.add_(0.3 * torch.randn_like(p))
    g = torch.Generator().manual_seed(1)
    batch.set("advantage", torch.randn(batch.shape, generator=g))
    batch.set("returns", torch.randn(batch.shape, generator=g))
    parts, ratio, _ = module.loss_parts(batch, {"beta_roll": 0.0, "beta_score": 0.0})
    assert float(((ratio - 1).abs() > 0.2).float().mean()) > 0.05  # the clip is exercised

    loss = ClipPPOLoss(
        make_actor(module.net),
        make_critic(module.net),
        clip_epsilon=module.hparams.clip_eps,
        entropy_bonus=False,
        critic_coeff=module.hparams.lambda_v,
        loss_critic_type="l2",
        normalize_advantage=False,
        functional=False,
    )
    loss.set_keys(action=K.ACTION, sample_log_prob=LOG_PROB, value=VALUE)
    data = batch.select(*make_actor(module.net).in_keys, K.ACTION, LOG_PROB, strict=False)
    data.update({"advantage": batch["advantage"].unsqueeze(-1), "value_target": batch["returns"].unsqueeze(-1)})
    out = loss(data)
    assert torch.allclose(out["loss_objective"], parts["policy"], atol=1e-5)
    assert torch.allclose(out["loss_critic"], parts["value"], atol=1e-5)


def test_ppo_checkpoint_holds_the_network_once():
    from yahtzee_lightning.algorithms.ppo import PPO

    module = PPO(**SMALL, total_games=8, games_per_batch=4, final_eval_games=0)
    module.collect()  # collection's env and policy are not registered children
    keys = set(module.state_dict())
    assert keys == {f"net.{k}" for k in module.net.state_dict()} | {"updates_done"}
