"""The logging cadence: metrics every ``log_every`` updates, the same values where they are computed,
and learning that does not depend on the cadence, to the bit."""

import lightning as L
import pytest
import torch
from test_ensemble import TINY, _Rows

from yahtzee_lightning.algorithms import A2C, PPO, Reinforce


def _fit(cls, log_every: int, ensemble=None) -> tuple[L.LightningModule, dict[int, dict]]:
    L.seed_everything(3, verbose=False)
    settings = {**TINY, "dropout": 0.1, "total_games": 9 * TINY["games_per_batch"]}
    model = cls(**settings, log_every=log_every, ensemble=ensemble)
    rows = _Rows()
    trainer = L.Trainer(logger=rows, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model)
    steps: dict[int, dict] = {}
    for step, metrics in rows.rows:
        train = {k: v for k, v in metrics.items() if "train/" in k}
        if train:
            steps.setdefault(step, {}).update(train)
    return model, steps


@pytest.mark.parametrize(("cls", "ensemble"), [(A2C, None), (PPO, None), (Reinforce, None), (PPO, 2)])
def test_the_cadence_changes_what_is_logged_not_what_is_learned(cls, ensemble):
    every, sparse = _fit(cls, 1, ensemble), _fit(cls, 4, ensemble)
    # Learning: the same weights, to the bit.
    a, b = every[0].state_dict(), sparse[0].state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    # Logging: every update at 1, every 4th at 4 (updates 4 and 8 of 9), each the same values.
    assert len(every[1]) == 9
    assert sorted(sparse[1]) == [3, 7]
    for step, metrics in sparse[1].items():
        assert {k for k in metrics if "regret" in k or "kl" in k}, "the logging-only metrics are there"
        assert metrics == every[1][step]


@pytest.mark.parametrize("bad", [0, -3])
def test_a_cadence_below_one_is_refused_naming_the_setting(bad):
    with pytest.raises(ValueError, match="log_every must be an integer >= 1"):
        A2C(**TINY, log_every=bad)
