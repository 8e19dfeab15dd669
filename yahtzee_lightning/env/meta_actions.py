"""Yuan's 23 meta-actions (docs/hyperparameters.md), as an optional action space over the same env.

0-5: keep every die showing face 1..6; 6: keep the most common face; 7: keep the longest run of
consecutive faces (one die each); 8: keep the two most common faces; 9: keep the 4s, 5s and 6s;
10-22: score box 0-12. A meta-action becomes an ordinary (keep pattern, box) pair, so every
player, loss and evaluation works unchanged; ``meta_mask`` says which are legal now.
"""

from __future__ import annotations

from functools import cache

import torch
from tensordict import TensorDictBase

from ..game import N_BOXES, dice_index, tables
from ..game.rules import N_ROLLS
from ..game.tables import take
from . import keys as K

N_KEEP_META = 10
N_META = N_KEEP_META + N_BOXES
META_NAMES = (
    *(f"keep_{v}s" for v in range(1, 7)),
    "keep_most_common",
    "keep_longest_run",
    "keep_two_most_common",
    "keep_4_to_6",
    *(f"score_{b}" for b in range(N_BOXES)),
)


def _pattern(dice: list[int], keep_faces: list[int], one_each: bool = False) -> int:
    pattern, used = 0, set()
    for i, v in enumerate(dice):
        if v in keep_faces and not (one_each and v in used):
            pattern |= 1 << i
            used.add(v)
    return pattern


@cache
def _cpu_table() -> torch.Tensor:
    """(252, 10): the keep pattern of each keep meta-action on each sorted dice multiset."""
    T = tables()
    rows = []
    for d, c in zip(T.dice.tolist(), T.counts.tolist(), strict=True):
        # Most common faces, ties to the higher face (it scores more).
        by_count = sorted(range(1, 7), key=lambda v: (c[v - 1], v), reverse=True)
        best_run, run = [], []
        for v in range(1, 7):
            run = run + [v] if c[v - 1] else []
            if len(run) >= len(best_run):
                best_run = list(run)
        rows.append(
            [_pattern(d, [v]) for v in range(1, 7)]
            + [
                _pattern(d, by_count[:1]),
                _pattern(d, best_run, one_each=True),
                _pattern(d, by_count[:2]),
                _pattern(d, [4, 5, 6]),
            ]
        )
    return torch.tensor(rows, dtype=torch.int64)


def meta_keep_table(device: torch.device | str | None = None) -> torch.Tensor:
    return _cpu_table().to(device)


def meta_mask(obs: TensorDictBase) -> torch.Tensor:
    """Legal meta-actions (..., 23): keep actions while rolling, legal boxes when scoring."""
    rolling = (obs[K.ROLL] < N_ROLLS - 1).unsqueeze(-1)
    keeps = rolling.expand(*rolling.shape[:-1], N_KEEP_META)
    return torch.cat([keeps, obs[K.BOX_MASK] & ~rolling], -1)


def meta_to_action(meta: torch.Tensor, obs: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
    """Meta-actions (...) to ``(keep pattern, box)`` for the dice in ``obs``."""
    table = meta_keep_table(meta.device)
    patterns = take(table, dice_index(obs[K.DICE]))
    keep = patterns.gather(-1, meta.clamp(max=N_KEEP_META - 1).unsqueeze(-1)).squeeze(-1)
    box = (meta - N_KEEP_META).clamp(min=0)
    return keep, box
