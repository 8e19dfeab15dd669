"""N-player environment: turn order, observations, rewards, specs."""

import pytest
import torch
from torchrl.envs.utils import check_env_specs

from yahtzee_lightning.env import keys as K
from yahtzee_lightning.env.multiplayer import REWARDS, MultiPlayerYahtzeeEnv
from yahtzee_lightning.players.base import Player


class MaskedRandom(Player):
    """Test opponent: uniform keep, uniform legal box."""

    def act(self, obs):
        n = obs.batch_size
        noise = torch.rand(*n, 13).masked_fill_(~obs[K.BOX_MASK], -1)
        return torch.randint(0, 32, n), noise.argmax(-1)


class ChanceFirst(Player):
    """Keeps everything and always scores the first legal box: a deterministic weak opponent."""

    def act(self, obs):
        return torch.full(obs.batch_size, 31), obs[K.BOX_MASK].float().argmax(-1)


@pytest.mark.parametrize("n_players", [2, 3])
@pytest.mark.parametrize("seat", ["first", "second", "random"])
@pytest.mark.parametrize("reward", REWARDS)
def test_specs(n_players, seat, reward):
    env = MultiPlayerYahtzeeEnv(4, opponents=MaskedRandom(), n_players=n_players, reward=reward, learner_seat=seat)
    check_env_specs(env, seed=None)


@pytest.mark.parametrize("seat", ["first", "second", "random", "alternate"])
def test_a_match_is_39_learner_steps_and_every_card_is_full(seat):
    env = MultiPlayerYahtzeeEnv(32, opponents=MaskedRandom(), learner_seat=seat, seed=0)
    td = env.rollout(100)
    assert td.shape == (32, 39)
    final = td["next"][:, -1]
    assert bool((final[K.CARD] != -1).all()) and bool((final[K.OPPONENT_CARDS] != -1).all())
    diff = final[K.SCORE] - final[K.OPPONENT_SCORES][:, 0]
    assert torch.equal(final[K.SCORE_DIFF], diff)
    # Win reward: +1 / 0 / -1 at the end only.
    assert torch.equal(td["next", K.REWARD][:, -1, 0], torch.sign(diff).float())
    assert not bool(td["next", K.REWARD][:, :-1].any())


@pytest.mark.parametrize("n_players", [2, 3])
def test_alternate_seats_cycle_through_every_seat(n_players):
    env = MultiPlayerYahtzeeEnv(7, opponents=MaskedRandom(), n_players=n_players, learner_seat="alternate", seed=0)
    assert env.reset()[K.SEAT].tolist() == [i % n_players for i in range(7)]


def test_opponents_alternate_whole_turns():
    env = MultiPlayerYahtzeeEnv(8, opponents=ChanceFirst(), learner_seat="second", seed=1)
    td = env.reset()
    # The opponent moved first: one box filled before the learner's first decision.
    assert bool(((td[K.OPPONENT_CARDS] != -1).sum(-1) == 1).all())
    assert bool(((td[K.CARD] != -1).sum(-1) == 0).all())
    env = MultiPlayerYahtzeeEnv(8, opponents=ChanceFirst(), learner_seat="first", seed=1)
    td = env.rollout(6)  # two learner turns
    opp_filled = (td[K.OPPONENT_CARDS] != -1).sum(-1)[:, :, 0]
    assert opp_filled[0].tolist() == [0, 0, 0, 1, 1, 1]


def test_score_reward_sums_to_own_score_and_shaping_shifts_it():
    env = MultiPlayerYahtzeeEnv(16, opponents=MaskedRandom(), reward="score", seed=2)
    td = env.rollout(39)
    assert torch.equal(td["next", K.REWARD].sum((1, 2)).long(), td["next", K.SCORE][:, -1])
    baseline = [1.0] * 13
    env = MultiPlayerYahtzeeEnv(16, opponents=MaskedRandom(), reward="score", shaping=True, box_baseline=baseline)
    td = env.rollout(39)
    expected = td["next", K.SCORE][:, -1].float() + (td["next", K.CARD][:, -1].sum(-1) - 13) / 10
    # The per-box term counts box scores only, not bonuses.
    assert torch.allclose(td["next", K.REWARD].sum((1, 2)), expected, atol=1e-3)


def test_targets_and_margin():
    env = MultiPlayerYahtzeeEnv(64, opponents=MaskedRandom(), reward="fixed_target", target=50, seed=3)
    td = env.rollout(39)
    final = td["next"][:, -1]
    assert torch.equal(final[K.REWARD][:, 0], torch.where(final[K.SCORE] >= 50, 1.0, -1.0))
    env = MultiPlayerYahtzeeEnv(64, opponents=MaskedRandom(), reward="moving_target", target=10, seed=3)
    env.rollout(39)
    assert env.recent_mean is not None and env.recent_mean > 10
    env = MultiPlayerYahtzeeEnv(64, opponents=MaskedRandom(), reward="margin", seed=3)
    final = env.rollout(39)["next"][:, -1]
    diff = final[K.SCORE_DIFF].float()
    assert torch.allclose(final[K.REWARD][:, 0], torch.where(diff > 0, 1.0, torch.where(diff == 0, 0.0, diff / 100)))


def test_bad_config():
    with pytest.raises(ValueError, match="reward"):
        MultiPlayerYahtzeeEnv(2, opponents=MaskedRandom(), reward="glory")
    with pytest.raises(ValueError, match="box_baseline"):
        MultiPlayerYahtzeeEnv(2, opponents=MaskedRandom(), shaping=True)
    with pytest.raises(ValueError, match="opponents"):
        MultiPlayerYahtzeeEnv(2, opponents=[MaskedRandom()], n_players=3)


def test_opponents_are_players_or_a_factory_never_names():
    made = []

    def factory():
        made.append(MaskedRandom())
        return made[-1]

    env = MultiPlayerYahtzeeEnv(2, opponents=factory, n_players=3)
    assert len(made) == 2 and env.opponents == made  # a fresh player for each seat
    with pytest.raises(TypeError, match="the name 'greedy'.*make_player"):
        MultiPlayerYahtzeeEnv(2, opponents="greedy")
    with pytest.raises(TypeError, match="must be a Player"):
        MultiPlayerYahtzeeEnv(2, opponents=[object()])
