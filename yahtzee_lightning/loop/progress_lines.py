"""Training's progress: Lightning's bar on a terminal (on stderr, ``ProgressBarOnStderr``), and
where there is no terminal a line every interval, not silence.

Lightning's bar is for terminals; under nohup, CI, SLURM or Ray a run's output goes to a file, and
without this a run said nothing for an hour after its model summary. ``FitProgressLines``
prints, from the first process only, the project's one progress line (``..progress``):

``fit: 24,000/100,000 games (24%), return 141.3, eval score 187.2 (1,000 games), 93 games/s, 13m37s left``

counted in games for the project's algorithms (``total_games``, every rank's games), in training
steps for any other LightningModule.
"""

from __future__ import annotations

import contextlib
import math
import sys
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import TQDMProgressBar

from ..progress import ProgressLines

#: Logged metrics shown on the line (the progress bar's own), under the names they are shown with.
SHOWN = {"return": "return", "eval_score": "eval score"}


class ProgressBarOnStderr(TQDMProgressBar):
    """Lightning's bar on stderr (stdout keeps the results), with the epoch count: ``Epoch 3/5``."""

    def init_train_tqdm(self):
        with contextlib.redirect_stdout(sys.stderr):  # Lightning's bars write to sys.stdout as they find it
            return super().init_train_tqdm()

    def init_validation_tqdm(self):
        with contextlib.redirect_stdout(sys.stderr):
            return super().init_validation_tqdm()

    def on_train_epoch_start(self, trainer: L.Trainer, *args: Any) -> None:
        super().on_train_epoch_start(trainer, *args)
        if trainer.max_epochs and trainer.max_epochs > 0:
            self.train_progress_bar.set_description(f"Epoch {trainer.current_epoch + 1}/{trainer.max_epochs}")


class FitProgressLines(L.Callback):
    """A progress line every ``interval`` seconds (default: ``$YAHTZEE_LIGHTNING_PROGRESS_SECONDS``,
    else 30) while ``fit`` trains; the CLI adds it when stderr is not a terminal."""

    def __init__(self, interval: float | None = None) -> None:
        self.interval = interval
        self.lines: ProgressLines | None = None
        self.per_step = 1  # games (or steps) one training step adds
        self.eval_games: int | None = None  # games of an evaluation during training (not the final one's)

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not trainer.is_global_zero:
            return
        hparams = getattr(pl_module, "hparams", {})
        if "games_per_batch" in hparams and hasattr(pl_module, "total_updates"):
            # One training step is one update: games_per_batch games on every rank.
            self.per_step = hparams["games_per_batch"] * trainer.world_size
            total = pl_module.total_updates * self.per_step
            done = int(getattr(pl_module, "updates_done", 0)) * self.per_step  # read once: a resumed run
            unit = "game"
            self.eval_games = hparams.get("eval_games")
        else:
            steps = trainer.estimated_stepping_batches  # inf for a loader without a length: no total then
            total, done, unit = (int(steps) if math.isfinite(steps) else 0), trainer.global_step, "step"
        self.lines = ProgressLines(total, "fit", unit, interval=self.interval, initial=done)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, *args: Any) -> None:
        if self.lines is None:
            return
        if self.lines.due():  # the metrics are read only when a line is printed (a read waits for the device)
            self.lines.set_postfix_str(shown_metrics(trainer.callback_metrics, self.eval_games))
        self.lines.update(self.per_step)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.lines is not None:
            self.lines.set_postfix_str(shown_metrics(trainer.callback_metrics, self.eval_games))
            self.lines.close()
            self.lines = None


def shown_metrics(metrics: dict[str, Any], eval_games: int | None = None) -> str:
    """``return 141.3, eval score 187.2 (1,000 games)``: the logged metrics of ``SHOWN`` there are so
    far; the evaluation's games named, since the final evaluation at the end plays others (more)."""
    parts = [f"{label} {float(metrics[key]):.1f}" for key, label in SHOWN.items() if key in metrics]
    if eval_games and "eval_score" in metrics:
        parts[-1] += f" ({eval_games:,} games)"
    return ", ".join(parts)
