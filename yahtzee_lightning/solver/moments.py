"""How spread out and how skewed is the optimal player's score: higher moments of the points to come.

The optimal table holds the *mean* of the points still to come under optimal (expected-score)
play. Winning a match is about the spread as well: a player behind wants a wider distribution,
one ahead a narrower one. This module computes ``E[F^2]``, F the points still to come when the
optimal player's moves are followed, for every turn-start state (``solve_moments``, the
same backward layers as the table) and for every choice within a turn (``turn_moments``),
and the third moment the same way (the score is far from normal: skewness 1.6 at the start).

The policy is fixed (the optimal player's moves, its ties broken the same way), so the second
moment is linear along it: scoring ``p`` points and moving to a state with mean ``V`` and second
moment ``M`` gives ``p^2 + 2 p V + M``; re-rolling averages it like any value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..game import Rules, tables
from .table import OptimalTable, host_layout
from .turn import N_UPPER, box_values, kept_dag, reroll_values

NEG = float("-inf")


@dataclass
class TurnMoments:
    """Raw moments ``E[F^k]`` (k = 1 .. K) of the points to come after each choice of S turns.

    Each field is a list over k: ``box``: ``(13, 252, S)`` per box and final dice (dice rows; -inf
    for illegal boxes); ``k2`` / ``k1``: ``(462, S)`` per kept multiset before the third / second
    roll; ``start``: ``(S,)`` at the start of the turn. ``[0]`` is the mean (the optimal values).
    """

    box: list[torch.Tensor]
    k2: list[torch.Tensor]
    k1: list[torch.Tensor]
    start: list[torch.Tensor]


def _sub_keep_rows(device: torch.device) -> torch.Tensor:
    """``(252, 32)``: for each dice row, the kept-multiset row of each of the 32 keep patterns."""
    dag = kept_dag(device)
    return dag.row_of_kept[tables(device).keep_to_kept[dag.dice_of_row]]


def _follow_best_keep(kept: list[torch.Tensor], rows: torch.Tensor) -> list[torch.Tensor]:
    """Per dice row, the moments of the keep with the best mean (lowest pattern on ties, as the
    optimal player)."""
    S = kept[0].shape[1]
    flat = rows.reshape(-1)
    cand = kept[0][flat].view(252, 32, S)
    best = cand.argmax(1, keepdim=True)  # (252, 1, S)
    return [cand.gather(1, best).squeeze(1)] + [m[flat].view(252, 32, S).gather(1, best).squeeze(1) for m in kept[1:]]


def turn_moments(
    masks: torch.Tensor,
    uppers: torch.Tensor,
    flags: torch.Tensor,
    moments: list[torch.Tensor],
    rules: Rules,
    open_boxes: tuple[int, ...] | None = None,
) -> TurnMoments:
    """The three stages of a turn backwards, carrying ``E[F^k]`` along the optimal moves.

    ``masks (M,)``, ``uppers``/``flags (M, R)`` and ``open_boxes`` as in ``.turn.box_values``;
    ``moments`` the turn-start tables ``[V, E[F^2], ...]`` (only later layers are read).
    """
    dag = kept_dag(masks.device)
    points = box_values(masks, uppers, flags, None, rules, reduce=False, open_boxes=open_boxes)  # (13, 252, S)
    legal = points > NEG
    p = torch.where(legal, points, 0.0)
    # E[F'^j] of the state each box leads to: box_values adds the points now, take them off again.
    after = [torch.ones_like(p)] + [
        torch.where(legal, box_values(masks, uppers, flags, t, rules, reduce=False, open_boxes=open_boxes) - p, 0.0)
        for t in moments
    ]
    box = []
    for k in range(1, len(moments) + 1):  # E[(p + F')^k] = sum_j C(k, j) p^(k - j) E[F'^j]
        value = sum(math.comb(k, j) * p ** (k - j) * after[j] for j in range(k + 1))
        box.append(torch.where(legal, value, NEG))
    best = box[0].argmax(0, keepdim=True)  # (1, 252, S): the optimal player's box
    final = [b.gather(0, best).squeeze(0) for b in box]
    rows = _sub_keep_rows(masks.device)
    k2 = [reroll_values(x, dag) for x in final]
    k1 = [reroll_values(x, dag) for x in _follow_best_keep(k2, rows)]
    first = tables(masks.device).first_roll[dag.dice_of_row].to(p.dtype)
    return TurnMoments(box, k2, k1, [first @ x for x in _follow_best_keep(k1, rows)])


def solve_moments(
    table: OptimalTable,
    order: int = 3,
    chunk_states: int = 1024,
    progress: bool = True,
    flat: bool | None = None,
) -> torch.Tensor:
    """``(order - 1, 8192, 64, 2)`` float64: ``E[F^k]``, k = 2 .. order, of every turn-start
    state under the optimal player (F: the points still to come).

    The table's own layout (``.table.host_layout``: ``flat`` by default on any device but the
    CPU, the open boxes known on the host). Checks that the means it carries equal the table's (the
    same moves are followed), on the device, and reads the check back once, at the end.
    """
    rules, V = table.rules, table.values
    device = V.device
    flat = device.type != "cpu" if flat is None else flat
    higher = torch.zeros(order - 1, *V.shape, dtype=V.dtype, device=device)
    every_upper = torch.arange(N_UPPER, device=device).view(1, N_UPPER, 1)
    layers = host_layout(rules, device, chunk_states, flat)
    worst = torch.zeros((), dtype=V.dtype, device=device)  # the largest |mean - table| seen
    bar = None
    if progress:
        from ..progress import progress_bar

        states = sum(u.numel() for _, chunks in layers for _, u, _, _, _ in chunks)
        bar = progress_bar(states, "score moments", unit="state")
    for _, chunks in layers:
        for m, u, f, irrelevant, open_boxes in chunks:
            R = u.shape[1]
            start = turn_moments(m, u, f, [V, *higher], rules, open_boxes).start
            worst = torch.maximum(worst, (start[0].view(len(m), R) - V[m.view(-1, 1), u, f]).abs().max())
            for k, x in enumerate(start[1:]):
                x = x.view(len(m), R)
                if irrelevant:
                    higher[k, m.view(-1, 1, 1), every_upper, f.unsqueeze(1)] = x.unsqueeze(1).expand(-1, N_UPPER, R)
                else:
                    higher[k, m.view(-1, 1), u, f] = x
            if bar is not None:
                bar.update(len(m) * R)
    if bar is not None:
        bar.close()
    if float(worst) > 1e-6:
        raise AssertionError(f"the moments' means differ from the optimal table (by up to {float(worst):.3g})")
    return higher


__all__ = ["TurnMoments", "solve_moments", "turn_moments"]
