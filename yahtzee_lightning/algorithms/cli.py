"""``yahtzee-lightning fit|validate``: LightningCLI over any LightningModule, configured in YAML.

``--model`` takes a class path (``yahtzee_lightning.algorithms.PPO`` or a user's own module) and
every constructor argument is a YAML key or a dotted override (``--model.init_args.lr 3e-4``).
Unknown or ill-typed keys fail with the key's name (jsonargparse).
"""

from __future__ import annotations

import lightning as L
from lightning.pytorch.cli import LightningCLI

# Loggers (CSV + TensorBoard) and checkpointing (every epoch = every evaluation interval, plus
# ``last.ckpt`` for ``--ckpt_path last``) are set in each YAML under conf/.
TRAINER_DEFAULTS = {"num_sanity_val_steps": 0}


def main(argv: list[str] | None = None) -> int:
    LightningCLI(
        L.LightningModule,
        subclass_mode_model=True,
        trainer_defaults=TRAINER_DEFAULTS,
        save_config_kwargs={"overwrite": True},
        args=argv,
    )
    return 0
