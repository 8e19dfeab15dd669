"""Ensembles: K members in one process learn exactly as K single runs would, each on its own."""

import re

import lightning as L
import pytest
import torch
from quick_fit import fit_quietly
from torchrl.objectives.value.functional import reward2go

from yahtzee_lightning.algorithms import A2C, PPO, AnchoredPPO, Distill, OnPolicyAlgorithm, Reinforce

# Five boxes (15 steps a game, solved in a blink) and a tiny network: every update is milliseconds.
TINY = {
    "joker": "forced",
    "boxes": [0, 5, 8, 11, 12],
    "d_h": 16,
    "n_layers": 1,
    "head_hidden": 16,
    "evaluations": 1,
    "eval_games": 8,
    "final_eval_games": 0,
    "games_per_batch": 2,
}
ALGORITHMS = [A2C, Reinforce, PPO, AnchoredPPO, Distill]


def _train(cls, updates: int, **kwargs) -> tuple[L.LightningModule, dict[int, list[float]]]:
    """``updates`` updates of a fresh module (global seed 7, as a run's ``seed_everything``), and
    each member's loss after each of them (member 0 alone in a single run)."""
    L.seed_everything(7, verbose=False)
    settings = {**TINY, **kwargs}
    model = cls(**settings, total_games=updates * settings["games_per_batch"], seed=7)
    losses: dict[int, list[float]] = {}
    update = model.update

    def recorded(batch, coefs):
        stats = update(batch, coefs)
        losses.setdefault(model._member or 0, []).append(float(stats["loss"]))
        return stats

    model.update = recorded
    fit_quietly(model)
    return model, losses


# In the README's tests: one of each family (A2C for the policy gradients, PPO, Distill); Reinforce
# (A2C's update without the critic) and AnchoredPPO (PPO's plus a term) after it, with the slow ones.
SINGLE_RUN = [
    c if c in (A2C, PPO, Distill) else pytest.param(c, marks=pytest.mark.slow("one more algorithm's two fits: ~5 s"))
    for c in ALGORITHMS
]


@pytest.mark.parametrize("cls", SINGLE_RUN, ids=lambda c: c.__name__)
def test_a_one_member_ensemble_is_the_single_run(cls):
    single, single_losses = _train(cls, 20)
    one, one_losses = _train(cls, 20, ensemble=1)
    assert one.members is not None and len(one.members) == 1
    assert one_losses[0] == pytest.approx(single_losses[0], abs=1e-5)
    for a, b in zip(single.net.parameters(), one.members[0].parameters(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


@pytest.mark.parametrize("cls", [A2C, PPO, Distill], ids=lambda c: c.__name__)
@pytest.mark.parametrize("change", [{"seed": 11}, {"lr": 3e-3}], ids=["seed", "lr"])
def test_changing_one_member_leaves_the_others_unchanged(cls, change):
    base = [{"seed": 0}, {"seed": 1}, {"seed": 2}]
    a, a_losses = _train(cls, 5, ensemble=base)
    b, b_losses = _train(cls, 5, ensemble=[*base[:2], {**base[2], **change}])
    for k in (0, 1):
        assert a_losses[k] == b_losses[k]
        for p, q in zip(a.members[k].parameters(), b.members[k].parameters(), strict=True):
            assert torch.equal(p, q)
    assert a_losses[2] != b_losses[2]
    assert a_losses[0] != a_losses[1]  # the members are not copies of each other


@pytest.mark.parametrize("cls", [A2C, PPO, Reinforce], ids=lambda c: c.__name__)
def test_a_member_learns_the_same_alone_and_among_others(cls):
    # Its action samples, minibatch orders and dropout masks come from its own generator, and the
    # stacked forward pass computes its rows as it would alone: the others (their number, seeds
    # and settings, before or after it) change not one bit of it. 20 games a member, so that the
    # CPU kernels' SIMD blocks and scalar tails fall on different members' rows in the two runs.
    member = {"seed": 3, "lr": 2e-3}
    alone, alone_losses = _train(cls, 6, ensemble=[member], dropout=0.2, games_per_batch=20)
    others = [{"seed": 5, "beta_roll_max": 0.05}, member, {"seed": 9, "lr": 1e-4}]
    among, among_losses = _train(cls, 6, ensemble=others, dropout=0.2, games_per_batch=20)
    assert among_losses[1] == alone_losses[0]
    for a, b in zip(alone.members[0].parameters(), among.members[1].parameters(), strict=True):
        assert torch.equal(a, b)
    assert among_losses[0] != among_losses[1]


def test_members_have_their_own_settings_optimisers_and_results():
    model, _ = _train(A2C, 2, ensemble={"lr": [1e-3, 2e-3], "gae_lambda": [0.0, 0.9]})
    assert [m["settings"] for m in model.member_results()] == [
        {"seed": 7, "lr": 1e-3, "gae_lambda": 0.0},
        {"seed": 8, "lr": 2e-3, "gae_lambda": 0.9},
    ]
    first, second = model.optimizers()
    assert second.param_groups[0]["lr"] == pytest.approx(2 * first.param_groups[0]["lr"])
    assert int(model.updates_done) == 2
    assert set(model.state_dict()) >= {"members.0.trunk.0.weight", "members.1.trunk.0.weight"}
    assert not any(k.startswith("net.") for k in model.state_dict())


@pytest.mark.parametrize(
    ("ensemble", "message"),
    [
        (0, "ensemble must be an integer in 1..1,024"),
        ([], "at least one member"),
        ({"lr": [1e-3, 2e-3], "seed": [0, 1, 2]}, "ensemble.seed has 3 values for 2 members"),
        ({"size": 3, "lr": [1e-3]}, "ensemble.lr has 1 values for 3 members"),
        ([{"seed": 0}, {"d_h": 32}], "ensemble member 1: d_h cannot differ"),
        ([{"games_per_batch": 4}], "ensemble member 0: games_per_batch cannot differ"),
        ([{}, {"algorithm": "PPO"}], "ensemble member 1: algorithm cannot differ"),
        ([{"clip_epsilon": 0.1}], "ensemble member 0: A2C has no setting 'clip_epsilon'"),
        ([{"seed": 0}, {"lr": -1.0}], "ensemble member 1: lr must be > 0"),
        (True, "ensemble must be a member count"),
    ],
)
def test_bad_ensembles_name_the_setting(ensemble, message):
    with pytest.raises(ValueError, match=message):
        A2C(**TINY, ensemble=ensemble)


@pytest.mark.slow("an ensemble fit, killed, resumed and exported: about 13 s")
def test_an_ensemble_from_the_command_line_logs_resumes_and_exports_its_members(tmp_path, capsys, monkeypatch):
    from test_cli import _fit

    from yahtzee_lightning.cli import main

    monkeypatch.chdir(tmp_path)
    members = "--model.init_args.ensemble=[{seed: 3}, {seed: 4, lr: 0.002}]"
    members = [members, "--model.init_args.log_every=1"]
    assert _fit(tmp_path, "a2c.yaml", *members, "--trainer.max_epochs=1") == 0
    ckpt = tmp_path / "checkpoints" / "version_0" / "last.ckpt"
    assert int(torch.load(ckpt, weights_only=True)["state_dict"]["updates_done"]) == 2
    assert _fit(tmp_path, "a2c.yaml", *members, "--ckpt_path=last") == 0
    saved = torch.load(ckpt, weights_only=True)
    assert int(saved["state_dict"]["updates_done"]) == 6 and len(saved["optimizer_states"]) == 2
    assert [int(o["state"][0]["step"]) for o in saved["optimizer_states"]] == [6, 6]  # each member's Adam, resumed
    header = next(tmp_path.rglob("metrics.csv")).read_text().splitlines()[0].split(",")
    for name in ("member_0/train/loss", "member_1/train/loss", "member_1/eval/mean_score"):
        assert name in header
    assert {"ensemble/eval_mean_score_mean", "ensemble/eval_mean_score_min", "ensemble/eval_mean_score_max"} <= set(
        header
    )
    scores = [m["last_eval_score"] for m in saved["yahtzee_lightning"]["members"]]
    best = max(range(2), key=scores.__getitem__)

    capsys.readouterr()
    assert main(["export", str(ckpt), str(tmp_path / "best"), "--games", "0", "--member", "best"]) == 0
    card = (tmp_path / "best" / "README.md").read_text()
    assert f"* Ensemble member: {best} of 2, the best last evaluation" in card
    from yahtzee_lightning.hub import YahtzeeAgent

    agent = YahtzeeAgent.from_pretrained(tmp_path / "best")
    weights = {k.removeprefix(f"members.{best}."): v for k, v in saved["state_dict"].items()}
    torch.testing.assert_close(agent.net.state_dict()["trunk.0.weight"], weights["trunk.0.weight"])
    for asked, message in ((None, "holds an ensemble of 2 members"), ("2", "--member 2: .* has members 0..1")):
        with pytest.raises(SystemExit) as exit_:
            main(["export", str(ckpt), str(tmp_path / "none"), "--games", "0", *(["--member", asked] if asked else [])])
        assert exit_.value.code == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]  # argparse's usage, then one line
        assert last.startswith("yahtzee-lightning export: error: ") and re.search(message, last)
    assert not (tmp_path / "none").exists()
    # Resuming with other members is refused, naming the setting.
    with pytest.raises(SystemExit) as exit_:
        _fit(tmp_path, "a2c.yaml", "--model.init_args.ensemble=3", "--ckpt_path=last")
    assert exit_.value.code == 2 and "ensemble=3" in capsys.readouterr().err
    # A bad ensemble on the command line: one line naming it, nothing trained.
    with pytest.raises(SystemExit) as exit_:
        _fit(tmp_path / "bad", "a2c.yaml", "--model.init_args.ensemble=0")
    assert exit_.value.code == 2
    assert "ensemble must be an integer in 1..1,024" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_settings_that_change_the_shared_games_cannot_differ():
    with pytest.raises(ValueError, match="ensemble member 1: teacher_mix cannot differ"):
        Distill(**TINY, ensemble=[{}, {"teacher_mix": 0.5}])


class ScaledPolicyGradient(OnPolicyAlgorithm):
    """A new algorithm as CONTRIBUTING.md describes one: a setting of its own and an ``update``."""

    def __init__(self, scale: float = 1.0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.save_hyperparameters()

    def update(self, batch, coefs):
        flat = batch.reshape(-1)
        returns = reward2go(batch["next", "reward"], batch["next", "done"], coefs["gamma"]).reshape(-1)
        log_prob, value, ent_keep, ent_box = self.evaluate_actions(flat)
        advantage = returns - value.detach()
        loss = -(self.hparams.scale * log_prob * advantage).mean() + (returns - value).pow(2).mean()
        grad_norm, clipped = self.step_optimizer(loss)
        return self.update_stats(loss, {"scaled": loss}, advantage, value, returns, grad_norm, clipped)


def test_a_new_algorithm_gets_ensembles_and_per_member_settings_of_its_own():
    a, a_losses = _train(ScaledPolicyGradient, 4, ensemble={"scale": [1.0, 1.0]})
    b, b_losses = _train(ScaledPolicyGradient, 4, ensemble={"scale": [1.0, 3.0]})
    assert a_losses[0] == b_losses[0] and a_losses[1] != b_losses[1]
    assert [m["settings"]["scale"] for m in b.member_results()] == [1.0, 3.0]


def test_every_member_is_evaluated_and_its_results_read_back_by_index():
    L.seed_everything(0, verbose=False)
    model = A2C(**{**TINY, "final_eval_games": 4, "eval_games": 4}, total_games=4, ensemble=2)
    L.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False).fit(
        model
    )
    results = model.member_results()
    assert [r["member"] for r in results] == [0, 1] and [r["settings"]["seed"] for r in results] == [0, 1]
    assert all(isinstance(r["last_eval_score"], float) for r in results)
    assert [r["final_evaluation"]["summary"]["games"] for r in results] == [4, 4]
    assert model.final_evaluation == [r["final_evaluation"] for r in results]


class _Rows(L.pytorch.loggers.Logger):
    """Every row a fit writes, with its step: what a CSV or TensorBoard logger would get."""

    name, version = "rows", 0

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[int, dict]] = []

    def log_metrics(self, metrics: dict, step: int | None = None) -> None:
        self.rows.append((step, dict(metrics)))

    def log_hyperparams(self, *args, **kwargs) -> None:
        pass


def _loss_steps(ensemble: int | None, name: str) -> list[int]:
    L.seed_everything(0, verbose=False)
    model = A2C(**TINY, total_games=7 * TINY["games_per_batch"], ensemble=ensemble, log_every=2)
    rows = _Rows()
    trainer = L.Trainer(
        logger=rows,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model)
    return [step for step, metrics in rows.rows if name in metrics]


def test_members_update_metrics_are_written_where_lightning_writes_a_single_runs():
    """The one write per update uses two private Lightning attributes (ensemble.py,
    ``_write_steps``): an upgrade that renames them or changes what they mean fails here."""
    single = _loss_steps(None, "train/loss")
    assert len(single) == 3  # 7 updates, one row every 2nd
    assert _loss_steps(2, "member_0/train/loss") == _loss_steps(2, "member_1/train/loss") == single
