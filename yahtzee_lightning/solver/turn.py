"""Within-turn expectimax for batches of turn-start states (Glenn's method).

A turn-start state is (filled-box mask, upper sum capped at 63, Yahtzee-bonus flag: the Yahtzee
box holds 50). Given the values ``V`` of every turn-start state, one turn is three stages read
backwards: the box choice after the last roll, then two keep choices. Keeps are evaluated on the
462 kept multisets with two small DAGs instead of the 462 x 252 transition matrix:
``K[m] = mean over faces v of K[m + v]`` (rolling the missing dice one at a time) and
``best[m] = max(K[m], max over one die removed of best[m - v])`` (the best sub-multiset).
Tensors are dice-major (``(252, S)``, ``(462, S)``) so that every DAG step copies whole rows.
The same code with ``V = None`` is the greedy one-turn player.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import torch

from ..game import N_BOXES, OPEN, Rules, box_options, tables
from ..game.rules import UPPER_BONUS, UPPER_BONUS_THRESHOLD, YAHTZEE_BONUS, YAHTZEE_BOX

N_MASKS = 1 << N_BOXES
N_UPPER = UPPER_BONUS_THRESHOLD + 1
NEG = float("-inf")


@dataclass(frozen=True)
class KeptDag:
    levels: tuple[torch.Tensor, ...]  # kept indices by size 0..5
    child: torch.Tensor  # (462, 6) m + face (size < 5)
    parent: torch.Tensor  # (462, 6) m - face, or m itself when the face is absent
    five_to_dice: torch.Tensor  # dice index of each size-5 kept multiset, in levels[5] order
    dice_to_kept: torch.Tensor  # (252,) kept index of the full dice


@cache
def _cpu_dag() -> KeptDag:
    T = tables()
    counts = T.kept_counts.tolist()
    key = {tuple(c): i for i, c in enumerate(counts)}
    parent = torch.arange(len(counts)).unsqueeze(1).repeat(1, 6)
    for i, c in enumerate(counts):
        for v in range(6):
            if c[v]:
                cc = list(c)
                cc[v] -= 1
                parent[i, v] = key[tuple(cc)]
    levels = tuple(torch.nonzero(T.kept_size == s).squeeze(1) for s in range(6))
    dice_to_kept = torch.empty(252, dtype=torch.int64)
    dice_to_kept[T.kept_to_dice[levels[5]]] = levels[5]
    return KeptDag(levels, T.kept_child.clamp(min=0), parent, T.kept_to_dice[levels[5]], dice_to_kept)


_DAGS: dict[torch.device, KeptDag] = {}


def kept_dag(device: torch.device | str | None = None) -> KeptDag:
    device = torch.device(device if device is not None else "cpu")
    if device not in _DAGS:
        d = _cpu_dag()
        tensors = (t.to(device) for t in (d.child, d.parent, d.five_to_dice, d.dice_to_kept))
        _DAGS[device] = KeptDag(tuple(x.to(device) for x in d.levels), *tensors)
    return _DAGS[device]


def reroll_values(after: torch.Tensor, dag: KeptDag) -> torch.Tensor:
    """``after (252, S)``: value of each final dice. Returns ``(462, S)``: expected value of each kept multiset."""
    K = after.new_empty(462, after.shape[1])
    K[dag.levels[5]] = after.index_select(0, dag.five_to_dice)
    for size in range(4, -1, -1):
        lv = dag.levels[size]
        K[lv] = K.index_select(0, dag.child[lv].reshape(-1)).view(len(lv), 6, -1).mean(1)
    return K


def best_keep(K: torch.Tensor, dag: KeptDag) -> torch.Tensor:
    """``K (462, S)`` to ``(252, S)``: the value of each dice when its best sub-multiset is kept."""
    best = K.clone()
    for size in range(1, 6):
        lv = dag.levels[size]
        sub = best.index_select(0, dag.parent[lv].reshape(-1)).view(len(lv), 6, -1).amax(1)
        best[lv] = torch.maximum(K[lv], sub)
    return best.index_select(0, dag.dice_to_kept)


def _card_of(masks: torch.Tensor) -> torch.Tensor:
    bits = ((masks.unsqueeze(-1) >> torch.arange(N_BOXES, device=masks.device)) & 1).bool()
    return torch.where(bits, 0, OPEN)  # scores and legality depend on which boxes are filled only


def box_values(
    masks: torch.Tensor,
    uppers: torch.Tensor,
    flags: torch.Tensor,
    V: torch.Tensor | None,
    rules: Rules,
    reduce: bool = True,
) -> torch.Tensor:
    """Value of scoring each final dice in the states ``(masks[i], uppers[i, j], flags[i, j])``.

    ``masks (M,)``; ``uppers`` and ``flags`` ``(M, R)``: R states share each mask (the solver
    passes all upper sums of a mask at once, a query passes R = 1). Dice-major output:
    ``(252, M * R)`` for the best box (``reduce``) or ``(13, 252, M * R)`` per box, -inf where
    illegal. The value is the points earned now (box, upper bonus reached, Yahtzee bonus) plus
    ``V`` of the next turn-start state (``V = None``: points now only, the greedy horizon).
    """
    device = masks.device
    dtype = V.dtype if V is not None else torch.float64
    M, R = uppers.shape
    dice = torch.arange(252, device=device)
    card = _card_of(masks)  # scores and legality depend on the filled boxes only
    scores, legal, _ = box_options(dice.view(252, 1).expand(252, M), card.expand(252, M, N_BOXES), rules)
    scores = scores.to(dtype).unsqueeze(2)  # (252, M, 1, 13)
    legal = legal.unsqueeze(2)
    flat = V.reshape(-1) if V is not None else None
    out = None if reduce else torch.full((N_BOXES, 252, M, R), NEG, dtype=dtype, device=device)
    for b in rules.boxes:
        if bool((masks >> b & 1).all()):
            continue
        s = scores[..., b]  # (252, M, 1)
        nxt = (masks | (1 << b)).view(M, 1)
        if b < 6:
            u2 = (uppers + s.long()).clamp(max=UPPER_BONUS_THRESHOLD)  # (252, M, R)
            value = s + ((uppers < UPPER_BONUS_THRESHOLD) & (u2 >= UPPER_BONUS_THRESHOLD)) * UPPER_BONUS
        else:
            u2, value = uppers, s
        if flat is not None:
            y2 = flags
            if b == YAHTZEE_BOX and rules.yahtzee_bonus:
                y2 = torch.where(s == 50, 1, flags)  # scoring 50 here makes later Yahtzees earn the bonus
            value = value + flat[(nxt * N_UPPER + u2) * 2 + y2]
        value = torch.where(legal[..., b], value, NEG).expand(252, M, R)
        if reduce:
            out = value if out is None else torch.maximum(out, value)
        else:
            out[b] = value
    if rules.yahtzee_bonus:
        is_yahtzee = tables(device).is_yahtzee.to(dtype).view(252, 1, 1)
        out = out + is_yahtzee * (flags.to(dtype) * YAHTZEE_BONUS)
    return out.flatten(-2)


def turn_start_values(
    masks: torch.Tensor, uppers: torch.Tensor, flags: torch.Tensor, V: torch.Tensor | None, rules: Rules
) -> torch.Tensor:
    """Expected points from the start of a turn on, ``(M * R,)``: the three stages backwards."""
    dag = kept_dag(masks.device)
    after_last = box_values(masks, uppers, flags, V, rules)
    at_second = best_keep(reroll_values(after_last, dag), dag)
    at_first = best_keep(reroll_values(at_second, dag), dag)
    return tables(masks.device).first_roll.to(at_first.dtype) @ at_first
