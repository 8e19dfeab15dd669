"""A run driven into saturation is seen as it starts: its logits are logged, and the collapse rule names them."""

import json

import lightning as L
import pytest
import torch

from yahtzee_lightning.algorithms import A2C
from yahtzee_lightning.study.judging.claims import RULE
from yahtzee_lightning.study.results import SATURATED_LOGIT, _eval_columns, collapse
from yahtzee_lightning.study.running.trial import HISTORY, LatestMetrics, StudyRecorder


@pytest.mark.slow("a tiny run trained into saturation: about 15 s")
def test_a_tiny_run_driven_into_saturation_is_named_collapsed(tmp_path):
    # A learning rate of 0.5 with no clipping, no entropy bonus and raw advantages: the heads' logits
    # run into the thousands within a few dozen updates.
    torch.manual_seed(0)
    no_entropy = {k: 0.0 for k in ("beta_roll_max", "beta_roll_min", "beta_score_max", "beta_score_min")}
    model = A2C(
        d_h=16, n_layers=1, head_hidden=16, dropout=0.1, lr=0.5, warmup=0.0, hold=1.0, tau_clip=0.0,
        normalize_advantage=False, **no_entropy, total_games=160, games_per_batch=4, evaluations=4,
        eval_games=4, final_eval_games=0, diagnose_games=0, log_every=1,
    )  # fmt: skip
    L.Trainer(
        logger=[LatestMetrics()],
        callbacks=[StudyRecorder(str(tmp_path))],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    ).fit(model)
    rows = [json.loads(line) for line in (tmp_path / HISTORY).read_text().splitlines()]
    assert len(rows) == 4
    assert all(-1e9 < r["train/log_prob_taken"] <= 0 for r in rows)
    logits = [max(r["train/max_logit_keep"], r["train/max_logit_box"]) for r in rows]
    assert logits[0] < SATURATED_LOGIT <= logits[-1]  # it grew into saturation
    evals = [_eval_columns(r) | {"games": 40 * (i + 1)} for i, r in enumerate(rows)]
    verdict = collapse(evals)
    assert verdict["collapsed"] is True and "saturated logits" in verdict["collapse"]
    assert "(saturated logits)" in RULE


def test_healthy_logits_are_not_a_sign():
    ev = {"explained_variance": 0.9, "entropy_roll": 1.5, "top3_keep_share": 0.4, "mean_score": 200.0}
    healthy = [ev | {"games": g, "max_logit_keep": 243.0, "max_logit_box": 80.0} for g in (1000, 2000)]
    assert collapse(healthy)["collapsed"] is False
    box = [e | {"max_logit_box": 2800.0} for e in healthy]
    assert collapse(box) == {"collapsed": True, "collapse": "saturated logits", "collapsed_at": 1000}
