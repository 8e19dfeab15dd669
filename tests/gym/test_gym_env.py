"""The single-game Gymnasium env: the ecosystem's checkers, seeding, masks, bad input, SB3."""

from __future__ import annotations

import pickle
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import yahtzee_lightning  # noqa: F401  (registers the ids)
from yahtzee_lightning.gym.single import YahtzeeGymEnv

IDS = ["yahtzee_lightning/Yahtzee-v0", "yahtzee_lightning/YahtzeeSingleTurn-v0"]


def play(env: gymnasium.Env, seed: int, rng: np.random.Generator) -> tuple[list[float], list[np.ndarray], int]:
    """A random legal game: the rewards, the observations and the steps."""
    obs, _ = env.reset(seed=seed)
    rewards, seen, done = [], [obs["observation"]], False
    while not done:
        assert (obs["action_mask"].astype(bool) == env.unwrapped.action_masks()).all()
        obs, reward, done, truncated, _ = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        assert not truncated
        rewards.append(reward)
        seen.append(obs["observation"])
    return rewards, seen, len(rewards)


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_and_sb3_checkers_pass(env_id):
    env = gymnasium.make(env_id, joker="forced").unwrapped
    check_env(env, skip_render_check=False)
    sb3_check_env(env, warn=True)


def test_reset_seed_replays_the_same_game_and_returns_sum_to_the_score():
    env = gymnasium.make(IDS[0])
    first = play(env, 11, np.random.default_rng(0))
    again = play(env, 11, np.random.default_rng(0))
    assert first[0] == again[0] and all((a == b).all() for a, b in zip(first[1], again[1], strict=True))
    assert first[2] == 39 and sum(first[0]) == env.unwrapped.game.score
    assert play(env, 12, np.random.default_rng(0))[1][0].tolist() != first[1][0].tolist()  # another seed, other dice


def test_single_turn_and_rule_variants():
    env = gymnasium.make(IDS[1], boxes=(0, 11, 12), yahtzee_bonus=False)
    for seed in range(20):
        rewards, seen, steps = play(env, seed, np.random.default_rng(seed))
        assert steps == 3 and env.unwrapped.game.turn >= 1
        assert (seen[0][6:19] <= np.isin(np.arange(13), [0, 11, 12])).all()  # only boxes in play are open
    assert env.unwrapped.rules.yahtzee_bonus is False and env.unwrapped.rules.boxes == (0, 11, 12)


def test_sampled_actions_are_legal_and_the_space_pickles_plain():
    env = YahtzeeGymEnv()
    env.reset(seed=0)
    env.action_space.seed(0)
    done = False
    while not done:
        _, _, done, _, _ = env.step(env.action_space.sample())
    assert pickle.loads(pickle.dumps(env.action_space)) == gymnasium.spaces.Discrete(45)


def test_bad_input_is_refused_in_one_line():
    env = YahtzeeGymEnv()
    obs, _ = env.reset(seed=0)
    for bad, error, words in [
        (40, ValueError, "scores box full_house, but this decision is a keep"),
        (45, ValueError, "out of range 0..44"),
        (2.0, TypeError, "got float"),
        (np.array([1, 2]), TypeError, r"shape \(2,\)"),
        (True, TypeError, "got bool"),
    ]:
        with pytest.raises(error, match=words) as caught:
            env.step(bad)
        assert "\n" not in str(caught.value)
    env.step(np.array(31))  # keep all: a 0-d integer array is one action
    env.step(np.int64(31))
    with pytest.raises(ValueError, match="is a keep, but this decision scores a box"):
        env.step(0)
    box = int(np.flatnonzero(env.action_masks())[0])
    env.step(box)
    env.step(31), env.step(31)
    with pytest.raises(ValueError, match="which is already filled"):
        env.step(box)
    with pytest.raises(TypeError, match="unknown keyword 'jokers'"):
        gymnasium.make(IDS[0], jokers="forced")
    with pytest.raises(ValueError, match="task must be one of"):
        YahtzeeGymEnv(task="two_turns")
    for env_id, words in [("yahtzee_lightning/Yahtzee-v9", "version `v9`"), ("yahtzee_lightning/Yatzy-v0", "`Yatzy`")]:
        with pytest.raises(gymnasium.error.Error, match=words) as caught:  # Gymnasium's own one-line error
            gymnasium.make(env_id)
        assert "\n" not in str(caught.value)


def test_forced_joker_bars_boxes_in_the_mask():
    env = YahtzeeGymEnv(joker="forced")
    env.reset(seed=0)
    game = env.game
    game.start([-1] * 11 + [50, -1], 0)  # five ones (roll code 0), the Yahtzee box holds 50
    env._observe()
    mask = env.action_masks()
    assert mask[:32].all() and not mask[32:].any()
    env.step(31), env.step(31)
    assert np.flatnonzero(env.action_masks()).tolist() == [32]  # only the ones box (the joker's own box)
    with pytest.raises(ValueError, match="barred by the forced joker rule"):
        env.step(44)
    _, reward, _, _, _ = env.step(32)
    assert reward == 5 + 100


def test_maskable_ppo_learns_on_it():
    from sb3_contrib import MaskablePPO

    env = YahtzeeGymEnv()
    model = MaskablePPO(
        "MultiInputPolicy",
        env,
        n_steps=128,
        batch_size=64,
        n_epochs=1,
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [16]},
    )
    model.learn(256)
    obs, _ = env.reset(seed=1)
    done = False
    while not done:  # the trained policy, masked, plays a whole game without an illegal move
        action, _ = model.predict(obs, action_masks=env.action_masks())
        obs, _, done, _, _ = env.step(action)
    assert env.game.turn == 13


def test_module_id_form_without_import_and_a_cheap_import():
    code = (
        "import sys, gymnasium\n"
        "env = gymnasium.make('yahtzee_lightning:yahtzee_lightning/Yahtzee-v0')\n"
        "print(env.reset(seed=0)[0]['observation'].shape)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(39,)"
    code = (
        "import sys, yahtzee_lightning, gymnasium\n"
        "print('torch' in sys.modules, 'yahtzee_lightning/Yahtzee-v0' in gymnasium.registry)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
