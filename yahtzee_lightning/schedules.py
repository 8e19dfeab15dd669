"""Learning-rate, entropy and discount schedules, as functions of the share of training done."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: ``stepped``: the learning rate follows ``lr_factor`` over training. ``unstepped``: the schedule is
#: built and never stepped, so the rate stays at its first value, as the published code's PPO ran
#: (Lightning ignores a configured scheduler under manual optimisation).
LR_SCHEDULES = ("stepped", "unstepped")


def lr_factor(frac: float, warmup: float = 0.05, hold: float = 0.70, floor: float = 0.01, start: float = 0.0) -> float:
    """Linear warm-up from ``start`` to 1 over ``warmup``, hold for ``hold``, then linear decay to ``floor``."""
    frac = min(max(frac, 0.0), 1.0)
    if frac < warmup:
        return max(start + (1.0 - start) * frac / warmup, 1e-3)
    if frac < warmup + hold:
        return 1.0
    decay = 1.0 - warmup - hold
    return 1.0 - (1.0 - floor) * min((frac - warmup - hold) / decay, 1.0) if decay > 0 else floor


def run_lr_factor(h: Mapping[str, Any], frac: float) -> float:
    """``lr_factor`` at ``frac`` under a run's settings (``warmup``, ``hold``, ``r_alpha``,
    ``warmup_start``, ``lr_schedule``): one reading for the scheduler and the packed members."""
    frac = frac if h.get("lr_schedule", "stepped") == "stepped" else 0.0
    return lr_factor(frac, h["warmup"], h["hold"], h["r_alpha"], h.get("warmup_start", 0.0))


def anneal(frac: float, start: float, end: float, hold: float, length: float) -> float:
    """``start`` for the first ``hold`` of training, linear to ``end`` over ``length``, then ``end``."""
    frac = min(max(frac, 0.0), 1.0)
    if frac <= hold or length <= 0:
        return start if frac <= hold else end
    return start + (end - start) * min((frac - hold) / length, 1.0)
