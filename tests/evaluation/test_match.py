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
