"""LightningCLI: configs, overrides, bad keys, resuming, a user's algorithm, 2-process DDP."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from yahtzee_lightning.cli import main

ROOT = Path(__file__).resolve().parents[2]
TINY = [
    "--model.init_args.d_h=16",
    "--model.init_args.n_layers=1",
    "--model.init_args.head_hidden=16",
    "--model.init_args.games_per_batch=8",
    "--model.init_args.total_games=48",
    "--model.init_args.evaluations=3",
    "--model.init_args.eval_games=20",
    "--model.init_args.final_eval_games=0",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
]


def _fit(tmp_path, config, *extra):
    logs = [
        f"--trainer.logger.init_args.save_dir={tmp_path}",
        f"--trainer.callbacks.init_args.dirpath={tmp_path / 'checkpoints'}",
    ]
    return main(["fit", "--config", str(ROOT / "conf" / config), *TINY, *logs, *extra])


@pytest.mark.parametrize(
    "config", ["ppo.yaml", "a2c.yaml", "reinforce.yaml", "single_turn.yaml", "distill.yaml", "quickstart.yaml"]
)
def test_every_config_trains_and_checkpoints(tmp_path, config, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _fit(tmp_path, config) == 0
    ckpt = torch.load(tmp_path / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert int(ckpt["state_dict"]["updates_done"]) == 6  # 48 games in batches of 8
    assert ckpt["epoch"] == 2


def test_unknown_and_ill_typed_keys_name_themselves(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        _fit(tmp_path, "ppo.yaml", "--model.init_args.learning_rate=0.1")
    assert "learning_rate" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _fit(tmp_path, "ppo.yaml", "--model.init_args.d_h=wide")
    assert "d_h" in capsys.readouterr().err


def test_resume_from_last_checkpoint_keeps_schedules_and_counts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # A run stopped after its first interval (as if killed), then resumed to the end.
    assert _fit(tmp_path / "a", "a2c.yaml", "--trainer.max_epochs=1") == 0
    part = torch.load(tmp_path / "a" / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert int(part["state_dict"]["updates_done"]) == 2
    assert _fit(tmp_path / "a", "a2c.yaml", "--ckpt_path=last") == 0
    resumed = torch.load(tmp_path / "a" / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    # The same run without interruption.
    assert _fit(tmp_path / "b", "a2c.yaml") == 0
    whole = torch.load(tmp_path / "b" / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert int(resumed["state_dict"]["updates_done"]) == int(whole["state_dict"]["updates_done"]) == 6
    assert resumed["global_step"] == whole["global_step"]
    assert resumed["lr_schedulers"][0]["last_epoch"] == whole["lr_schedulers"][0]["last_epoch"]
    assert resumed["optimizer_states"][0]["state"][0]["step"] == whole["optimizer_states"][0]["state"][0]["step"]


def test_a_users_algorithm_by_import_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    assert _fit(tmp_path, "reinforce.yaml", "--model=user_algo.LoudReinforce") == 0
    metrics = next(tmp_path.rglob("metrics.csv")).read_text()
    assert "train/loud_updates" in metrics


def test_two_process_ddp_on_cpu(tmp_path):
    paths = os.pathsep.join([str(Path(__file__).parent), str(ROOT)])  # ROOT: the tree under test, not the installed one
    env = dict(os.environ, RANK_DIGEST_DIR=str(tmp_path), PYTHONPATH=paths)
    cmd = [
        sys.executable,
        "-m",
        "yahtzee_lightning.cli",
        "fit",
        "--config",
        str(ROOT / "conf" / "reinforce.yaml"),
        *TINY,
        f"--trainer.logger.init_args.save_dir={tmp_path}",
        f"--trainer.callbacks.init_args.dirpath={tmp_path / 'checkpoints'}",
        "--trainer.callbacks+=rank_digest.RankDigest",
        "--trainer.strategy=ddp",
        "--trainer.devices=2",
        "--trainer.accelerator=cpu",
        "--model.init_args.total_games=96",
    ]
    subprocess.run(cmd, cwd=tmp_path, env=env, check=True, timeout=300, capture_output=True)
    r0 = json.loads((tmp_path / "rank0.json").read_text())
    r1 = json.loads((tmp_path / "rank1.json").read_text())
    assert r0["weights"] == r1["weights"]  # gradients were averaged: one model
    assert r0["rollout"] != r1["rollout"]  # each rank collected its own games
    assert r0["updates"] == r1["updates"] == 6  # 96 games / (8 per batch x 2 ranks)
