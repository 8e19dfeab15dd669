"""Solved tables are cached on disk, one file per rule variant."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch
from filelock import FileLock
from safetensors import SafetensorError

from ..digest import DIGEST_KEY, DigestError, tensors_sha256
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
        check_table_cache(rules)
        table = load_trusted(path, rules, device)
        if table is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Processes that start at once (a study's trials, test workers) solve it once: the first
            # solves, the others wait for its file and load it.
            with FileLock(f"{path}.lock"):
                table = load_trusted(path, rules, device)
                if table is None:
                    table = solve(rules, device=device, progress=progress)
                    table.save(path)
        _MEMORY[key] = table
    return _MEMORY[key]


def check_table_cache(rules: Rules) -> None:
    """Raise ``TableFormatError`` (one line) where the table's cache file cannot be: a folder there,
    or a file where a parent folder should be (caught by the commands as a usage error)."""
    path = table_path(rules)
    if path.is_dir() or any(p.is_file() for p in path.parents):
        where = "is a folder" if path.is_dir() else "has a file as parent"
        raise TableFormatError(f"{path}: the table cache {where}; move it away")


def load_trusted(path: Path, rules: Rules, device: torch.device | str = "cpu") -> OptimalTable | None:
    """The table saved at ``path``, or None when there is none or it cannot be trusted (damaged,
    another format, a table for other rules under this one's name, a file without its tensor): the
    caller solves again, so a table is rebuilt, never read wrong."""
    if not path.exists():
        return None
    try:
        return OptimalTable.load(path, rules=rules, device=device)
    except (TableFormatError, OSError, SafetensorError) as e:
        logging.getLogger(__name__).warning("warning: table unusable, solving it again: %s", e)
        return None


_MOMENTS: dict[tuple[Rules, str], torch.Tensor] = {}


def moments_path(rules: Rules) -> Path:
    return cache_dir() / "tables" / f"moments3_{rules.tag()}.safetensors"


def load_or_solve_moments(table: OptimalTable, progress: bool = True) -> torch.Tensor:
    """``(2, 8192, 64, 2)``: the second and third moments of the points to come under ``table``'s
    player (``.moments.solve_moments``): from memory, the disk cache (checked against the
    table's checksum, so a rebuilt table rebuilds them) or solved (about 4 minutes on a CPU)."""
    from safetensors.torch import load_file, save_file

    from .moments import solve_moments
    from .table import values_sha256

    key = (table.rules, str(table.values.device))
    if key in _MOMENTS:
        return _MOMENTS[key]
    path, table_sha = moments_path(table.rules), values_sha256(table.values)
    higher = None
    if path.exists():
        try:
            from safetensors import safe_open

            with safe_open(str(path), framework="pt") as f:
                meta = f.metadata() or {}
            if meta.get("table_sha256") == table_sha:
                higher = load_file(str(path))["moments"]
                if DIGEST_KEY not in meta:  # written before digests
                    logging.getLogger(__name__).warning("warning: %s: carry no sha256 (written before digests)", path)
                elif tensors_sha256({"moments": higher}) != meta[DIGEST_KEY]:
                    raise DigestError(f"{path}: the moments do not match their sha256 (damaged or edited)")
                higher = higher.to(table.values.device)
        except (OSError, SafetensorError, DigestError) as e:
            higher = None
            logging.getLogger(__name__).warning("warning: moments unusable, solving them again: %s", e)
        if higher is not None and higher.shape != (2, *table.values.shape):
            higher = None
    if higher is None:
        higher = solve_moments(table, progress=progress)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_file(
            {"moments": higher.cpu().contiguous()},
            str(path),
            metadata={
                "table_sha256": table_sha,
                "rules_tag": table.rules.tag(),
                DIGEST_KEY: tensors_sha256({"moments": higher.cpu()}),
            },
        )
    _MOMENTS[key] = higher
    return higher
