"""``RunCheckpoint``: Lightning's ModelCheckpoint, made to lose little work and to follow its run folder.

* ``save_every_minutes``: ``last.ckpt`` is also written after the first update that ends that
  long after the previous save (training time), whatever the evaluation interval: a run killed
  before its first interval still leaves a checkpoint. (ModelCheckpoint's own
  ``train_time_interval`` is ignored under manual optimisation, which every algorithm here uses.)
* A run folder moved elsewhere and resumed keeps writing its ``last.ckpt`` (ModelCheckpoint
  would leave it stale and write ``last-v1.ckpt``, since the saved absolute path no longer matches).
* A run resumed with a larger budget (``total_games``) than it was saved with trains on to it, also
  when the saved run had finished: its epochs are raised before Lightning decides the run is done.
* Each checkpoint it writes is named, with its sha256, in its folder's ``manifest.json`` as soon as it
  is written: a study's ``--force`` deletes it even where the study's own process was killed first.
* ``runs_apart`` (on by default): ``fit`` puts each run of a config in a folder of its own,
  ``DIRPATH/version_K`` (K: the version its logs start under), and ``--ckpt_path last`` resumes the
  newest run in its folder, instead of a second run writing ``last-v1.ckpt`` beside the first
  run's ``last.ckpt``. Off (the study's trials, one run per folder): ``DIRPATH`` as given. The
  CLI reads it (``cli.place_run``), before the callback exists.
"""

from __future__ import annotations

import importlib
import math
import os
import time
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint

from ..manifest import Manifest


class RunCheckpoint(ModelCheckpoint):
    """ModelCheckpoint plus a time-based ``last.ckpt`` (every ``save_every_minutes`` of training, None: off)
    and a folder per run (``runs_apart``)."""

    def __init__(
        self, *args: Any, save_every_minutes: float | None = 5.0, runs_apart: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.runs_apart = runs_apart
        if save_every_minutes is not None and not save_every_minutes >= 0:
            raise ValueError(f"save_every_minutes must be >= 0 (or None: off), got {save_every_minutes!r}")
        self.save_every_minutes = save_every_minutes
        self._last_timed_save = time.monotonic()

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        super().on_train_start(trainer, pl_module)
        self._last_timed_save = time.monotonic()

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, *args: Any, **kwargs: Any) -> None:
        super().on_train_batch_end(trainer, pl_module, *args, **kwargs)
        if self.save_every_minutes is None or not self.save_last or self._should_skip_saving_checkpoint(trainer):
            return
        due = time.monotonic() - self._last_timed_save >= 60 * self.save_every_minutes
        if trainer.strategy.broadcast(due):  # rank 0 decides, so that every rank saves together
            self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))
            self._last_timed_save = time.monotonic()

    def _save_checkpoint(self, trainer: L.Trainer, filepath: str) -> None:
        super()._save_checkpoint(trainer, filepath)
        if trainer.is_global_zero and os.path.isfile(filepath):  # written: the folder's manifest names it
            Manifest.read(os.path.dirname(filepath)).add([os.path.basename(filepath)])

    def on_load_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: dict[str, Any]) -> None:
        super().on_load_checkpoint(trainer, pl_module, checkpoint)
        extend_to_budget(trainer, pl_module, checkpoint)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        if self.dirpath and not self.last_model_path and self.save_last:  # the folder moved: this one's last.ckpt
            self.last_model_path = os.path.join(self.dirpath, self.CHECKPOINT_NAME_LAST + self.FILE_EXTENSION)


def is_run_checkpoint(class_path: str) -> bool:
    """Whether a config's callback ``class_path`` names ``RunCheckpoint`` (or a subclass)."""
    if "." not in class_path:  # jsonargparse's short form
        return class_path == RunCheckpoint.__name__
    module, _, name = class_path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return False
    return isinstance(cls, type) and issubclass(cls, RunCheckpoint)


def extend_to_budget(trainer: L.Trainer, module: L.LightningModule, checkpoint: dict[str, Any]) -> None:
    """Give a resumed run enough epochs for what its budget has left (Lightning would otherwise end a
    run saved at its old last epoch at once, "max_epochs reached", before any hook of the module runs).
    An epoch count asked for on the command line (``trainer.max_epochs``) is kept."""
    total, per_epoch = getattr(module, "total_updates", None), getattr(module, "updates_per_epoch", None)
    if not isinstance(total, int) or not isinstance(per_epoch, int) or getattr(module, "_epochs_asked", True):
        return
    done = int(checkpoint.get("state_dict", {}).get("updates_done", 0))
    try:
        epochs = int(checkpoint["loops"]["fit_loop"]["epoch_progress"]["current"]["processed"])
    except (KeyError, TypeError, ValueError):
        return
    if (left := total - done) > 0 and trainer.fit_loop.max_epochs is not None:
        trainer.fit_loop.max_epochs = max(trainer.fit_loop.max_epochs, epochs + math.ceil(left / per_epoch))
