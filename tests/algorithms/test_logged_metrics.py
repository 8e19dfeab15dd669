"""Every metric of docs/metrics.md reaches the logger (each update at ``log_every`` 1); per-head entropies per head."""

import csv
from pathlib import Path

import pytest
import torch

from yahtzee_lightning.algorithms import PPO
from yahtzee_lightning.cli import main
from yahtzee_lightning.env import keys as K

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTED = [
    "train/episode_return",
    "train/loss",
    "train/loss_policy",
    "train/loss_value",
    "train/loss_entropy",
    "train/loss_entropy_roll",
    "train/loss_entropy_score",
    "train/kl",
    "train/clip_fraction",
    "train/explained_variance",
    "train/advantage_mean",
    "train/advantage_std",
    "train/grad_norm",
    "train/grad_clipped",
    "train/mask_diversity",
    "train/max_logit_keep",
    "train/max_logit_box",
    "train/log_prob_taken",
    "train/top3_keep_share",
    "train/top3_box_share",
    "train/lr",
    "train/beta_roll",
    "train/beta_score",
    "train/regret_keep",
    "train/regret_box",
    "train/agreement",
    "eval/mean_score",
    "eval/upper_bonus_rate",
    "eval/yahtzee_rate",
    "eval/wall_clock_s",
    "eval/regret_per_game",
    "eval/regret_keep",
    "eval/regret_box",
    "eval_regret_turn/13",
    "eval_regret_box/chance",
]


def test_every_logged_metric_is_documented():
    docs = (ROOT / "docs" / "metrics.md").read_text()
    named = [f"`{k}`" in docs or f"`{k.split('/', 1)[1]}`" in docs for k in DOCUMENTED]  # in full, or in its section
    assert [k for k, ok in zip(DOCUMENTED, named, strict=True) if not ok] == []


def test_every_documented_metric_is_logged_at_log_every_1(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = [
        "fit",
        "--config",
        str(ROOT / "conf" / "ppo.yaml"),
        "--model.init_args.d_h=16",
        "--model.init_args.n_layers=1",
        "--model.init_args.head_hidden=16",
        "--model.init_args.games_per_batch=8",
        "--model.init_args.total_games=32",
        "--model.init_args.evaluations=2",
        "--model.init_args.eval_games=10",
        "--model.init_args.final_eval_games=0",
        "--model.init_args.log_every=1",
        "--trainer.enable_progress_bar=false",
        f"--trainer.logger.init_args.save_dir={tmp_path}",
        f"--trainer.callbacks.init_args.dirpath={tmp_path / 'ckpt'}",
    ]
    assert main(args) == 0
    rows = list(csv.DictReader(next(tmp_path.rglob("metrics.csv")).open()))
    missing = [k for k in DOCUMENTED if k not in rows[0]]
    assert not missing
    train = [r for r in rows if r["train/loss"]]
    assert len(train) == 4  # one row per update
    for key in (k for k in DOCUMENTED if k.startswith("train/")):
        assert all(r[key] != "" for r in train), key
    assert len([r for r in rows if r["eval/mean_score"]]) == 2  # one per evaluation interval


def test_per_head_entropy_counts_only_the_steps_where_that_head_acts():
    torch.manual_seed(0)
    model = PPO(d_h=8, n_layers=1, head_hidden=8, total_games=20)
    batch = model.collect().reshape(-1)
    rolling = batch[K.ROLL] < 2
    _, _, ent_keep, ent_box = model.evaluate_actions(batch[rolling])
    assert ent_keep > 0 and ent_box == 0  # no scoring step: the box head adds nothing
    _, _, ent_keep, ent_box = model.evaluate_actions(batch[~rolling])
    assert ent_keep == 0 and ent_box > 0
    # On the whole batch each head's entropy is its mean over its own steps.
    model.net.eval()
    with torch.no_grad():
        _, _, ent_keep_all, ent_box_all = model.evaluate_actions(batch)
        _, _, ent_keep_r, _ = model.evaluate_actions(batch[rolling])
        _, _, _, ent_box_s = model.evaluate_actions(batch[~rolling])
    assert float(ent_keep_all) == pytest.approx(float(ent_keep_r))
    assert float(ent_box_all) == pytest.approx(float(ent_box_s))
