"""Two-player matches: symmetric players split the wins; the same seed repeats."""

import torch

from yahtzee_lightning.env import keys as K
from yahtzee_lightning.evaluation.match import format_match, play_matches
from yahtzee_lightning.players.base import Player


class MaskedRandom(Player):
    name = "masked_random"

    def act(self, obs):
        n = obs.batch_size
        noise = torch.rand(*n, 13).masked_fill_(~obs[K.BOX_MASK], -1)
        return torch.randint(0, 32, n), noise.argmax(-1)


class ChanceFirst(Player):
    name = "first_box"

    def act(self, obs):
        return torch.full(obs.batch_size, 31), obs[K.BOX_MASK].float().argmax(-1)


def test_symmetric_match_and_repeatability():
    r = play_matches(MaskedRandom(), MaskedRandom(), games=3000, seed=1, batch_size=1000)
    assert abs(r["win"]["rate"] - r["loss"]["rate"]) < 4 * (r["win"]["se"] + r["loss"]["se"])
    assert abs(r["win"]["rate"] + r["draw"]["rate"] + r["loss"]["rate"] - 1) < 1e-6
    again = play_matches(MaskedRandom(), MaskedRandom(), games=3000, seed=1, batch_size=1000)
    assert again == r
    assert "win rate" in format_match(r)


def test_a_stronger_player_wins_more():
    r = play_matches(MaskedRandom(), ChanceFirst(), games=1000, seed=2)
    weak = play_matches(ChanceFirst(), MaskedRandom(), games=1000, seed=2)
    assert r["player_score"]["mean"] > weak["player_score"]["mean"]
    assert r["win"]["rate"] > weak["win"]["rate"]


def test_optimal_solitaire_against_itself_wins_half(default_table):
    from yahtzee_lightning.players import OptimalPlayer

    r = play_matches(OptimalPlayer(table=default_table), "optimal", games=1000, seed=3)
    assert abs(r["win"]["rate"] - r["loss"]["rate"]) < 4 * (r["win"]["se"] + r["loss"]["se"])
    assert 0.4 < r["win"]["rate"] < 0.6
    assert abs(r["player_score"]["mean"] - default_table.optimum) < 4 * r["player_score"]["se"]


def test_seats_alternate_and_split_the_outcomes():
    r = play_matches(MaskedRandom(), ChanceFirst(), games=301, seed=4, batch_size=100)
    first, second = r["by_seat"]["first"], r["by_seat"]["second"]
    assert r["learner_seat"] == "alternate" and first["games"] + second["games"] == 301
    assert abs(first["games"] - second["games"]) <= 3  # one odd match per batch of 100, 100, 100, 1
    for k in ("win", "draw", "loss"):
        mixed = (first[k]["rate"] * first["games"] + second[k]["rate"] * second["games"]) / 301
        assert abs(mixed - r[k]["rate"]) < 1e-9
    text = format_match(r)
    assert "seated first" in text and "seated second" in text
    only_second = play_matches(MaskedRandom(), ChanceFirst(), games=50, seed=4, learner_seat="second")
    assert list(only_second["by_seat"]) == ["second"]


def test_endgame_check_counts_last_turn_keeps(default_table):
    from yahtzee_lightning.players import EndgamePlayer, GreedyPlayer

    greedy = GreedyPlayer()
    r = play_matches(greedy, greedy, games=400, seed=5, endgame_check=True)["endgame"]
    assert r["decisions"] == 400  # 200 matches seated second, two keeps each
    assert 0 < r["matter"] < r["decisions"] and r["agree_where_it_matters"]["rate"] < 1
    assert r["win_lost_per_match"] > 0
    exact = play_matches(EndgamePlayer(greedy), greedy, games=400, seed=5, endgame_check=True)
    assert exact["endgame"]["agree"]["rate"] == 1 and exact["endgame"]["win_lost_per_match"] < 1e-12
    assert "last-turn keeps" in format_match(exact)
