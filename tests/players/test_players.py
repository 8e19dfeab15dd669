"""Reference players: always legal; their means match the literature within standard errors."""

import math

import pytest
import torch

from yahtzee_lightning.env import YahtzeeEnv
from yahtzee_lightning.evaluation import play_games, summarize
from yahtzee_lightning.game import Rules
from yahtzee_lightning.players import GreedyPlayer, OptimalPlayer, RandomPlayer, make_player


def _summary(player, games, seed=0, rules=None):
    rules = rules or Rules()
    return summarize(play_games(player, games, seed, rules), rules)


VARIANT_TABLE = pytest.mark.slow("the forced-joker variant's table solved from nothing: about 15 s")


@pytest.mark.parametrize(
    "rules, name",
    [(Rules(), name) for name in ("optimal", "greedy", "random")]
    + [(Rules(joker="forced"), name) for name in ("greedy", "random")]
    + [pytest.param(Rules(joker="forced"), "optimal", marks=VARIANT_TABLE)],
)
def test_players_are_always_legal(name, rules):
    env = YahtzeeEnv(300, rules=rules, seed=1)  # validate_actions: an illegal box raises
    player = make_player(name, rules=rules)
    td = env.reset()
    for _ in range(39):
        keep, box = player.act(td)
        td["action", "keep"], td["action", "box"] = keep, box
        td = env.step(td)["next"]
    assert bool(td["done"].all())


def test_optimal_player_matches_the_exact_optimum(default_table):
    s = _summary(OptimalPlayer(table=default_table), 3000)
    assert abs(s["score"]["mean"] - default_table.optimum) < 3 * s["score"]["se"]
    rate_se = math.sqrt(0.25 / 3000)
    assert abs(s["upper_bonus_rate"] - 0.681) < 4 * rate_se  # published 68.1 %
    assert abs(s["yahtzee_rate"] - 0.337) < 4 * rate_se  # published 33.7 %


def test_greedy_player_is_near_glenns_218():
    s = _summary(GreedyPlayer(), 3000, seed=2)
    assert abs(s["score"]["mean"] - 218.05) < 4 * s["score"]["se"]


def test_random_player_is_far_below():
    s = _summary(RandomPlayer(seed=3), 2000)
    assert 40 < s["score"]["mean"] < 52  # reported about 46


def test_unknown_player_name():
    with pytest.raises(ValueError, match="unknown player 'genius'"):
        make_player("genius")


def test_random_player_seeding():
    td = YahtzeeEnv(16, seed=0).reset()
    a, b = RandomPlayer(seed=5).act(td), RandomPlayer(seed=5).act(td)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_endgame_player_plays_its_base_outside_the_last_turn_of_a_match():
    from yahtzee_lightning.env import YahtzeeEnv
    from yahtzee_lightning.env import keys as K
    from yahtzee_lightning.env.multiplayer import MultiPlayerYahtzeeEnv
    from yahtzee_lightning.players import EndgamePlayer

    endgame = make_player("endgame:greedy")
    assert isinstance(endgame, EndgamePlayer) and endgame.name == "endgame:greedy"
    greedy = GreedyPlayer()
    td = YahtzeeEnv(64, seed=0).reset()  # solitaire: no opponents, nothing to adapt to
    assert all(torch.equal(a, b) for a, b in zip(endgame.act(td), greedy.act(td), strict=True))
    env = MultiPlayerYahtzeeEnv(256, opponents=GreedyPlayer(), learner_seat="second", seed=0)
    td, differ = env.reset(), 0
    for step in range(39):
        keep, box = endgame.act(td)
        base_keep, base_box = greedy.act(td)
        if step < 36:  # not yet the last turn
            assert torch.equal(keep, base_keep) and torch.equal(box, base_box)
        differ += int((keep != base_keep).sum())
        td.set(K.KEEP, keep)
        td.set(K.BOX, box)
        td = env.step(td)["next"]
    assert differ > 0
