"""A Trainer that trains a module for its own budget and prints nothing: for tests, benchmarks and
scripts that call ``fit`` on a module they built (the command line's trainer is ``fit``'s own)."""

from __future__ import annotations

from typing import Any

import lightning as L


def quiet_trainer(**overrides: Any) -> L.Trainer:
    """No logger, checkpoint, progress bar, model summary or validation; ``overrides`` on top
    (``accelerator``, ``default_root_dir``, ``max_epochs``, ...). The module's own ``evaluations``
    decide how many epochs it trains."""
    settings: dict[str, Any] = {
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "num_sanity_val_steps": 0,
        "limit_val_batches": 0,
    }
    return L.Trainer(**(settings | overrides))
