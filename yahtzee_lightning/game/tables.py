"""Precomputed tables shared by the engine, the environment and the solver.

Built once per device and cached: the 252 sorted dice multisets, the 462 multisets of 0-5 kept
dice, the 32 keep patterns, base box scores and the re-roll transition probabilities.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cache

import torch

from .rules import JOKER_VALUES, N_BOXES, N_DICE, N_FACES, N_KEEPS


@dataclass(frozen=True)
class Tables:
    dice: torch.Tensor  # (252, 5) int64 sorted face values 1..6
    counts: torch.Tensor  # (252, 6) int64 face counts
    code_to_index: torch.Tensor  # (7776,) int64: base-6 code of any ordered roll -> multiset index
    keep_bits: torch.Tensor  # (32, 5) bool: bit i of pattern k keeps die i
    keep_to_kept: torch.Tensor  # (252, 32) int64: kept-multiset index of pattern k on dice
    kept_counts: torch.Tensor  # (462, 6) int64 face counts of kept multisets (0-5 dice)
    kept_size: torch.Tensor  # (462,) int64
    kept_child: torch.Tensor  # (462, 6) int64: kept index of m + one die v (-1 for size 5)
    kept_to_dice: torch.Tensor  # (462,) int64: dice index of a size-5 kept multiset, else -1
    transition: torch.Tensor  # (462, 252) float64: P(dice after re-roll | kept)
    base_scores: torch.Tensor  # (252, 13) int64 box scores without joker
    joker_scores: torch.Tensor  # (252, 13) int64 box scores of the dice played as a joker
    score_rows: torch.Tensor  # (504, 13) int64: base_scores, then joker_scores (row d + 252 * joker)
    is_yahtzee: torch.Tensor  # (252,) bool
    yahtzee_face: torch.Tensor  # (252,) int64 face index 0..5 of a Yahtzee, -1 otherwise
    first_roll: torch.Tensor  # (252,) float64: P(dice) of a fresh roll of five


def _counts_of(ms: tuple[int, ...]) -> list[int]:
    c = [0] * N_FACES
    for v in ms:
        c[v - 1] += 1
    return c


def _score(counts: list[int]) -> list[int]:
    total = sum((v + 1) * n for v, n in enumerate(counts))
    present = [n > 0 for n in counts]
    s = [(v + 1) * counts[v] for v in range(6)]
    s.append(total if max(counts) >= 3 else 0)
    s.append(total if max(counts) >= 4 else 0)
    s.append(25 if sorted(n for n in counts if n) == [2, 3] else 0)
    small = any(all(present[i : i + 4]) for i in range(3))
    s.append(30 if small else 0)
    large = all(present[0:5]) or all(present[1:6])
    s.append(40 if large else 0)
    s.append(50 if max(counts) == 5 else 0)
    s.append(total)
    return s


@cache
def _cpu_tables() -> Tables:
    dice_list = list(itertools.combinations_with_replacement(range(1, 7), N_DICE))
    dice_index = {d: i for i, d in enumerate(dice_list)}
    kept_list = [k for size in range(N_DICE + 1) for k in itertools.combinations_with_replacement(range(1, 7), size)]
    kept_index = {k: i for i, k in enumerate(kept_list)}

    code_to_index = torch.empty(N_FACES**N_DICE, dtype=torch.int64)
    for roll in itertools.product(range(1, 7), repeat=N_DICE):
        code = sum((v - 1) * N_FACES**i for i, v in enumerate(roll))
        code_to_index[code] = dice_index[tuple(sorted(roll))]

    keep_bits = torch.tensor([[(k >> i) & 1 for i in range(N_DICE)] for k in range(N_KEEPS)], dtype=torch.bool)
    keep_to_kept = torch.empty(len(dice_list), N_KEEPS, dtype=torch.int64)
    for i, d in enumerate(dice_list):
        for k in range(N_KEEPS):
            keep_to_kept[i, k] = kept_index[tuple(d[j] for j in range(N_DICE) if (k >> j) & 1)]

    kept_child = torch.full((len(kept_list), N_FACES), -1, dtype=torch.int64)
    kept_to_dice = torch.full((len(kept_list),), -1, dtype=torch.int64)
    transition = torch.zeros(len(kept_list), len(dice_list), dtype=torch.float64)
    for j, k in enumerate(kept_list):
        if len(k) == N_DICE:
            kept_to_dice[j] = dice_index[k]
        else:
            for v in range(1, 7):
                kept_child[j, v - 1] = kept_index[tuple(sorted(k + (v,)))]
        n_new = N_DICE - len(k)
        for roll in itertools.combinations_with_replacement(range(1, 7), n_new):
            c = _counts_of(roll)
            ways = math.factorial(n_new) // math.prod(math.factorial(x) for x in c)
            transition[j, dice_index[tuple(sorted(k + roll))]] += ways / N_FACES**n_new

    counts = torch.tensor([_counts_of(d) for d in dice_list], dtype=torch.int64)
    base_scores = torch.tensor([_score(_counts_of(d)) for d in dice_list], dtype=torch.int64)
    is_yahtzee = counts.amax(dim=1) == N_DICE
    joker_scores = base_scores.clone()
    for box, value in JOKER_VALUES.items():
        joker_scores[is_yahtzee, box] = value
    yahtzee_face = torch.where(is_yahtzee, counts.argmax(dim=1), torch.full_like(is_yahtzee, -1, dtype=torch.int64))
    assert base_scores.shape == (252, N_BOXES)
    return Tables(
        dice=torch.tensor(dice_list, dtype=torch.int64),
        counts=counts,
        code_to_index=code_to_index,
        keep_bits=keep_bits,
        keep_to_kept=keep_to_kept,
        kept_counts=torch.tensor([_counts_of(k) for k in kept_list], dtype=torch.int64),
        kept_size=torch.tensor([len(k) for k in kept_list], dtype=torch.int64),
        kept_child=kept_child,
        kept_to_dice=kept_to_dice,
        transition=transition,
        base_scores=base_scores,
        joker_scores=joker_scores,
        score_rows=torch.cat([base_scores, joker_scores]),
        is_yahtzee=is_yahtzee,
        yahtzee_face=yahtzee_face,
        first_roll=transition[kept_index[()]].clone(),
    )


_DEVICE_CACHE: dict[torch.device, Tables] = {}


def tables(device: torch.device | str | None = None) -> Tables:
    """The shared tables on ``device`` (built on the CPU once, copied once per device)."""
    device = torch.device(device if device is not None else "cpu")
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    if device not in _DEVICE_CACHE:
        cpu = _cpu_tables()
        _DEVICE_CACHE[device] = Tables(**{k: v.to(device) for k, v in cpu.__dict__.items()})
    return _DEVICE_CACHE[device]


def take(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``table[index]`` along dim 0 as a fresh tensor (index_select: faster than indexing on CPU).

    A 1-D index (a batch of games) needs no reshape around it: two operators fewer a lookup, a
    dozen lookups a game step."""
    if index.dim() == 1:
        return table.index_select(0, index)
    return table.index_select(0, index.reshape(-1)).reshape(index.shape + table.shape[1:])
