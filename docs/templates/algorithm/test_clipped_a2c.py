"""The template's seeded tests: the loss clips as it says, a bad setting is refused by name, and a
small seeded run learns (it must beat where it started by more than the noise of the games)."""

from __future__ import annotations

import lightning as L
import pytest
import torch
from clipped_a2c import ClippedA2C

from yahtzee_lightning.evaluation import play_games, summarize
from yahtzee_lightning.game import Rules
from yahtzee_lightning.loop.trainer import quiet_trainer

TINY = {"d_h": 64, "n_layers": 2, "head_hidden": 64, "evaluations": 1, "eval_games": 20, "final_eval_games": 0}


def test_a_bad_setting_is_refused_by_name():
    with pytest.raises(ValueError, match="advantage_clip"):
        ClippedA2C(advantage_clip=0.0, **TINY)


def test_the_update_sees_clipped_advantages(monkeypatch):
    seen = {}

    def record(self, obs, advantage, returns, coefs):
        seen["advantage"] = advantage
        return {}

    monkeypatch.setattr(ClippedA2C, "policy_gradient_step", record)
    model = ClippedA2C(advantage_clip=0.5, games_per_batch=8, total_games=8, seed=0, **TINY)
    batch = model.collect()
    batch["next", "reward"] = torch.full_like(batch["next", "reward"], 100.0)  # advantages far past the clip
    model.update(batch, {"gamma": 1.0, "beta_roll": 0.0, "beta_score": 0.0})
    assert seen["advantage"].shape == (8 * 39,)
    assert seen["advantage"].abs().max() == pytest.approx(0.5)


def test_a_small_seeded_run_learns():
    L.seed_everything(0)
    model = ClippedA2C(games_per_batch=64, total_games=3840, lr=3e-3, seed=0, **TINY)
    before = summarize(play_games(model.player(), 600, seed=3, rules=Rules()), Rules())["score"]
    quiet_trainer().fit(model)
    after = summarize(play_games(model.player(), 600, seed=3, rules=Rules()), Rules())["score"]
    noise = (before["se"] ** 2 + after["se"] ** 2) ** 0.5
    assert after["mean"] - before["mean"] > 4 * noise
