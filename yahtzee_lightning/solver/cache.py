"""Solved tables are cached on disk, one file per rule variant."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch
from safetensors import SafetensorError

from ..game import Rules
from .table import OptimalTable, TableFormatError, solve


def cache_dir() -> Path:
    """``$YAHTZEE_LIGHTNING_CACHE`` or ``~/.cache/yahtzee_lightning``."""
    return Path(os.environ.get("YAHTZEE_LIGHTNING_CACHE", Path.home() / ".cache" / "yahtzee_lightning"))


def table_path(rules: Rules) -> Path:
    return cache_dir() / "tables" / f"optimal_{rules.tag()}.safetensors"


_MEMORY: dict[tuple[Rules, str], OptimalTable] = {}


def load_or_solve(
    rules: Rules | None = None, device: torch.device | str = "cpu", progress: bool = True
) -> OptimalTable:
    """The optimal table for ``rules``: from memory, from the disk cache, or solved and cached."""
    rules = rules or Rules()
    key = (rules, str(device))
    if key not in _MEMORY:
        path = table_path(rules)
        table = load_trusted(path, rules, device)
        if table is None:
            table = solve(rules, device=device, progress=progress)
            table.save(path)
        _MEMORY[key] = table
    return _MEMORY[key]


def load_trusted(path: Path, rules: Rules, device: torch.device | str = "cpu") -> OptimalTable | None:
    """The table saved at ``path``, or None when there is none or it cannot be trusted (damaged,
    another format): the caller solves again, so a table is rebuilt, never read wrong. A table for
    other rules is still an error (``ValueError``)."""
    if not path.exists():
        return None
    try:
        return OptimalTable.load(path, rules=rules, device=device)
    except (TableFormatError, OSError, SafetensorError) as e:
        logging.getLogger(__name__).warning("warning: table unusable, solving it again: %s", e)
        return None
