"""TorchRL's own tools on our envs: they read the legal actions from the action spec and the masks.

Every game is played in full with ``validate_actions=True`` (an illegal box raises), so a tool
that sampled a filled box would fail here; the final cards must be full.
"""

import pytest
import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictSequential
from torchrl.collectors import Collector, RandomPolicy
from torchrl.envs import ActionMask, TransformedEnv
from torchrl.modules import MLP, MaskedCategorical, ProbabilisticActor

from yahtzee_lightning import YahtzeeEnv
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.env.features import FeatureTransform
from yahtzee_lightning.env.multiplayer import MultiPlayerYahtzeeEnv
from yahtzee_lightning.env.yahtzee_env import LegalCategorical
from yahtzee_lightning.players import make_player

GAMES = 48  # divisible by 2, 3 and 4: every seat of an alternating match equally often


def solitaire() -> YahtzeeEnv:
    return YahtzeeEnv(GAMES, seed=0)


def match(n_players: int) -> MultiPlayerYahtzeeEnv:
    opponent = make_player("random")
    return MultiPlayerYahtzeeEnv(GAMES, opponents=opponent, n_players=n_players, learner_seat="alternate", seed=0)


ENVS = {"solitaire": solitaire, **{f"{p} players": (lambda p=p: match(p)) for p in (2, 3, 4)}}


def assert_whole_games(td: TensorDictBase, env) -> None:
    """Every game of ``td`` (games, 39 steps) was played to its end: each card full, each seat's."""
    assert td.shape == (GAMES, 39)
    final = td["next"][:, -1]
    assert bool(final[K.DONE].all()) and not bool(td["next", K.DONE][:, :-1].any())
    assert bool((final[K.CARD] != -1).all())
    if isinstance(env, MultiPlayerYahtzeeEnv):
        assert bool((final[K.OPPONENT_CARDS] != -1).all())
        assert set(td[K.SEAT][:, 0].tolist()) == set(range(env.n_players))  # the learner at every seat


def masked_actor(features: int) -> TensorDictSequential:
    """An actor of TorchRL's own modules: an MLP's logits per head, sampled by ``MaskedCategorical``."""
    heads = []
    for name, size, mask in (("keep", 32, K.KEEP_MASK), ("box", 13, K.BOX_MASK)):
        logits = TensorDictModule(MLP(features, size, num_cells=[16]), [K.OBSERVATION], [f"{name}_logits"])
        heads.append(
            ProbabilisticActor(
                logits,
                in_keys={"logits": f"{name}_logits", "mask": mask},
                out_keys=[(K.ACTION, name)],
                distribution_class=MaskedCategorical,
            )
        )
    return TensorDictSequential(*heads)


@pytest.mark.parametrize("make_env", ENVS.values(), ids=ENVS.keys())
def test_rand_action_and_random_policies_play_whole_legal_games(make_env):
    env = make_env()
    assert isinstance(env.action_spec[K.BOX], LegalCategorical)
    assert_whole_games(env.rollout(39), env)  # env.rand_action
    assert_whole_games(env.rollout(39, RandomPolicy(env.action_spec)), env)
    assert_whole_games(env.rollout(39, RandomPolicy(env.full_action_spec)), env)


@pytest.mark.parametrize("make_env", ENVS.values(), ids=ENVS.keys())
def test_a_collector_without_a_policy_plays_whole_legal_games(make_env):
    env = make_env()
    collector = Collector(env, None, frames_per_batch=GAMES * 39 * 2, total_frames=GAMES * 39 * 2)
    batch = next(iter(collector))
    collector.shutdown()
    assert_whole_games(batch[:, :39], env)
    assert_whole_games(batch[:, 39:], env)  # after the automatic reset too


@pytest.mark.parametrize("make_env", ENVS.values(), ids=ENVS.keys())
def test_the_action_mask_transform_drives_the_spec(make_env):
    env = TransformedEnv(make_env(), ActionMask(action_key=K.BOX, mask_key=K.BOX_MASK))
    assert_whole_games(env.rollout(39), env.base_env)
    assert_whole_games(env.rollout(39, RandomPolicy(env.full_action_spec)), env.base_env)
    # The transform's update reaches the base env's spec, the very mask TorchRL's tools sample from.
    td = env.reset()
    assert torch.equal(env.base_env.action_spec[K.BOX].mask, td[K.BOX_MASK])


@pytest.mark.parametrize("make_env", ENVS.values(), ids=ENVS.keys())
def test_a_masked_categorical_actor_of_torchrl_modules_plays_whole_legal_games(make_env):
    torch.manual_seed(0)
    base = make_env()
    names = "two_player" if isinstance(base, MultiPlayerYahtzeeEnv) else "full_game"
    env = TransformedEnv(base, FeatureTransform(names))
    actor = masked_actor(env.observation_spec[K.OBSERVATION].shape[-1])
    assert_whole_games(env.rollout(39, actor), base)
    frames = GAMES * 39
    collector = Collector(
        env, actor, frames_per_batch=frames, total_frames=frames, auto_register_policy_transforms=False
    )
    assert_whole_games(next(iter(collector)), base)
    collector.shutdown()


def test_clones_share_the_live_mask_and_a_finished_game_samples_any_box():
    env = YahtzeeEnv(4, seed=0)
    env.reset()
    frozen = env.action_spec.clone()  # as RandomPolicy keeps it
    mask = torch.zeros(4, 13, dtype=torch.bool)
    mask[:, 5] = True
    mask[3] = False  # a finished game: nothing legal
    env.action_spec[K.BOX].update_mask(mask)
    box = frozen[K.BOX].rand()
    assert box[:3].eq(5).all()
    assert frozen[K.BOX].mask[3].all()  # any box, rather than TorchRL's error on an empty mask
    env.action_spec[K.BOX].update_mask(None)
    assert frozen[K.BOX].mask.all()
