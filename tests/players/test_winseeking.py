"""The win-seeking match player: the optimal moves, re-weighed for the chance of winning."""

import pytest
import torch

from yahtzee_lightning.commands.evaluate import main as evaluate_main
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.env.multiplayer import MultiPlayerYahtzeeEnv
from yahtzee_lightning.evaluation.match import play_matches
from yahtzee_lightning.game import Rules
from yahtzee_lightning.players import EndgamePlayer, OptimalPlayer, WinSeekingPlayer, make_player
from yahtzee_lightning.solver import load_or_solve

FIVE = Rules(joker="forced", boxes=(0, 5, 8, 11, 12))


@pytest.fixture(scope="module")
def positions():
    """Match positions from the middle of 64 matches of the five-box game (second turn)."""
    table = load_or_solve(FIVE, progress=False)
    env = MultiPlayerYahtzeeEnv(64, opponents=OptimalPlayer(FIVE, table), rules=FIVE, seed=3)
    me = OptimalPlayer(FIVE, table)
    td = env.reset()
    for _ in range(4):  # the first turn and the first keep of the second
        keep, box = me.act(td)
        td.set(K.KEEP, keep)
        td.set(K.BOX, box)
        td = env.step(td)["next"]
    return td


def test_behind_it_takes_more_risk_and_far_ahead_it_plays_the_optimal_move(positions):
    player, optimal = WinSeekingPlayer(FIVE), OptimalPlayer(FIVE)
    obs = positions.clone()
    variances = []
    for lead in (-60, -20, 0, 20, 60):
        obs.set(K.OPPONENT_SCORES, (obs[K.SCORE] - lead).unsqueeze(-1))
        keep = player.act(obs)[0]
        keep_variance = player.choice_moments(obs)[0][1]
        variances.append(keep_variance.gather(-1, keep.unsqueeze(-1)).squeeze(-1))
    spread = torch.stack(variances)  # (leads, games)
    assert bool((spread[:-1] >= spread[1:] - 1e-6).all())  # never a wider spread with a bigger lead
    assert bool((spread[0] > spread[-1] + 1e-6).any())  # and somewhere it really changes its play
    obs.set(K.OPPONENT_SCORES, (obs[K.SCORE] - 1000).unsqueeze(-1))  # won whatever happens: ties
    torch.testing.assert_close(player.act(obs)[0], optimal.act(obs)[0])


def test_it_refuses_solitaire_play():
    from yahtzee_lightning.env import YahtzeeEnv

    with pytest.raises(ValueError, match="--players 2"):
        WinSeekingPlayer(FIVE).act(YahtzeeEnv(4, rules=FIVE, seed=0).reset())
    with pytest.raises(SystemExit):
        evaluate_main(
            ["--agent", "winseeking", "--games", "10", "--joker", "forced", "--boxes", "0", "5", "8", "11", "12"]
        )


def test_it_plays_legal_matches_by_name():
    player = make_player("endgame:winseeking", FIVE)
    assert isinstance(player, EndgamePlayer) and player.matches_only
    result = play_matches(player, OptimalPlayer(FIVE), games=200, seed=0, rules=FIVE)  # illegal moves raise
    assert result["games"] == 200
