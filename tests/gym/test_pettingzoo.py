"""The PettingZoo AEC match: PettingZoo's own API and seed tests, rewards, and project players at seats."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

from yahtzee_lightning.game import Rules
from yahtzee_lightning.gym.pettingzoo import Seat, YahtzeeAECEnv, play_match
from yahtzee_lightning.resolve import resolve_player


@pytest.mark.filterwarnings("ignore::UserWarning")  # PettingZoo's advice to flatten dict observations
@pytest.mark.parametrize("n_players", [2, 3, 4])
def test_pettingzoo_api_test_passes(n_players):
    api_test(YahtzeeAECEnv(n_players, joker="forced"), num_cycles=300)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_pettingzoo_seed_test_passes():
    seed_test(lambda: YahtzeeAECEnv(3, reward="win", boxes=(0, 5, 11, 12)), num_cycles=200)


def random_legal(seed: int):
    rng = np.random.default_rng(seed)
    return lambda env, agent: int(rng.choice(np.flatnonzero(env.observe(agent)["action_mask"])))


def test_points_sum_to_the_score_and_win_rewards_the_winner():
    for reward in ("points", "win"):
        env = YahtzeeAECEnv(3, reward=reward)
        env.reset(seed=4)
        returns = dict.fromkeys(env.possible_agents, 0.0)
        policy, moves = random_legal(0), []
        for agent in env.agent_iter():
            obs, r, terminated, truncated, _ = env.last()
            returns[agent] += r
            assert obs["observation"].shape == (39 + 2 * 13 + 1,)
            if not terminated:
                moves.append(agent)
                assert all(not env.observe(o)["action_mask"].any() for o in env.opponents(agent))
            env.step(None if terminated or truncated else policy(env, agent))
        scores = {a: g.score for a, g in env.games.items()}
        assert moves[:6] == ["player_0"] * 3 + ["player_1"] * 3 and len(moves) == 3 * 39  # whole turns in turn
        if reward == "points":
            assert returns == scores
        else:
            best = max(scores.values())
            assert returns == {a: 1.0 if s == best else -1.0 for a, s in scores.items()}


def test_bad_input():
    env = YahtzeeAECEnv(2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="player_0: action 40 scores box full_house, but this decision is a keep"):
        env.step(40)
    with pytest.raises(TypeError, match="an action is one integer"):
        env.step("keep")
    with pytest.raises(ValueError, match="n_players must be 2, 3 or 4"):
        YahtzeeAECEnv(5)
    with pytest.raises(TypeError, match="unknown keyword 'bonus'"):
        YahtzeeAECEnv(2, bonus=False)
    with pytest.raises(ValueError, match=r"no player for seat\(s\) \['player_1'\]"):
        play_match(env, {"player_0": random_legal(0)})


def test_project_players_sit_at_seats(default_table):
    """The optimal player (the solver's table) plays whole matches through the AEC API against the
    greedy and a random player, and wins them."""
    env = YahtzeeAECEnv(3, rules=Rules())
    seats = {f"player_{i}": Seat(resolve_player(name)) for i, name in enumerate(("random", "optimal", "greedy"))}
    for seed in (0, 1):
        scores = play_match(env, seats, seed=seed)
        assert all(g.over for g in env.games.values())
        assert scores["player_1"] > scores["player_0"] and scores["player_1"] > 150
    with pytest.raises(TypeError, match="resolve_player"):  # names are resolve's: the gym pieces know none
        Seat("greedy")
