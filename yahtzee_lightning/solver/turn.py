"""Within-turn expectimax for batches of turn-start states (Glenn's method).

A turn-start state is (filled-box mask, upper sum capped at 63, Yahtzee-bonus flag: the Yahtzee
box holds 50). Given the values ``V`` of every turn-start state, one turn is three stages read
backwards: the box choice after the last roll, then two keep choices. Keeps are evaluated on the
462 kept multisets with two small DAGs instead of the 462 x 252 transition matrix:
``K[m] = mean over faces v of K[m + v]`` (rolling the missing dice one at a time) and
``best[m] = max(K[m], max over distinct faces v in m of best[m - v])`` (the best sub-multiset).

Layout, chosen for speed: one ``(462, S)`` buffer per batch of S states, kept multisets in rows
ordered by size, the 252 size-5 ones last and in dice order, so that the dice values of a stage
*are* the buffer's last 252 rows. Both DAGs then run in place, level by level, each step an
``index_select`` into a scratch block and one ``add_`` or ``maximum``: no allocation per step
and no copy between stages. The same code with ``V = None`` is the greedy one-turn player.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import cache

import torch

from ..game import N_BOXES, OPEN, Rules, box_options, tables
from ..game.rules import UPPER_BONUS, UPPER_BONUS_THRESHOLD, YAHTZEE_BONUS, YAHTZEE_BOX
from ..game.tables import take

N_MASKS = 1 << N_BOXES
N_UPPER = UPPER_BONUS_THRESHOLD + 1
N_KEPT = 462
DICE_ROW = N_KEPT - 252  # first row of the size-5 (dice) block
NEG = float("-inf")


@dataclass(frozen=True)
class KeptDag:
    """The two DAGs over kept multisets, in the solver's row layout.

    Rows are grouped by size; inside a size, multisets with more distinct faces come first, so
    that the j-th parent (``m - v`` for the j-th distinct face ``v`` of ``m``) is needed by a
    prefix of the rows only. The size-5 rows are the dice: row ``DICE_ROW + r`` holds the dice
    ``dice_of_row[r]`` (a permutation of ``game.tables``' dice order).
    """

    bounds: tuple[tuple[int, int], ...]  # rows [start, stop) of the multisets of size 0..5
    children: tuple[tuple[torch.Tensor, ...], ...]  # per size < 5: six row tensors, m + face v
    parents: tuple[tuple[torch.Tensor, ...], ...]  # per size: j-th distinct parent of the first rows
    row_of_kept: torch.Tensor  # (462,) row of each kept multiset of ``game.tables``' order
    dice_of_row: torch.Tensor  # (252,) dice index held by each dice row
    row_of_dice: torch.Tensor  # (252,) dice row of each dice index


@cache
def _cpu_dag() -> KeptDag:
    T = tables()
    counts = [tuple(c) for c in T.kept_counts.tolist()]
    size = T.kept_size.tolist()
    distinct = [sum(n > 0 for n in c) for c in counts]
    order = sorted(range(N_KEPT), key=lambda i: (size[i], -distinct[i], i))
    row = {counts[i]: r for r, i in enumerate(order)}
    bounds, children, parents = [], [], []
    start = 0
    for s in range(6):
        members = [counts[i] for i in order if size[i] == s]
        bounds.append((start, start + len(members)))
        start += len(members)
        kids = [[row[tuple(c[u] + (u == v) for u in range(6))] for c in members] for v in range(6)] if s < 5 else []
        children.append(tuple(torch.tensor(k) for k in kids))
        subs = [[row[tuple(c[u] - (u == v) for u in range(6))] for v in range(6) if c[v]] for c in members]
        width = max((len(p) for p in subs), default=0)
        parents.append(tuple(torch.tensor([p[j] for p in subs if len(p) > j]) for j in range(width)))
    dice_of_row = T.kept_to_dice[torch.tensor(order[DICE_ROW:])]
    row_of_dice = torch.empty_like(dice_of_row)
    row_of_dice[dice_of_row] = torch.arange(252)
    row_of_kept = torch.tensor([row[c] for c in counts])
    assert T.is_yahtzee[dice_of_row][YAHTZEE_ROWS].all()
    return KeptDag(tuple(bounds), tuple(children), tuple(parents), row_of_kept, dice_of_row, row_of_dice)


_DAGS: dict[torch.device, KeptDag] = {}
YAHTZEE_ROWS = slice(252 - 6, 252)  # the six Yahtzees (one distinct face) are the last dice rows


def kept_dag(device: torch.device | str | None = None) -> KeptDag:
    device = torch.device(device if device is not None else "cpu")
    if device not in _DAGS:
        d = _cpu_dag()
        _DAGS[device] = KeptDag(
            d.bounds,
            tuple(tuple(t.to(device) for t in level) for level in d.children),
            tuple(tuple(t.to(device) for t in level) for level in d.parents),
            d.row_of_kept.to(device),
            d.dice_of_row.to(device),
            d.row_of_dice.to(device),
        )
    return _DAGS[device]


def reroll_(buf: torch.Tensor, dag: KeptDag, scratch: torch.Tensor) -> None:
    """In place: rows of sizes 0-4 of ``buf (462, S)`` become the expected value of re-rolling
    the missing dice, from the dice values in the last 252 rows. ``scratch``: ``(2, 252, S)``."""
    for size in range(4, -1, -1):
        start, stop = dag.bounds[size]
        n = stop - start
        acc, tmp = scratch[0, :n], scratch[1, :n]
        first, *rest = dag.children[size]
        torch.index_select(buf, 0, first, out=acc)
        for kids in rest:
            acc.add_(torch.index_select(buf, 0, kids, out=tmp))
        torch.div(acc, 6, out=buf[start:stop])


def best_keep_(buf: torch.Tensor, dag: KeptDag, scratch: torch.Tensor) -> None:
    """In place: each row becomes the value of keeping the best sub-multiset of its dice."""
    for size in range(1, 6):
        start = dag.bounds[size][0]
        for parents in dag.parents[size]:  # the j-th parent concerns the first len(parents) rows
            dst, tmp = buf[start : start + len(parents)], scratch[0, : len(parents)]
            torch.maximum(dst, torch.index_select(buf, 0, parents, out=tmp), out=dst)


def reroll_values(after: torch.Tensor, dag: KeptDag) -> torch.Tensor:
    """``after (252, S)``: value of each final dice, in dice rows. Returns ``(462, S)`` in the
    DAG's row layout (``dag.row_of_kept``): the expected value of each kept multiset."""
    buf = after.new_empty(N_KEPT, after.shape[1])
    buf[DICE_ROW:] = after
    reroll_(buf, dag, after.new_empty(2, *after.shape))
    return buf


def best_keep(K: torch.Tensor, dag: KeptDag) -> torch.Tensor:
    """``K (462, S)`` to ``(252, S)`` dice rows: each dice's value when its best sub-multiset is kept."""
    buf = K.clone()
    best_keep_(buf, dag, K.new_empty(1, 252, K.shape[1]))
    return buf[DICE_ROW:]


@cache
def _cpu_scoring_rows() -> dict[int, torch.Tensor]:
    """Lower boxes that score on few dice (four of a kind, full house, straights, Yahtzee): the
    dice rows where they may score, base or joker. Every other dice scores 0 there."""
    T, dag = tables(), kept_dag()
    can_score = (T.base_scores > 0) | (T.joker_scores > 0)
    rows = {b: can_score[dag.dice_of_row, b].nonzero().squeeze(1) for b in range(6, N_BOXES)}
    return {b: r for b, r in rows.items() if len(r) < 126}


_SCORING_ROWS: dict[torch.device, dict[int, torch.Tensor]] = {}


def scoring_rows(device: torch.device) -> dict[int, torch.Tensor]:
    if device not in _SCORING_ROWS:
        _SCORING_ROWS[device] = {b: r.to(device) for b, r in _cpu_scoring_rows().items()}
    return _SCORING_ROWS[device]


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
    out: torch.Tensor | None = None,
    open_boxes: Collection[int] | None = None,
) -> torch.Tensor:
    """Value of scoring each final dice in the states ``(masks[i], uppers[i, j], flags[i, j])``.

    ``masks (M,)``; ``uppers`` and ``flags`` ``(M, R)``: R states share each mask (a query passes
    R = 1). Output in dice rows (``kept_dag().dice_of_row``): ``(252, M * R)`` for the best box
    (``reduce``, written into ``out`` when given) or ``(13, 252, M * R)`` per box, -inf where
    illegal. The value is the points earned now (box, upper bonus reached, Yahtzee bonus) plus
    ``V`` of the next turn-start state (``V = None``: points now only, the greedy horizon).

    Only the box's score depends on the dice; what follows it (bonus, next state's value) is
    looked up once per state, or once per possible score (0-5 of a face) for an upper box. A box
    that scores on few dice (``scoring_rows``) is taken as a zero for every dice (one
    running maximum per state) plus its score on those few rows.

    ``open_boxes``: the boxes open in at least one of ``masks``, where the caller knows them on the
    host (the solver); without them each box is checked on the device, one wait for it a box.
    """
    device = masks.device
    dtype = V.dtype if V is not None else torch.float64
    M, R = uppers.shape
    T, dag = tables(device), kept_dag(device)
    dice = dag.dice_of_row
    # Scores and legality depend on the card only for a Yahtzee (the joker): every other dice
    # scores its base score in any open box, so only the six Yahtzee rows are evaluated per mask.
    base = take(T.base_scores, dice).to(dtype)  # (252, 13)
    cards = _card_of(masks).expand(6, M, N_BOXES)
    five_scores, five_legal, _ = box_options(dice[YAHTZEE_ROWS].view(6, 1).expand(6, M), cards, rules)
    five_scores = five_scores.to(dtype).unsqueeze(2)  # (6, M, 1, 13)

    def score_of(b: int) -> torch.Tensor:  # (252, M, 1): box b's score of every dice row
        score = torch.empty(252, M, 1, dtype=dtype, device=device)
        score[: YAHTZEE_ROWS.start] = base[: YAHTZEE_ROWS.start, b].view(-1, 1, 1)
        score[YAHTZEE_ROWS] = five_scores[..., b]
        return score

    flat = V.reshape(-1) if V is not None else None
    if reduce:
        out = torch.empty(252, M * R, dtype=dtype, device=device) if out is None else out
        best: torch.Tensor | None = None  # the first box writes straight into ``out``
    else:
        per_box = torch.full((N_BOXES, 252, M, R), NEG, dtype=dtype, device=device)
    scratch = torch.empty(252, M, R, dtype=dtype, device=device)
    sparse_rows = scoring_rows(device) if reduce else {}
    zero_any: torch.Tensor | None = None  # best "score 0 in a sparse box" per state, for any dice
    zero_yahtzee: torch.Tensor | None = None  # the same without the Yahtzee box (a Yahtzee scores 50 there)
    sparse: list[tuple[torch.Tensor, torch.Tensor]] = []  # (rows, their values) of the sparse boxes
    for b in rules.boxes:
        is_open = (masks >> b & 1) == 0
        if (b not in open_boxes) if open_boxes is not None else not bool(is_open.any()):
            continue
        nxt = (masks | (1 << b)).view(M, 1)
        # Where legality is just "the box is open" it is applied per state, not per dice. Only the
        # forced joker makes it differ (scoring's own rule), so only then is it checked.
        closed = ~is_open.view(M, 1)
        per_dice = rules.joker == "forced" and not torch.equal(five_legal[..., b], is_open.expand(6, M))
        if b >= 6:
            s = score_of(b)  # (252, M, 1)
            if flat is None:
                nv = torch.zeros(M, R, dtype=dtype, device=device)
            else:
                nv = flat[(nxt * N_UPPER + uppers) * 2 + flags]  # (M, R)
            nv = nv.masked_fill(closed, NEG)
            after_yahtzee = nv
            if flat is not None and b == YAHTZEE_BOX and rules.yahtzee_bonus:
                # A Yahtzee scored here (50) makes later Yahtzees earn the bonus: flag 1 next.
                after_yahtzee = flat[(nxt * N_UPPER + uppers) * 2 + 1].masked_fill(closed, NEG)
            rows = sparse_rows.get(b)
            if rows is not None and not per_dice:
                zero_any = nv if zero_any is None else torch.maximum(zero_any, nv)
                if b != YAHTZEE_BOX:
                    zero_yahtzee = nv if zero_yahtzee is None else torch.maximum(zero_yahtzee, nv)
                    sparse.append((rows, s[rows] + nv))
                else:
                    sparse.append((rows, s[rows] + after_yahtzee))
                continue
        value = out.view(252, M, R) if reduce and best is None else scratch
        if b < 6:  # the box scores face x count: one value per count 0-5, picked per dice
            s = torch.arange(6, device=device).view(6, 1, 1) * (b + 1)
            u2 = (uppers + s).clamp(max=UPPER_BONUS_THRESHOLD)  # (6, M, R)
            after = (s + ((uppers < UPPER_BONUS_THRESHOLD) & (u2 >= UPPER_BONUS_THRESHOLD)) * UPPER_BONUS).to(dtype)
            if flat is not None:
                after += flat[(nxt * N_UPPER + u2) * 2 + flags]
            torch.index_select(after.masked_fill_(closed, NEG), 0, T.counts[dice, b], out=value)
        else:
            torch.add(s, nv, out=value)
            if after_yahtzee is not nv:
                value[YAHTZEE_ROWS] = s[YAHTZEE_ROWS] + after_yahtzee
        if per_dice:  # only a Yahtzee can be barred from an open box
            value[YAHTZEE_ROWS].masked_fill_(~five_legal[..., b].unsqueeze(2), NEG)
        if not reduce:
            per_box[b] = value
        elif best is None:
            best = value
        else:
            torch.maximum(best, value, out=best)
    if zero_any is not None:  # the sparse boxes: their zeros for every dice, then their few scores
        if best is None:
            best = out.view(252, M, R).fill_(NEG)
        others, fives = best[: YAHTZEE_ROWS.start], best[YAHTZEE_ROWS]
        torch.maximum(others, zero_any, out=others)
        if zero_yahtzee is not None:
            torch.maximum(fives, zero_yahtzee, out=fives)
        for rows, values in sparse:
            best.index_copy_(0, rows, torch.maximum(best.index_select(0, rows), values))
    result = best if reduce else per_box
    if result is None:  # every box filled: no move left
        return out.fill_(NEG)
    if rules.yahtzee_bonus:
        result[..., YAHTZEE_ROWS, :, :] += flags.to(dtype) * YAHTZEE_BONUS
    return out if reduce else per_box.flatten(-2)


def turn_start_values(
    masks: torch.Tensor,
    uppers: torch.Tensor,
    flags: torch.Tensor,
    V: torch.Tensor | None,
    rules: Rules,
    open_boxes: Collection[int] | None = None,
) -> torch.Tensor:
    """Expected points from the start of a turn on, ``(M * R,)``: the three stages backwards.
    ``open_boxes``: as ``box_values`` takes it."""
    dag = kept_dag(masks.device)
    S = uppers.numel()
    dtype = V.dtype if V is not None else torch.float64
    buf = torch.empty(N_KEPT, S, dtype=dtype, device=masks.device)
    scratch = torch.empty(2, 252, S, dtype=dtype, device=masks.device)
    dice_rows = buf[DICE_ROW:]
    box_values(masks, uppers, flags, V, rules, out=dice_rows, open_boxes=open_boxes)  # after the last roll
    for _ in range(2):  # the keep before the third roll, then before the second
        reroll_(buf, dag, scratch)
        best_keep_(buf, dag, scratch)
    return tables(masks.device).first_roll[dag.dice_of_row].to(dtype) @ dice_rows
