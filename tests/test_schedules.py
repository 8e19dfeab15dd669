"""Learning-rate, entropy and discount schedules (docs/hyperparameters.md), alone and inside an algorithm."""

import pytest
import torch

from yahtzee_lightning.algorithms import PPO, Reinforce
from yahtzee_lightning.schedules import anneal, lr_factor


def test_lr_warms_up_holds_then_decays_to_the_floor():
    assert lr_factor(0.0) == pytest.approx(1e-3)  # never exactly 0: the first step still moves
    assert lr_factor(0.025) == pytest.approx(0.5)
    assert lr_factor(0.05) == lr_factor(0.4) == lr_factor(0.75) == 1.0
    assert lr_factor(0.875, floor=0.01) == pytest.approx((1 + 0.01) / 2)
    assert lr_factor(1.0, floor=0.01) == pytest.approx(0.01)
    assert lr_factor(2.0, floor=0.01) == pytest.approx(0.01)
    fracs = [i / 100 for i in range(101)]
    values = [lr_factor(f) for f in fracs]
    assert values[:5] == sorted(values[:5]) and values[75:] == sorted(values[75:], reverse=True)


def test_entropy_coefficient_holds_anneals_and_holds():
    args = {"start": 0.1, "end": 0.01, "hold": 0.1, "length": 0.55}
    assert anneal(0.0, **args) == anneal(0.1, **args) == 0.1
    assert anneal(0.1 + 0.55 / 2, **args) == pytest.approx(0.055)
    assert anneal(0.65, **args) == pytest.approx(0.01)
    assert anneal(0.9, **args) == anneal(1.0, **args) == pytest.approx(0.01)
    assert anneal(0.5, 0.1, 0.01, hold=0.3, length=0.0) == 0.01  # no anneal period: a step


def _model(cls, **kw):
    return cls(d_h=8, n_layers=1, head_hidden=8, games_per_batch=10, total_games=1000, **kw)


def test_algorithm_schedules_follow_the_share_of_updates_done():
    model = _model(Reinforce)  # 100 updates; REINFORCE: entropy hold 0.1, anneal 0.55, gamma 0.95 -> 1
    assert model.total_updates == 100
    assert model.entropy_coefs() == (0.1, 0.02)
    assert model.gamma() == pytest.approx(0.95)
    model.updates_done.fill_(50)
    assert model.gamma() == pytest.approx(0.975)
    roll, score = model.entropy_coefs()
    assert roll == pytest.approx(0.1 + (0.01 - 0.1) * 0.4 / 0.55)
    model.updates_done.fill_(100)
    assert model.entropy_coefs() == (pytest.approx(0.01), pytest.approx(0.003))
    assert model.gamma() == pytest.approx(1.0)


def test_optimizer_schedule_ends_at_r_alpha_times_alpha():
    model = _model(PPO, lr=1e-4, r_alpha=0.01)
    conf = model.configure_optimizers()
    opt, sched = conf["optimizer"], conf["lr_scheduler"]
    lrs = []
    for _ in range(model.total_updates):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[0] < 1e-5 and max(lrs) == pytest.approx(1e-4)
    assert lrs[50] == pytest.approx(1e-4)
    assert opt.param_groups[0]["lr"] == pytest.approx(1e-6)
    assert isinstance(opt, torch.optim.Adam)
