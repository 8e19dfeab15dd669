"""What the learning tests share: a tiny network budget and a Trainer that prints nothing."""

import lightning as L

from yahtzee_lightning.loop.trainer import quiet_trainer

SMALL = {"d_h": 64, "n_layers": 2, "head_hidden": 64, "evaluations": 1, "eval_games": 20, "final_eval_games": 0}


def fit_quietly(model: L.LightningModule) -> None:
    """Train ``model`` for its own budget: no logger, checkpoint, bar or validation."""
    quiet_trainer().fit(model)
