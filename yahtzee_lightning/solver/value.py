"""A learned turn-start value: expected points still to come from a card before its turn's first roll.

The exact table (``.table``) is one way to know ``V[mask, upper, flag]``; this module holds
the other: a small network over the same turn-start state, learned from an agent's own games
(no table, no oracle label). Written into the table's layout (``value_table``, or state by state
where a search reads it: ``players/lookahead.py``), it is what the exact within-turn expectimax
(``.turn``, ``.oracle.TurnOracle``) plays the rest of a turn against. ``td_targets`` is
the same expectimax one turn deep: the value's own estimate of a state, backed up through one turn
of dice (a TD(0) target with the expectation over the dice taken exactly rather than sampled).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..game import N_BOXES, Rules
from ..game.rules import UPPER_BONUS_THRESHOLD
from ..untrusted import check_size
from .turn import N_MASKS, N_UPPER, turn_start_values

#: Version of the value's inputs and layout; a saved value of another version is refused.
VALUE_FORMAT = 1
#: Points a unit of the network's output stands for (the targets are 0-~400; the net sees ~0-4).
SCALE = 100.0

ValueFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def state_features(masks: torch.Tensor, uppers: torch.Tensor, flags: torch.Tensor) -> torch.Tensor:
    """``(N, 79)`` floats: the 13 filled-box bits, the capped upper sum as 63 steps (``upper >= k``
    for k = 1..63: the bonus makes the value jump at a threshold, which steps say directly), the
    upper sum (/63), the Yahtzee-bonus flag and the share of boxes filled."""
    bits = ((masks.unsqueeze(-1) >> torch.arange(N_BOXES, device=masks.device)) & 1).float()
    up = uppers.unsqueeze(-1)
    steps = (up >= torch.arange(1, UPPER_BONUS_THRESHOLD + 1, device=masks.device)).float()
    return torch.cat(
        [bits, steps, up.float() / UPPER_BONUS_THRESHOLD, flags.float().unsqueeze(-1), bits.mean(-1, keepdim=True)],
        -1,
    )


N_FEATURES = N_BOXES + UPPER_BONUS_THRESHOLD + 3


def silu_mlp(width: int, hidden: int, layers: int) -> nn.Sequential:
    """``layers`` hidden SiLU layers of ``hidden`` units over ``width`` inputs, then one output: the
    shape of the values an agent carries beside its policy (turn-start value, win value). Its sizes
    are bounded as the policy network's are, before anything is allocated (they come from files)."""
    check_size("hidden", hidden)
    check_size("layers", layers)
    parts: list[nn.Module] = []
    for _ in range(layers):
        parts += [nn.Linear(width, hidden), nn.SiLU()]
        width = hidden
    parts.append(nn.Linear(width, 1))
    return nn.Sequential(*parts)


class TurnValueNet(nn.Module):
    """``V(mask, upper, flag)``: an MLP over ``state_features``, in points.

    ``config`` (JSON) rebuilds it: ``TurnValueNet(**config)``. The states where every box in play is
    filled are worth 0 by definition (``value_table``), whatever the network says.
    """

    def __init__(self, rules: dict[str, Any], hidden: int = 128, layers: int = 2, format_version: int = VALUE_FORMAT):
        super().__init__()
        if format_version != VALUE_FORMAT:
            raise ValueError(f"turn-start value format {format_version}; this package reads {VALUE_FORMAT}")
        if hidden < 1 or layers < 1:
            raise ValueError(f"hidden and layers must be >= 1, got hidden={hidden}, layers={layers}")
        self.rules = Rules.from_dict(rules)
        self.hidden, self.layers = hidden, layers
        self.mlp = silu_mlp(N_FEATURES, hidden, layers)

    @property
    def config(self) -> dict[str, Any]:
        return {
            "rules": self.rules.to_dict(),
            "hidden": self.hidden,
            "layers": self.layers,
            "format_version": VALUE_FORMAT,
        }

    def forward(self, masks: torch.Tensor, uppers: torch.Tensor, flags: torch.Tensor) -> torch.Tensor:
        """``(N,)`` expected points to come, for the turn-start states ``(masks, uppers, flags) (N,)``."""
        return self.mlp(state_features(masks, uppers, flags)).squeeze(-1) * SCALE


def all_states(device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every cell of the table's layout, flattened in its order: ``(masks, uppers, flags)``."""
    idx = torch.arange(N_MASKS * N_UPPER * 2, device=device)
    return idx // (N_UPPER * 2), idx // 2 % N_UPPER, idx % 2


@torch.no_grad()
def value_table(value: ValueFn, rules: Rules, device: torch.device | str = "cpu", chunk: int = 1 << 16) -> torch.Tensor:
    """``(8192, 64, 2)`` float64: ``value`` at every turn-start state, the table's layout, with the
    finished cards (every box in play filled) at 0. Cells no game reaches are filled too (unused)."""
    masks, uppers, flags = all_states(device)
    out = torch.empty(masks.numel(), dtype=torch.float64, device=device)
    for s in range(0, masks.numel(), chunk):
        sl = slice(s, s + chunk)
        out[sl] = value(masks[sl], uppers[sl], flags[sl]).to(torch.float64)
    out[finished(masks.unsqueeze(-1), rules)] = 0.0  # it reads the mask alone: no (N, 3) copy of the table
    return out.view(N_MASKS, N_UPPER, 2)


def in_play(rules: Rules) -> int:
    """The bit mask of the boxes in play under ``rules``."""
    return sum(1 << b for b in rules.boxes)


def finished(states: torch.Tensor, rules: Rules) -> torch.Tensor:
    """``(N,)`` bool: the turn-start states ``(N, 3)`` whose every box in play is filled."""
    full = in_play(rules)
    return (states[..., 0] & full) == full


class StateValues:
    """``value`` read lazily into a table of the exact table's layout: each turn-start state read
    once, when a search first needs it, and a finished card 0 (the table's convention). A game reads
    a few hundred states, not the table's million; the searches read ``values`` as a table."""

    def __init__(self, value: ValueFn, rules: Rules, device: torch.device | str = "cpu") -> None:
        self.value, self.rules = value, rules
        self.values = torch.zeros(N_MASKS, N_UPPER, 2, dtype=torch.float64, device=device)
        self.known = torch.zeros(N_MASKS, N_UPPER, 2, dtype=torch.bool, device=device)

    @torch.no_grad()
    def __call__(self, m: torch.Tensor, u: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
        new = ~self.known[m, u, f]
        if bool(new.any()):
            s = torch.unique(torch.stack([m[new], u[new], f[new]], -1), dim=0)
            s = s[~finished(s, self.rules)]
            if len(s):
                self.values[s[:, 0], s[:, 1], s[:, 2]] = self.value(*s.unbind(-1)).to(torch.float64)
            self.known[m, u, f] = True
        return self.values[m, u, f]


def td_targets(table: torch.Tensor, states: torch.Tensor, rules: Rules, chunk: int = 8192) -> torch.Tensor:
    """``(N,)`` one-turn backups of ``table`` at ``states (N, 3)``: the expected points of the turn
    plus ``table`` of the next turn-start state, the turn played to maximise that sum (float64)."""
    unique, inverse = torch.unique(states, dim=0, return_inverse=True)
    out = torch.empty(len(unique), dtype=torch.float64, device=states.device)
    for s in range(0, len(unique), chunk):
        m, u, f = unique[s : s + chunk].unbind(-1)
        out[s : s + chunk] = turn_start_values(m, u.unsqueeze(1), f.unsqueeze(1), table, rules)
    return out[inverse]


def fit_value(
    net: TurnValueNet,
    states: torch.Tensor,
    targets: torch.Tensor,
    epochs: int,
    lr: float = 1e-3,
    batch_size: int = 4096,
    seed: int = 0,
    weight_decay: float = 0.0,
) -> list[float]:
    """Least squares of ``net`` on ``targets (N,)`` at ``states (N, 3)`` (Adam, the learning rate
    decayed to 0 by a cosine); returns the mean squared error of each epoch, in points squared."""
    if epochs < 1 or batch_size < 1 or len(states) == 0:
        raise ValueError(f"epochs, batch_size and the states must be >= 1, got {epochs}, {batch_size}, {len(states)}")
    g = torch.Generator(device="cpu").manual_seed(seed)
    opt = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=weight_decay)
    steps = epochs * -(-len(states) // batch_size)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    y = (targets / SCALE).float()
    m, u, f = states.unbind(-1)
    feats = state_features(m, u, f)
    losses = []
    net.train()
    for _ in range(epochs):
        order = torch.randperm(len(states), generator=g).to(states.device)
        total = 0.0
        for s in range(0, len(order), batch_size):
            i = order[s : s + batch_size]
            loss = (net.mlp(feats[i]).squeeze(-1) - y[i]).square().mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(i)
        losses.append(total / len(order) * SCALE**2)
    net.eval()
    return losses
