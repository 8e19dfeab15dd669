"""A launch on several processes or nodes that cannot run as asked ends in one line naming the setting."""

from types import SimpleNamespace

import pytest
from test_cli import ROOT, TINY

from yahtzee_lightning.algorithms import Reinforce
from yahtzee_lightning.cli import main
from yahtzee_lightning.loop import launch

LAUNCHER_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "TORCHELASTIC_RUN_ID", "SLURM_NTASKS", "LSB_JOBID")


def _fit_line(capsys, *args: str) -> str:
    with pytest.raises(SystemExit) as stop:
        main(["fit", "--config", str(ROOT / "conf" / "reinforce.yaml"), *TINY, *args])
    assert stop.value.code == 2
    err = capsys.readouterr().err.splitlines()  # also Lightning's notices, and "resuming from ..."
    [line] = [line for line in err if line.startswith("yahtzee-lightning")]
    assert not any("Traceback" in line for line in err)
    return line


def test_num_nodes_without_a_launcher_or_with_a_master_that_does_not_resolve(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    line = _fit_line(capsys, "--trainer.num_nodes=2")  # Lightning would wait 30 minutes for the other node
    assert line.startswith("yahtzee-lightning fit: error: trainer.num_nodes=2, but nothing starts the other nodes")
    assert "torchrun" in line and "docs/devices.md" in line
    monkeypatch.setenv("MASTER_ADDR", "no-such-master.invalid")
    monkeypatch.setenv("NODE_RANK", "1")
    line = _fit_line(capsys, "--trainer.num_nodes=2")
    assert "trainer.num_nodes=2: the master MASTER_ADDR=no-such-master.invalid does not resolve" in line


def test_ranks_that_disagree_on_a_setting_are_named():
    model = Reinforce(d_h=8, n_layers=1, head_hidden=8, total_games=48, games_per_batch=8)
    same = launch.run_settings(model)
    assert launch.disagreement([same, dict(same)]) is None
    other = launch.run_settings(Reinforce(d_h=8, n_layers=1, head_hidden=8, total_games=48, games_per_batch=8, lr=0.01))
    problem = launch.disagreement([same, same, other])
    assert problem.startswith("the ranks disagree on lr: rank 0 has 0.001, rank 2 has 0.01")
    assert "model" in launch.disagreement([same, {**same, "model": "my.Algorithm"}])


def test_every_rank_stops_on_a_disagreement_or_a_budget_that_does_not_divide(monkeypatch):
    model = Reinforce(d_h=8, n_layers=1, head_hidden=8, total_games=100, games_per_batch=8)
    trainer = SimpleNamespace(world_size=2)
    theirs = {**launch.run_settings(model), "seed": "1"}
    monkeypatch.setattr(launch, "gather", lambda mine: [mine, theirs])
    with pytest.raises(launch.LaunchError, match="disagree on seed: rank 0 has 0, rank 1 has 1"):
        launch.SameRunOnEveryRank().setup(trainer, model, "fit")
    monkeypatch.setattr(launch, "gather", lambda mine: [mine, mine])
    with pytest.raises(launch.LaunchError) as bad:
        launch.SameRunOnEveryRank().setup(trainer, model, "fit")
    assert "games_per_batch=8 on each of 2 ranks trains 16 games an update" in str(bad.value)
    assert "total_games=100" in str(bad.value) and "would train 96 games" in str(bad.value)
    launch.SameRunOnEveryRank().setup(SimpleNamespace(world_size=1), model, "fit")  # one process: rounds down, as ever
    model.hparams.total_games = 96
    launch.SameRunOnEveryRank().setup(trainer, model, "fit")


def test_a_run_resumes_on_as_many_ranks_as_it_was_saved_from(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    config = ["fit", "--config", str(ROOT / "conf" / "reinforce.yaml"), *TINY, "--trainer.max_epochs=1"]
    assert main(config) == 0
    capsys.readouterr()
    line = _fit_line(capsys, "--ckpt_path=last", "--trainer.strategy=ddp", "--trainer.devices=2")
    assert "the checkpoint was trained on 1 rank(s) and this launch has 2 (trainer.devices x trainer.num_nodes)" in line
    launch.check_resumed_ranks({"yahtzee_lightning": {"devices": 2}}, 2)
    launch.check_resumed_ranks({}, 2)  # a checkpoint of another module: nothing to check


def test_a_budget_that_does_not_divide_is_refused_before_any_process_starts(tmp_path, monkeypatch, capsys):
    """From the trainer's settings alone (devices x num_nodes), in the launching process: one line,
    printed once (under torchrun, only rank 0 says it), and no DDP process is started."""
    monkeypatch.chdir(tmp_path)
    line = _fit_line(capsys, "--trainer.strategy=ddp", "--trainer.devices=2", "--model.init_args.total_games=50")
    assert "on each of 2 ranks trains" in line and "is not a multiple of it" in line
    assert not list(tmp_path.rglob("*.ckpt"))
    assert launch.planned_ranks({"devices": 2, "num_nodes": 3}) == 6
    assert launch.planned_ranks({"devices": [0, 1], "num_nodes": 1}) == 2
    assert launch.planned_ranks({"devices": "auto", "num_nodes": 1}) is None
    monkeypatch.setenv("RANK", "1")  # another torchrun rank: it stops without a word
    bad = {"trainer": {"devices": 2, "num_nodes": 1}, "model": {"init_args": {"total_games": 50, "games_per_batch": 8}}}
    with pytest.raises(SystemExit) as exit_:
        launch.check_budget_early(bad)
    assert exit_.value.code == 2


def test_fit_says_its_plan_once_at_the_start(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "--config", str(ROOT / "conf" / "reinforce.yaml"), *TINY]) == 0
    plan = [line for line in capsys.readouterr().out.splitlines() if line.startswith("plan: 1 rank x")]
    assert len(plan) == 1 and "games an update;" in plan[0] and "updates (" in plan[0] and "an evaluation of" in plan[0]
