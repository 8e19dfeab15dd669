"""Every setting is checked when the module is built, with a message that names it."""

import pytest

from yahtzee_lightning.algorithms import A2C, PPO, Reinforce

TINY = {"d_h": 16, "n_layers": 1, "head_hidden": 16}

BAD = [
    ("task", "whole_game"),
    ("start_card", "full"),
    ("start_card", "own_play"),  # with the default task, full_game
    ("reward", "points"),
    ("total_games", 0),
    ("games_per_batch", 0),
    ("evaluations", 0),
    ("eval_games", 0),
    ("top_k", 0),
    ("n_players", 0),
    ("final_eval_games", -1),
    ("diagnose_games", -1),
    ("games_per_batch", 1 << 21),
    ("eval_games", 10**8),
    ("final_eval_games", 10**8),
    ("diagnose_games", 10**8),
    ("n_players", 9),
    ("log_every", 0),
    ("log_every", -3),
    ("log_every", 10**7),
    ("seed", -1),
    ("seed", 2**62),
    ("lr", 0.0),
    ("lr", float("nan")),
    ("r_alpha", 1.5),
    ("warmup", -0.1),
    ("hold", 2.0),
    ("entropy_hold", -1.0),
    ("entropy_anneal", 1.1),
    ("gamma_min", 1.01),
    ("gamma_max", -0.5),
    ("tau_clip", -1.0),
    ("lambda_v", -0.01),
    ("beta_roll_max", -1.0),
    ("beta_roll_min", -1.0),
    ("beta_score_max", -1.0),
    ("beta_score_min", -1.0),
    ("d_h", 0),
    ("n_layers", 100),
    ("head_hidden", 10**6),
    ("d_emb", -1),
    ("dropout", 1.0),
]


@pytest.mark.parametrize("name,value", BAD, ids=[f"{n}={v}" for n, v in BAD])
def test_a_bad_setting_is_refused_by_name(name, value):
    with pytest.raises(ValueError, match=rf"^{name} must be"):
        Reinforce(**{**TINY, name: value})


def test_budget_is_checked_and_good_settings_build():
    with pytest.raises(ValueError, match=r"total_games \(10\) must be at least games_per_batch \(20\)"):
        A2C(**TINY, total_games=10, games_per_batch=20)
    for cls in (Reinforce, A2C, PPO):
        assert cls(**TINY, total_games=20, games_per_batch=20, final_eval_games=0).hparams.total_games == 20
    assert Reinforce(**TINY, task="single_turn", start_card="own_play").hparams.start_card == "own_play"
