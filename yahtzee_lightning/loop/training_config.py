"""The run's own training YAML, carried inside its checkpoints, so that an exported agent carries it
as the shipped agents do (``checkpoints/NAME/*.yaml``) without the user naming the file.

``TrainingConfig`` is the CLI's config callback (Lightning's ``SaveConfigCallback``, which
also writes ``config.yaml`` into the log folder): it keeps the whole config ``fit`` ran with (the
YAML and every override, as LightningCLI dumps it) and stores it in the callbacks' state of each
checkpoint, which the checkpoint's sha256s cover. ``export`` writes it next to the agent
(``carried_config``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lightning as L
from lightning.fabric.utilities.cloud_io import get_filesystem
from lightning.pytorch.cli import SaveConfigCallback

#: The callbacks' state key under which the YAML is stored.
STATE_KEY = "TrainingConfig"


class TrainingConfig(SaveConfigCallback):
    """Lightning's config callback, whose state (in every checkpoint) is the config's YAML and name."""

    yaml: str | None = None
    _written: str | None = None  # the config.yaml Lightning wrote in ``setup``, where it wrote one

    @property
    def state_key(self) -> str:
        return STATE_KEY

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        # Where Lightning writes config.yaml, asked on every rank as Lightning asks it (``log_dir`` is a
        # collective under DDP: rank 0 alone, in ``save_config``, would wait for the others forever).
        self._written = None
        if self.save_to_log_dir and not self.already_saved and (log_dir := trainer.log_dir):
            self._written = os.path.join(log_dir, self.config_filename)
        super().setup(trainer, pl_module, stage)

    def save_config(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """(Rank 0, which writes the checkpoints.) The config as LightningCLI saves it: every key. Where
        Lightning has just written it as ``config.yaml`` (the same dump), read back, not dumped again:
        a dump checks every value, a sixth of a small fit's CPU."""
        written = self._written
        if written and (fs := get_filesystem(written)).isfile(written):
            with fs.open(written, "r") as f:
                self.yaml = f.read()
        else:
            self.yaml = self.parser.dump(self.config, skip_none=False)

    def state_dict(self) -> dict[str, Any]:
        return {"file": config_file_name(self.config), "yaml": self.yaml} if self.yaml else {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Nothing restored: a resumed run's config is the one given now (docs/guide.md, Resuming a run)."""


def config_file_name(config: Any) -> str:
    """``a2c_cpu.yaml`` for a run of ``--config conf/a2c_cpu.yaml`` (its last config file), else ``fit.yaml``."""
    files = config.get("config") if hasattr(config, "get") else None
    files = [f for f in (files or []) if f is not None]
    name = Path(str(getattr(files[-1], "relative", files[-1]))).name if files else ""
    return name if name.endswith((".yaml", ".yml")) else "fit.yaml"


def carried_config(checkpoint: dict[str, Any]) -> tuple[str, str] | None:
    """(file name, YAML) of the run a loaded checkpoint comes from, where ``TrainingConfig`` saved it."""
    state = (checkpoint.get("callbacks") or {}).get(STATE_KEY) or {}
    name, text = state.get("file"), state.get("yaml")
    if isinstance(name, str) and isinstance(text, str) and Path(name).name == name and name.endswith((".yaml", ".yml")):
        return name, text
    return None
