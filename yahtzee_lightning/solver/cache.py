"""Solved tables are cached on disk, one file per rule variant."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from ..game import Rules
from .table import OptimalTable, solve


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
        if path.exists():
            table = OptimalTable.load(path, rules=rules, device=device)
        else:
            table = solve(rules, device=device, progress=progress)
            table.save(path)
        _MEMORY[key] = table
    return _MEMORY[key]
