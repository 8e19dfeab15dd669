"""Launching ``fit`` on several processes or nodes (docs/devices.md): what is checked, so that a
bad launch ends in one line naming its setting instead of a hang or a silently different run.

* ``trainer.num_nodes`` > 1 with nothing that starts the other nodes and names the master (no
  torchrun, no SLURM ``srun``, no ``MASTER_ADDR`` + ``NODE_RANK``): Lightning would wait for the
  missing nodes until its process group times out (30 minutes). Checked before the trainer exists.
* Ranks that disagree on the model's settings (one node launched with another config or an
  override the others lack): DDP would average gradients of different runs without a word.
  Checked as the ranks meet (``SameRunOnEveryRank``), on every rank, so every rank stops.
* ``total_games`` that is not a multiple of ``games_per_batch`` x ranks: ``total_games`` is
  global and ``games_per_batch`` per rank, so the run would train fewer games than asked.
* A run resumed on another number of ranks than it was saved from (``check_resumed_ranks``).
"""

from __future__ import annotations

import os
import socket
from typing import Any

import lightning as L


class LaunchError(ValueError):
    """A launch on several processes or nodes that cannot run as asked; the message names the setting."""


def launcher_found() -> bool:
    """Whether something starts this node's processes and names the master: torchrun, SLURM's srun,
    LSF's jsrun, or ``MASTER_ADDR`` and ``NODE_RANK`` set by hand on every node."""
    from lightning.fabric.plugins.environments import LSFEnvironment, SLURMEnvironment, TorchElasticEnvironment

    if TorchElasticEnvironment.detect() or LSFEnvironment.detect():
        return True
    if "SLURM_NTASKS" in os.environ and SLURMEnvironment.detect():
        return True
    return "MASTER_ADDR" in os.environ and "NODE_RANK" in os.environ


def check_nodes(num_nodes: Any) -> None:
    """Refuse ``trainer.num_nodes`` > 1 that no launcher serves, or whose master does not resolve."""
    if not isinstance(num_nodes, int) or num_nodes <= 1:
        return
    if not launcher_found():
        raise LaunchError(
            f"trainer.num_nodes={num_nodes}, but nothing starts the other nodes or names the master: run "
            f"every node under torchrun (--nnodes {num_nodes} --node_rank K --master_addr HOST) or SLURM's srun, "
            "or set MASTER_ADDR, MASTER_PORT and NODE_RANK on each (docs/devices.md)"
        )
    address = os.environ.get("MASTER_ADDR")
    if address:
        try:
            socket.getaddrinfo(address, None)
        except OSError as e:
            raise LaunchError(
                f"trainer.num_nodes={num_nodes}: the master MASTER_ADDR={address} does not resolve ({e.strerror})"
            ) from None


def run_settings(module: L.LightningModule) -> dict[str, str]:
    """What every rank must agree on: the module's class and each of its settings, as text."""
    hparams = dict(getattr(module, "hparams", {}))
    return {"model": f"{type(module).__module__}.{type(module).__qualname__}"} | {
        k: repr(v) for k, v in sorted(hparams.items())
    }


def disagreement(per_rank: list[dict[str, str]]) -> str | None:
    """The first setting some rank holds differently from rank 0, worded in one line; None if all agree."""
    first = per_rank[0]
    for rank, settings in enumerate(per_rank[1:], start=1):
        for key in sorted(first.keys() | settings.keys()):
            if first.get(key) != settings.get(key):
                mine, theirs = first.get(key, "(not set)"), settings.get(key, "(not set)")
                return (
                    f"the ranks disagree on {key}: rank 0 has {mine}, rank {rank} has {theirs}; "
                    "launch every node with the same config and overrides"
                )
    return None


def check_budget(hparams: Any, world_size: int) -> None:
    """``total_games`` (global) must be a multiple of ``games_per_batch`` (per rank) x ranks."""
    if world_size <= 1 or "games_per_batch" not in hparams or "total_games" not in hparams:
        return
    per_update = hparams["games_per_batch"] * world_size
    if hparams["total_games"] % per_update:
        raise LaunchError(
            f"games_per_batch={hparams['games_per_batch']} on each of {world_size} ranks trains {per_update} games "
            f"an update, and total_games={hparams['total_games']} (all ranks together) is not a multiple of it: "
            f"the run would train {hparams['total_games'] // per_update * per_update} games; "
            "change games_per_batch or total_games"
        )


def planned_ranks(trainer_config: Any) -> int | None:
    """The ranks a launch will have, from its trainer settings alone (``devices`` x ``num_nodes``),
    or None where only Lightning knows (``devices: auto`` or ``-1``: it counts the machine's)."""
    devices, nodes = trainer_config.get("devices"), trainer_config.get("num_nodes") or 1
    if isinstance(devices, str) and devices.isdigit():
        devices = int(devices)
    if isinstance(devices, (list, tuple)):
        devices = len(devices)
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1 or not isinstance(nodes, int):
        return None
    return devices * nodes


def check_budget_early(config: Any) -> None:
    """The budget's division between ranks, checked before any process starts or connects (the
    same rule as ``check_budget``, which checks it again as the ranks meet); under torchrun every
    node's process checks it, and only rank 0 says why (the others stop without a word)."""
    ranks = planned_ranks(config.get("trainer") or {})
    model = (config.get("model") or {}).get("init_args") or {}
    if not ranks or ranks <= 1 or not hasattr(model, "get"):
        return
    try:
        check_budget(model, ranks)
    except LaunchError:
        if os.environ.get("RANK", "0") != "0":
            raise SystemExit(2) from None
        raise


def check_resumed_ranks(checkpoint: dict[str, Any], world_size: int) -> None:
    """A run resumes on as many ranks as it was saved from: its count of games and its budget's
    updates (``total_games // (games_per_batch x ranks)``) are counted in updates of all its ranks."""
    saved = (checkpoint.get("yahtzee_lightning") or {}).get("devices")
    if isinstance(saved, int) and saved != world_size:
        raise LaunchError(
            f"the checkpoint was trained on {saved} rank(s) and this launch has {world_size} "
            "(trainer.devices x trainer.num_nodes): resume it on as many, its games and budget are counted in them"
        )


def gather(obj: Any) -> list[Any]:
    """``obj`` from every rank, in rank order (``torch.distributed``'s all-gather of objects)."""
    import torch.distributed as dist

    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


class SameRunOnEveryRank(L.Callback):
    """As the ranks meet (``setup``, after the process group exists): every rank holds the same
    settings, and the budget divides between them; else every rank stops with the same line."""

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        if trainer.world_size <= 1:
            return
        problem = disagreement(gather(run_settings(pl_module)))
        if problem:
            raise LaunchError(problem)
        check_budget(getattr(pl_module, "hparams", {}), trainer.world_size)
