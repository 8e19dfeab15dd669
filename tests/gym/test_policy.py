"""Any policy, exact regret: MaskablePPO learns on the SB3 VecEnv, and ``evaluate`` plays an SB3
zip (``--agent sb3:PATH``) or a plain callable over Gymnasium observations, with the same table."""

import sys

import gymnasium
import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO

from yahtzee_lightning.commands.evaluate import main as evaluate_main
from yahtzee_lightning.evaluation import evaluate, play_games, summarize
from yahtzee_lightning.game import Rules
from yahtzee_lightning.gym.policy import GymPolicyPlayer, sb3_policy_player
from yahtzee_lightning.gym.sb3 import YahtzeeSB3VecEnv
from yahtzee_lightning.gym.spaces import MASK_KEY
from yahtzee_lightning.resolve import resolve_player


def save(model, path):
    """``model.save``: SB3 records ``gym.__version__`` if ``import gym`` works, and with tests/ on
    sys.path (pytest's rootdir conftest) ``gym`` would be this folder, which has none."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "gym", None)  # import gym -> ImportError, which SB3 expects
        model.save(path)


def first_legal(obs):
    return obs[MASK_KEY].argmax(-1)


def mean_score(model, games=200):
    def act(obs):
        return model.predict(obs, deterministic=True, action_masks=obs[MASK_KEY].astype(bool))[0]

    return summarize(play_games(GymPolicyPlayer(act), games, 0, Rules()), Rules())["score"]["mean"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny MaskablePPO after 8 rollouts of 64 games (312 steps of the VecEnv), and its zip."""
    torch.set_num_threads(1)
    model = MaskablePPO(
        "MultiInputPolicy",
        YahtzeeSB3VecEnv(64, seed=0),
        n_steps=39,
        batch_size=624,
        n_epochs=4,
        learning_rate=3e-3,
        policy_kwargs={"net_arch": [64]},
        seed=0,
    )
    before = mean_score(model)
    model.learn(64 * 39 * 8)
    path = tmp_path_factory.mktemp("sb3") / "model.zip"
    save(model, path)
    return model, before, path


def test_maskable_ppo_learns_on_the_sb3_vec_env(trained):
    model, before, _ = trained
    assert model.num_timesteps == 64 * 39 * 8
    assert mean_score(model) > before + 5  # the same 200 games, greedy, before and after


def test_evaluate_plays_an_sb3_zip_with_the_table(trained, capsys, default_table):
    _, _, path = trained
    assert evaluate_main(["--agent", f"sb3:{path}", "--games", "20"]) == 0
    out = capsys.readouterr().out
    for line in ("sb3:model.zip", "optimal", "regret", "upper bonus", "median"):
        assert line in out.lower()
    player = resolve_player(f"sb3:{path}", rules=Rules(joker="forced"))
    assert player.rules == Rules(joker="forced")  # played under the rules it is given


def test_an_sb3_model_of_other_spaces_or_no_model_is_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "cartpole.zip"
    cartpole = PPO("MlpPolicy", gymnasium.make("CartPole-v1"), n_steps=64, batch_size=64)
    save(cartpole, path)
    with pytest.raises(ValueError, match="sb3 policy 'sb3' was trained on observation space Box") as e:
        sb3_policy_player(cartpole.policy)  # the Python API refuses it too
    assert "\n" not in str(e.value)
    not_a_zip = tmp_path / "model.zip"
    not_a_zip.write_text("hello")
    for agent, why in [
        (f"sb3:{path}", "was trained on observation space Box"),
        (f"sb3:{not_a_zip}", "is not a Stable-Baselines3 zip"),
        (f"sb3:{tmp_path / 'missing.zip'}", "is not a file"),
    ]:
        with pytest.raises(SystemExit):
            evaluate_main(["--agent", agent, "--games", "2"])
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert why in err and "evaluate: error:" in err


def test_a_plain_callable_gets_the_same_table_batched_or_one_observation_at_a_time():
    batched = evaluate(GymPolicyPlayer(first_legal, name="first"), games=20, seed=0, with_optimal=False)
    single = evaluate(GymPolicyPlayer(first_legal, batched=False), games=20, seed=0, with_optimal=False)
    s = batched["summary"]
    assert batched["agent"] == "first" and s["games"] == 20 and s["regret"]["per_game_mean"] > 0
    assert s == single["summary"]
    # "First legal": keep nothing (pattern 0) and score the first legal box. Row by row, the same choices.
    keep, box = GymPolicyPlayer(first_legal).act(_first_observations())
    assert (keep == 0).all() and (box == 0).all()


def _first_observations():
    from yahtzee_lightning.env import YahtzeeEnv

    return YahtzeeEnv(4, seed=0).reset()


def test_a_policy_that_plays_an_illegal_action_is_stopped_in_one_line():
    def box_while_rolling(obs):
        return np.full(len(obs[MASK_KEY]), 40)

    with pytest.raises(ValueError, match="game 0: action 40 is not legal there") as e:
        evaluate(GymPolicyPlayer(box_while_rolling, name="bad"), games=2, seed=0, with_optimal=False)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="must give 2 integer actions"):
        evaluate(GymPolicyPlayer(lambda obs: [0.5, 1.5]), games=2, seed=0, with_optimal=False)
