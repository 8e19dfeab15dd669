"""``yahtzee-lightning fit|validate``: LightningCLI over any LightningModule, configured in YAML.

``--model`` takes a class path (``yahtzee_lightning.algorithms.PPO`` or a user's own module) and
every constructor argument is a YAML key or a dotted override (``--model.init_args.lr 3e-4``).
Unknown or ill-typed keys fail with the key's name (jsonargparse).
"""

from __future__ import annotations

import sys

import lightning as L
from lightning.pytorch.cli import LightningCLI

from . import resume

# Loggers (CSV + TensorBoard) and checkpointing (every epoch = every evaluation interval, plus
# ``last.ckpt`` every few minutes for ``--ckpt_path last``: ``RunCheckpoint``) are set in each YAML under conf/.
# Resuming follows the rule in ``resume.py`` (README, "Resuming a run").
TRAINER_DEFAULTS = {"num_sanity_val_steps": 0}


class ResumingCLI(LightningCLI):
    """LightningCLI that enforces the resume rule (``resume.py``) and ends bad settings in one line."""

    def _parse_ckpt_path(self) -> None:
        """Off: LightningCLI would overwrite the config's model settings with a named checkpoint's,
        silently dropping overrides (and not for ``last``). The rule instead: the config as given,
        the settings a checkpoint fixes checked against it in ``before_fit``."""

    def instantiate_classes(self) -> None:
        try:
            super().instantiate_classes()
        except ValueError as e:  # a setting the module refused (validate_settings): its message, no traceback
            while (e.__cause__ or e.__context__) is not None:  # jsonargparse wraps it: the module's own error
                e = e.__cause__ or e.__context__
            usage_error(self.subcommand, str(e))

    def before_fit(self) -> None:
        config = self.config_init[self.subcommand]
        try:
            path, ckpt = resume.resolve_ckpt_path(config.get("ckpt_path"), self.trainer)
            if ckpt is not None:
                resume.check_overrides(self.model, ckpt, path)
        except resume.ResumeError as e:
            usage_error(self.subcommand, str(e))
        config["ckpt_path"] = path

    def after_fit(self) -> None:
        resume.ensure_final_evaluation(self.trainer, self.model)


def usage_error(subcommand: str | None, message: str) -> None:
    print(f"yahtzee-lightning {subcommand or 'fit'}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    ResumingCLI(
        L.LightningModule,
        subclass_mode_model=True,
        trainer_defaults=TRAINER_DEFAULTS,
        save_config_kwargs={"overwrite": True},
        args=argv,
    )
    return 0
