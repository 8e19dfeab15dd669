"""What every benchmark writes next to its rows: the machine, the versions, the date."""

from __future__ import annotations

import json
import time
from typing import Any

import torch

from yahtzee_lightning.machine import machine


def write_json(path: str | None, benchmark: str, rows: list[dict], **extra) -> None:
    if not path:
        return
    meta = {
        "benchmark": benchmark,
        "threads": torch.get_num_threads(),
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        **extra,
    }
    with open(path, "w") as f:
        json.dump({**meta, "rows": rows}, f, indent=2)


def sync(device: str | torch.device) -> None:
    """Wait for the device's queued work, so that a timer read after it counts that work."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def quiet_trainer(**kwargs: Any) -> Any:
    """A CPU Lightning Trainer that only trains: no logger, checkpoint, bar, summary or validation
    (what a benchmark times is the training loop); ``kwargs`` add to or override that."""
    import lightning as L

    quiet = {
        "accelerator": "cpu",
        "devices": 1,
        "max_epochs": -1,
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "limit_val_batches": 0,
        "num_sanity_val_steps": 0,
    }
    return L.Trainer(**{**quiet, **kwargs})
