"""The Gymnasium vector env and the SB3 VecEnv on the batched engine: spaces, shapes, seeding,
same-step autoreset, bad actions, and that Gymnasium's vector wrappers and SB3 run on them."""

import gymnasium
import numpy as np
import pytest
from gymnasium.spaces import MultiDiscrete
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

from yahtzee_lightning.game import N_DICE, N_FACES, Rules
from yahtzee_lightning.game.single import SingleGame
from yahtzee_lightning.gym.sb3 import YahtzeeSB3VecEnv
from yahtzee_lightning.gym.spaces import MASK_KEY, OBS_KEY, OPEN_BOXES, ROLL, TURN, encode_single, observation_space
from yahtzee_lightning.gym.vector import YahtzeeVectorEnv

N = 8
VARIANTS = [Rules(), Rules(joker="forced"), Rules(joker="off", yahtzee_bonus=False), Rules(boxes=(0, 5, 11, 12))]


def random_legal(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly drawn legal action per row of a (N, 45) mask."""
    return np.array([rng.choice(np.flatnonzero(row)) for row in mask])


def play(env: YahtzeeVectorEnv, seed: int, steps: int) -> list:
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for _ in range(steps):
        out.append(env.step(random_legal(env.action_masks(), rng)))
    return out


def test_spaces_are_the_single_spaces_batched():
    env = YahtzeeVectorEnv(N)
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert env.single_observation_space == observation_space()
    assert env.observation_space == batch_space(observation_space(), N)
    assert env.single_action_space == gymnasium.spaces.Discrete(45)
    assert env.action_space == MultiDiscrete([45] * N)


@pytest.mark.parametrize("rules", VARIANTS, ids=lambda r: r.tag())
def test_reset_and_step_shapes_and_same_step_autoreset(rules):
    env = YahtzeeVectorEnv(N, rules=rules)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs) and info == {}
    assert np.array_equal(env.action_masks(), obs[MASK_KEY].astype(bool))
    rng = np.random.default_rng(0)
    total = np.zeros(N)
    steps = 3 * len(rules.boxes)
    for t in range(steps):
        obs, reward, term, trunc, infos = env.step(random_legal(env.action_masks(), rng))
        assert env.observation_space.contains(obs)
        assert reward.shape == term.shape == trunc.shape == (N,) and reward.dtype == np.float32
        assert term.dtype == trunc.dtype == np.bool_ and not trunc.any()
        total += reward
        if t < steps - 1:
            assert not term.any() and infos == {}
    # Every game ends on its last box, and restarts in the same step.
    assert term.all() and infos["_final_obs"].all() and infos["_final_info"].all()
    for final in infos["final_obs"]:
        assert env.single_observation_space.contains(final)
        assert not final[MASK_KEY].any() and not final[OBS_KEY][OPEN_BOXES].any()  # the full card: nothing to do
    assert (obs[OBS_KEY][:, ROLL.start] == 1).all() and (obs[OBS_KEY][:, TURN] == 0).all()
    assert obs[OBS_KEY][:, OPEN_BOXES].sum(1).tolist() == [len(rules.boxes)] * N  # a fresh card
    assert (total >= 0).all() and total.max() > 0


@pytest.mark.parametrize("rules", VARIANTS, ids=lambda r: r.tag())
def test_the_vector_env_observes_as_the_single_game_env_in_the_same_state(rules):
    """Every game's row, at every step of whole games, is the single-game encoder's vector and mask
    for a one-game engine put in the same state (card, dice, roll)."""
    env = YahtzeeVectorEnv(64, rules=rules)
    obs, _ = env.reset(seed=2)
    rng = np.random.default_rng(2)
    game = SingleGame(rules)
    for _ in range(3 * len(rules.boxes)):
        state = env.games.state
        dice, cards, rolls = state.dice.tolist(), state.card.tolist(), state.roll.tolist()
        for i in range(env.num_envs):
            game.start(cards[i], sum((d - 1) * N_FACES**k for k, d in enumerate(dice[i][:N_DICE])))
            game.roll = rolls[i]
            single_obs, single_mask = encode_single(game)
            assert np.array_equal(obs[OBS_KEY][i], single_obs) and np.array_equal(obs[MASK_KEY][i], single_mask)
        obs, *_ = env.step(random_legal(env.action_masks(), rng))


def test_single_turn_games_end_after_three_decisions_and_start_on_a_random_card():
    env = YahtzeeVectorEnv(N, task="single_turn", start_card="random")
    _, rewards, terms, _, _ = zip(*play(env, 1, 6)[1:], strict=True)
    assert [bool(t.all()) for t in terms] == [False, False, True] * 2
    assert sum(r for r in rewards).min() >= 0
    filled = []
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        filled.append(int((obs[OBS_KEY][:, OPEN_BOXES] == 0).sum()))
    assert sum(filled) > 0  # some boxes start filled


def test_the_same_seed_plays_the_same_games_and_another_seed_does_not():
    a, b, c = (play(YahtzeeVectorEnv(N), s, 45) for s in (3, 3, 4))
    same = all(np.array_equal(x[0][OBS_KEY], y[0][OBS_KEY]) for x, y in zip(a[1:], b[1:], strict=True))
    assert same and np.array_equal(a[0][OBS_KEY], b[0][OBS_KEY])
    assert all(np.array_equal(x[1], y[1]) for x, y in zip(a[1:], b[1:], strict=True))  # rewards
    assert not np.array_equal(a[0][OBS_KEY], c[0][OBS_KEY])
    # The constructor's seed seeds the first reset too.
    first = [YahtzeeVectorEnv(N, seed=5).reset()[0][OBS_KEY] for _ in range(2)]
    assert np.array_equal(*first)


def test_bad_actions_are_refused_in_one_line():
    env = YahtzeeVectorEnv(2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, dtype=np.int64))
    env.reset(seed=0)
    cases = [
        (np.zeros(3, dtype=np.int64), ValueError, r"shape \(2,\)"),
        (np.zeros(2, dtype=np.float32), TypeError, "integers 0..44"),
        (np.array([0, 45]), ValueError, "game 1: action 45 is out of range"),
        (np.array([33, 0]), ValueError, "game 0: action 33 is illegal now: this decision is a keep"),
    ]
    for actions, error, match in cases:
        with pytest.raises(error, match=match) as e:
            env.step(actions)
        assert "\n" not in str(e.value)
    for _ in range(2):
        env.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="game 0: action 5 is illegal now: this decision is an open, legal box"):
        env.step(np.array([5, 32]))


def test_gymnasium_vector_wrappers_record_the_episode_returns():
    env = gymnasium.wrappers.vector.RecordEpisodeStatistics(YahtzeeVectorEnv(N))
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    total = np.zeros(N)
    for _ in range(39):
        _, reward, term, _, infos = env.step(random_legal(env.unwrapped.action_masks(), rng))
        total += reward
    assert term.all() and np.allclose(infos["episode"]["r"], total) and (infos["episode"]["l"] == 39).all()


def test_sb3_vec_env_masks_terminal_observations_and_seeds():
    env = YahtzeeSB3VecEnv(N)
    assert is_masking_supported(env) and env.observation_space == observation_space()
    env.seed(7)
    obs = env.reset()
    assert np.array_equal(get_action_masks(env), obs[MASK_KEY].astype(bool)) and get_action_masks(env).shape == (N, 45)
    env.seed(7)
    assert np.array_equal(env.reset()[OBS_KEY], obs[OBS_KEY])
    rng = np.random.default_rng(0)
    for _ in range(39):
        obs, reward, done, infos = env.step(random_legal(get_action_masks(env), rng))
        assert len(infos) == N and reward.shape == done.shape == (N,)
    assert done.all() and all(not info["terminal_observation"][MASK_KEY].any() for info in infos)
    assert env.env_method("action_masks", indices=[1])[0].shape == (45,)
    with pytest.raises(AttributeError):
        env.get_attr("no_such_attribute")


def test_make_vec_builds_the_batched_env_with_rule_keywords():
    env = gymnasium.make_vec("yahtzee_lightning/YahtzeeSingleTurn-v0", num_envs=4, joker="forced")
    assert isinstance(env, YahtzeeVectorEnv) and env.num_envs == 4
    assert env.rules == Rules(joker="forced") and env.games.task == "single_turn"
    assert env.observation_space.contains(env.reset(seed=0)[0])
    with pytest.raises(TypeError, match="unknown keyword 'jokr'"):
        gymnasium.make_vec("yahtzee_lightning/Yahtzee-v0", num_envs=2, jokr="free")
    sb3 = YahtzeeSB3VecEnv(2, task="single_turn", joker="forced", seed=0)  # the same keywords for SB3
    assert sb3.rules == Rules(joker="forced") and sb3.games.task == "single_turn"
    bad_kwargs = [({"jokr": "free"}, TypeError, "unknown keyword 'jokr'"), ({"task": "x"}, ValueError, "task must be")]
    for bad, error, words in bad_kwargs:
        with pytest.raises(error, match=words) as e:
            YahtzeeSB3VecEnv(2, **bad)
        assert "\n" not in str(e.value)
