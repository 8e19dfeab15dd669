"""Learning-rate, entropy and discount schedules, as functions of the share of training done."""

from __future__ import annotations


def lr_factor(frac: float, warmup: float = 0.05, hold: float = 0.70, floor: float = 0.01, start: float = 0.0) -> float:
    """Linear warm-up from ``start`` to 1 over ``warmup``, hold for ``hold``, then linear decay to ``floor``."""
    frac = min(max(frac, 0.0), 1.0)
    if frac < warmup:
        return max(start + (1.0 - start) * frac / warmup, 1e-3)
    if frac < warmup + hold:
        return 1.0
    decay = 1.0 - warmup - hold
    return 1.0 - (1.0 - floor) * min((frac - warmup - hold) / decay, 1.0) if decay > 0 else floor


def anneal(frac: float, start: float, end: float, hold: float, length: float) -> float:
    """``start`` for the first ``hold`` of training, linear to ``end`` over ``length``, then ``end``."""
    frac = min(max(frac, 0.0), 1.0)
    if frac <= hold or length <= 0:
        return start if frac <= hold else end
    return start + (end - start) * min((frac - hold) / length, 1.0)
