"""A learned chance of winning a two-player match, and the exact rest of a turn searched against it.

``WinValueNet`` is ``W``: the chance that the player who has just ended a turn wins the match
(a draw counts half), from its own turn-start state next, the opponent's, the score difference and
the agent's own turn-start value of both (``.value.TurnValueNet``: expected points to come). It
is learned from the agent's own matches (``players/win_lookahead.py``); no table, no oracle label.

``win_turn_tables`` is the within-turn expectimax (``.turn``, as ``.endgame`` does for
the last turn) whose leaf is any such function of the turn's end: per game, each box and each final
dice gives a gain (the solver's own points of scoring it) and a next turn-start state, and the leaf
value is read once per distinct ``(game, next state, gain)``. Where both cards are then full the
match is over and the leaf is its result (1, 1/2, 0 by the sign of the difference): rules, not a
value; on a player's last turn against a finished opponent this is ``.endgame.win_values``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..game import Rules, tables
from ..game.rules import UPPER_BONUS_THRESHOLD, YAHTZEE_BOX
from .oracle import keep_tables
from .turn import box_values, kept_dag
from .value import N_FEATURES, SCALE, ValueFn, finished, in_play, silu_mlp, state_features

#: Version of the win value's inputs and layout; a saved value of another version is refused.
WIN_FORMAT = 1
#: ``(own (R, 3), opponent (R, 3), difference (R,)) -> (R,)`` the mover's chance of winning.
LeafFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
#: Spread, in points, of one turn's score (about): the expected final difference over this times the
#: root of the turns left is a z-score, the input a normal approximation would read.
TURN_SPREAD = 16.0


def boxes_left(states: torch.Tensor, rules: Rules) -> torch.Tensor:
    open_ = in_play(rules) & ~states[..., 0]
    return sum(((open_ >> b) & 1) for b in rules.boxes)


def result(diff: torch.Tensor) -> torch.Tensor:
    """The finished match's result for the side whose lead is ``diff``: 1, 1/2 or 0."""
    return (diff > 0).double() + 0.5 * (diff == 0).double()


def summary(states: torch.Tensor, values: torch.Tensor, rules: Rules) -> torch.Tensor:
    """``(R, 6)``: a few numbers of each turn-start state: its value (hundreds of points), the share of
    boxes left, the upper points still needed for the bonus (0 once reached) and the upper boxes left,
    whether the Yahtzee box is open and the Yahtzee-bonus flag."""
    m, u, f = states.unbind(-1)
    upper = [b for b in rules.boxes if b < 6]
    open_upper = sum(((~m >> b) & 1) for b in upper) if upper else torch.zeros_like(m)
    yahtzee_open = ((~m >> YAHTZEE_BOX) & 1) if YAHTZEE_BOX in rules.boxes else torch.zeros_like(m)
    need = (UPPER_BONUS_THRESHOLD - u).clamp(min=0).float() / UPPER_BONUS_THRESHOLD * (open_upper > 0)
    columns = [values.float() / SCALE, boxes_left(states, rules).float() / len(rules.boxes), need]
    columns += [open_upper.float() / 6, yahtzee_open.float(), f.float()]
    return torch.stack(columns, -1)


def win_features(
    own: torch.Tensor,
    opp: torch.Tensor,
    diff: torch.Tensor,
    v_own: torch.Tensor,
    v_opp: torch.Tensor,
    rules: Rules,
    features: str = "compact",
) -> torch.Tensor:
    """``(R, n_features(features))``: the lead, the expected final lead ``diff + v_own - v_opp`` (both
    in hundreds of points), the same over ``TURN_SPREAD * sqrt(turns left + 1)`` (a z-score) and the
    shares of boxes left of both sides (``lead``: a state is seen only through its value and its boxes
    left), then each side's ``summary`` (``compact``), and every feature of
    ``.value.state_features`` too (``full``: 79 a side, the card box by box)."""
    if features not in FEATURES:
        raise ValueError(f"win value features must be one of {FEATURES}, got {features!r}")
    left = boxes_left(own, rules) + boxes_left(opp, rules)
    expected = (diff + v_own - v_opp).float()
    n = len(rules.boxes)
    lead = [diff.float() / SCALE, expected / SCALE, expected / (TURN_SPREAD * (left.float() + 1).sqrt())]
    lead += [boxes_left(own, rules).float() / n, boxes_left(opp, rules).float() / n]
    parts = [torch.stack(lead, -1)]
    if features != "lead":
        parts += [summary(own, v_own, rules), summary(opp, v_opp, rules)]
    if features == "full":
        keep = torch.tensor([1, 0, 0], device=own.device)  # a full card's upper sum and flag no longer matter
        for s in (own, opp):
            s = torch.where(finished(s, rules).unsqueeze(-1), s * keep, s)
            parts.append(state_features(*s.unbind(-1)))
    return torch.cat(parts, -1)


#: The inputs of a win value: the lead and boxes left alone, a few numbers a side, or the whole card too.
FEATURES = ("lead", "compact", "full")


def n_features(features: str) -> int:
    return 5 + (2 * 6 if features != "lead" else 0) + (2 * N_FEATURES if features == "full" else 0)


class WinValueNet(nn.Module):
    """``W``: an MLP over ``win_features`` whose output is the logit of the mover's chance of
    winning. ``config`` (JSON) rebuilds it: ``WinValueNet(**config)``."""

    def __init__(
        self,
        rules: dict[str, Any],
        hidden: int = 64,
        layers: int = 2,
        features: str = "compact",
        format_version: int = WIN_FORMAT,
    ):
        super().__init__()
        if format_version != WIN_FORMAT:
            raise ValueError(f"win value format {format_version}; this package reads {WIN_FORMAT}")
        if hidden < 1 or layers < 1:
            raise ValueError(f"hidden and layers must be >= 1, got hidden={hidden}, layers={layers}")
        if features not in FEATURES:
            raise ValueError(f"win value features must be one of {FEATURES}, got {features!r}")
        self.rules = Rules.from_dict(rules)
        self.hidden, self.layers, self.features = hidden, layers, features
        self.mlp = silu_mlp(n_features(features), hidden, layers)

    @property
    def config(self) -> dict[str, Any]:
        return {
            "rules": self.rules.to_dict(),
            "hidden": self.hidden,
            "layers": self.layers,
            "features": self.features,
            "format_version": WIN_FORMAT,
        }

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """``(R,)`` logits for ``features (R, n_features(self.features))`` (``win_features``)."""
        return self.mlp(features).squeeze(-1)


def win_leaf(net: WinValueNet, value: ValueFn, rules: Rules) -> LeafFn:
    """The leaf the search reads: ``sigmoid(W)``, the agent's value ``value`` read at both states."""

    def leaf(own: torch.Tensor, opp: torch.Tensor, diff: torch.Tensor) -> torch.Tensor:
        v_own, v_opp = (value(*s.unbind(-1)).to(torch.float64) for s in (own, opp))
        x = win_features(own, opp, diff.to(torch.float64), v_own, v_opp, rules, net.features)
        return torch.sigmoid(net(x)).to(torch.float64)

    return leaf


def leaf_values(
    states: torch.Tensor, opp: torch.Tensor, diff: torch.Tensor, leaf: LeafFn, rules: Rules
) -> torch.Tensor:
    """``(13, 252, S)`` float64: the leaf value of scoring each box with each final dice, for the
    turns ``states (S, 3)`` against ``opp (S, 3)`` with the mover's lead ``diff (S,)`` at the turn's
    start; -inf where the box is not legal. The leaf is read once per distinct ``(s, next, gain)``."""
    S, device = len(states), states.device
    m, u, f = states.unbind(-1)
    gain = box_values(m, u.unsqueeze(1), f.unsqueeze(1), None, rules, reduce=False)  # (13, 252, S)
    legal = gain > float("-inf")
    boxes = torch.arange(13, device=device).view(13, 1, 1)
    counts = tables(device).counts[kept_dag(device).dice_of_row]  # (252, 6)
    face = torch.cat([counts.T, counts.T[:1].expand(7, -1)]).view(13, 252, 1) * (boxes + 1)  # rows 6-12 unused
    nm = (m.view(1, 1, S) | (1 << boxes)).expand(13, 252, S)
    nu = torch.where(boxes < 6, (u.view(1, 1, S) + face).clamp(max=UPPER_BONUS_THRESHOLD), u.view(1, 1, S))
    g = torch.where(legal, gain, 0.0).long()
    nf = f.view(1, 1, S).expand(13, 252, S)
    if rules.yahtzee_bonus:
        nf = torch.where((boxes == YAHTZEE_BOX) & (g == 50), 1, nf)
    else:
        nf = torch.zeros_like(nf)
    s = torch.arange(S, device=device).view(1, 1, S).expand(13, 252, S)
    key = (((s * 8192 + nm) * 64 + nu) * 2 + nf) * 512 + g
    unique, inverse = torch.unique(key[legal], return_inverse=True)
    g_u, rest = unique % 512, unique // 512
    nf_u, rest = rest % 2, rest // 2
    nu_u, rest = rest % 64, rest // 64
    nm_u, s_u = rest % 8192, rest // 8192
    own = torch.stack([nm_u, nu_u, nf_u], -1)
    d = diff[s_u].to(torch.float64) + g_u
    values = torch.empty(len(unique), dtype=torch.float64, device=device)
    over = finished(own, rules) & finished(opp[s_u], rules)
    values[over] = result(d[over])
    live = ~over
    if bool(live.any()):
        values[live] = leaf(own[live], opp[s_u][live], d[live]).to(torch.float64)
    out = torch.full((13, 252, S), float("-inf"), dtype=torch.float64, device=device)
    out[legal] = values[inverse]
    return out


def win_turn_tables(
    states: torch.Tensor, opp: torch.Tensor, diff: torch.Tensor, leaf: LeafFn, rules: Rules, chunk: int = 256
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The turn tables of ``.oracle.position_values`` (box ``(13, 252, S)``, kept before the third
    roll and before the second ``(462, S)``) with ``leaf_values`` at the turn's end: the expected
    leaf value after every choice of these ``S`` turns, the expectation over the dice exact."""
    dag = kept_dag(states.device)
    parts = []
    for s in range(0, len(states), chunk):
        box = leaf_values(states[s : s + chunk], opp[s : s + chunk], diff[s : s + chunk], leaf, rules)
        parts.append((box, *keep_tables(box, dag)))
    return tuple(torch.cat(xs, -1) for xs in zip(*parts, strict=True))
