"""What the learning tests share: a tiny network budget and a Trainer that prints nothing."""

import lightning as L

SMALL = {"d_h": 64, "n_layers": 2, "head_hidden": 64, "evaluations": 1, "eval_games": 20, "final_eval_games": 0}


def fit_quietly(model: L.LightningModule) -> None:
    """Train ``model`` for its own budget: no logger, checkpoint, bar or validation."""
    trainer = L.Trainer(
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
    )
    trainer.fit(model)
