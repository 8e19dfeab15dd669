"""Operators dispatched per batch, split into collection and update: the host's cost, on any machine.

Every aten operator a batch dispatches (forward and backward, optimizer included) is one kernel
launch on a GPU and one dispatch on a CPU; at this project's network sizes the host's time per
operator, not arithmetic, bounds the speed. Their count does not depend on the machine, its load
or its clock, so a test may hold it (``tests/algorithms/test_op_count.py``) and a benchmark prints
it (``yahtzee-lightning bench ops``).

``count_ops`` trains a recipe for a few batches under a Trainer and counts, with a
``TorchDispatchMode``, the operators of each batch's collection and update after ``warmup``
batches (the first ones build the env, the optimizer state and the caches).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class OpCounter(TorchDispatchMode):
    """Counts every aten operator dispatched inside it, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        self.counts[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


@dataclass
class OpCount:
    """The operators of each counted batch: ``collect[i]`` and ``update[i]`` for batch ``i``."""

    games_per_batch: int
    steps: int
    collect: list[Counter] = field(default_factory=list)
    update: list[Counter] = field(default_factory=list)

    def per_batch(self, part: str) -> float:
        """Mean operators per batch of ``part`` (``collect``, ``update`` or ``total``)."""
        if part == "total":
            return self.per_batch("collect") + self.per_batch("update")
        counts = getattr(self, part)
        return sum(sum(c.values()) for c in counts) / max(1, len(counts))

    def quiet_update(self) -> int:
        """The fewest operators of an update: one that logs nothing (``log_every`` apart)."""
        return min(sum(c.values()) for c in self.update)

    def top(self, part: str, n: int = 6) -> list[tuple[str, float]]:
        total: Counter[str] = Counter()
        for c in getattr(self, part):
            total.update(c)
        k = max(1, len(getattr(self, part)))
        return [(name, count / k) for name, count in total.most_common(n)]


def recipe_args(config: str | Path, **overrides: Any) -> tuple[type, dict[str, Any]]:
    """The algorithm class and its arguments from a recipe YAML under ``conf/`` (``overrides`` on top)."""
    import importlib

    from ..untrusted import read_yaml

    model = read_yaml(config)["model"]
    module, _, name = model["class_path"].rpartition(".")
    return getattr(importlib.import_module(module), name), {**model.get("init_args", {}), **overrides}


def count_ops(cls: type, args: dict[str, Any], warmup: int = 2, batches: int = 10) -> OpCount:
    """Train ``cls(**args)`` for ``warmup + batches`` batches on the CPU (no evaluation, no
    checkpoint) and count the operators of the last ``batches`` batches' collection and update."""
    from ..game.rules import N_ROLLS
    from .trainer import quiet_trainer

    n = warmup + batches
    k = (
        1
        if not args.get("ensemble")
        else len(args["ensemble"])
        if isinstance(args["ensemble"], list)
        else args["ensemble"]
    )
    games = args.get("games_per_batch", 20)
    settings = {**args, "total_games": games * n, "evaluations": 1, "final_eval_games": 0, "init_from": None}
    steps = N_ROLLS * (1 if settings.get("task") == "single_turn" else 13)
    result = OpCount(games * k, steps)

    class Counted(cls):  # type: ignore[misc, valid-type]
        def training_step(self, update: int, batch_idx: int) -> None:
            counting = int(self.updates_done) >= warmup
            with _counting(result.collect, counting):
                batch = self.collect()
            with _counting(result.update, counting):
                self.learn(batch)

    torch.manual_seed(0)
    model = Counted(**settings)
    quiet_trainer(accelerator="cpu", devices=1, max_epochs=1).fit(model)
    return result


@contextlib.contextmanager
def _counting(into: list[Counter], on: bool) -> Iterator[None]:
    if not on:
        yield
        return
    with OpCounter() as counter:
        yield
    into.append(counter.counts)
