"""A match player: the optimal player's moves, re-weighed for the chance of winning.

The optimal (solitaire) player maximises its mean score and ignores the opponent. In a match
only beating the opponent counts: behind, a wider spread of final scores is worth some mean;
ahead, a narrower one. This player reads, for every choice, the mean and the spread of its final
score if the optimal player's moves follow (``..solver.moments``), does the same for the
opponent from its turn-start state, and takes the choice with the highest chance of finishing
ahead under a normal approximation of both final scores:

    P(win) ~ Phi((own score + mean_a - opponent's score - its mean) / sqrt(var_a + opponent's var))

(a draw counts half: the normal has no mass at equality, so the formula is win + draw / 2). It
is one step of policy improvement on the optimal player for the match objective, not the exact
two-player optimum. With several opponents it plays against the one with the highest expected
final score. Wrapped in ``.EndgamePlayer`` (``endgame:winseeking``), the exact end game
replaces the approximation on its last turn once every opponent has finished.
"""

from __future__ import annotations

import math

import torch

from ..env import keys as K
from ..env.games import Observation
from ..game import Rules
from ..solver import OptimalTable, load_or_solve, turn_state
from ..solver.cache import load_or_solve_moments
from ..solver.moments import turn_moments
from ..solver.oracle import TurnCache, position_values
from .base import Player
from .endgame import best_or_chosen

APPROXIMATIONS = ("normal", "edgeworth")
CHUNK_STATES = 1024  # turn states solved at a time: (13, 252, 1024) float64 buffers, 27 MB each


def win_chance(gap: torch.Tensor, var: torch.Tensor, third: torch.Tensor | None = None) -> torch.Tensor:
    """``P(D > 0)`` for a score difference D of mean ``gap``, variance ``var`` and third central
    moment ``third``: the normal approximation, with ``third`` the one-term Edgeworth correction
    for skewness (clamped to [0, 1]). No variance left: 1, 1/2 or 0 by the sign of the gap."""
    sd = var.clamp(min=1e-12).sqrt()
    w = -gap / sd  # where 0 lies in standard units
    p = 0.5 * torch.erfc(w / math.sqrt(2))
    if third is not None:
        skew = third / sd**3
        density = torch.exp(-0.5 * w * w) / math.sqrt(2 * math.pi)
        p = (p + density * skew / 6 * (w * w - 1)).clamp(0, 1)
    return torch.where(var > 1e-12, p, 0.5 + 0.5 * torch.sign(gap))


def central(raw: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(mean, variance, third central moment)`` from raw moments ``[E F, E F^2, E F^3]``."""
    m1, m2, m3 = raw
    return m1, (m2 - m1 * m1).clamp(min=0), m3 - 3 * m1 * m2 + 2 * m1**3


class WinSeekingPlayer(Player):
    """Maximises an approximate ``P(win) + P(draw) / 2`` one choice at a time (see the module).

    ``approximation``: ``normal`` (mean and variance) or ``edgeworth`` (and skewness).
    """

    name = "winseeking"
    matches_only = True

    def __init__(
        self,
        rules: Rules | None = None,
        table: OptimalTable | None = None,
        moments: torch.Tensor | None = None,
        approximation: str = "normal",
        device: torch.device | str = "cpu",
    ) -> None:
        super().__init__(rules)
        if approximation not in APPROXIMATIONS:
            raise ValueError(f"approximation must be one of {APPROXIMATIONS}, got {approximation!r}")
        self.approximation = approximation
        self.table = table if table is not None else load_or_solve(self.rules, device)
        higher = moments if moments is not None else load_or_solve_moments(self.table)
        self.tables = [self.table.values, *higher]
        self._turns = TurnCache(self._compute)

    def _compute(self, key: torch.Tensor) -> list[torch.Tensor]:
        """Per game, the moments after each box and each kept multiset: box, k2, k1 of each order."""
        # Games often share a turn-start state (all of them at the first turn): solve each once.
        unique, inverse = torch.unique(key, dim=0, return_inverse=True)
        tables = [x.to(key.device) for x in self.tables]
        parts = []
        for chunk in unique.split(CHUNK_STATES):  # bounded buffers: allocations stay reusable
            m, u, f = chunk.unbind(-1)
            t = turn_moments(m, u.unsqueeze(1), f.unsqueeze(1), tables, self.rules)
            parts.append([x for stage in (t.box, t.k2, t.k1) for x in stage])
        return [torch.cat(xs, -1)[..., inverse] for xs in zip(*parts, strict=True)]

    def opponent_moments(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(mean, variance, third central moment) (N,)`` of the final score of the opponent with
        the highest expected one (every opponent is at the start of a turn)."""
        cards = obs[K.OPPONENT_CARDS]  # (N, P-1, 13)
        m, u, f = turn_state(cards, self.rules).unbind(-1)
        mean, var, third = central([x.to(cards.device)[m, u, f] for x in self.tables])
        mean = mean + obs[K.OPPONENT_SCORES].to(mean.dtype)
        best = mean.argmax(-1, keepdim=True)
        return tuple(x.gather(-1, best).squeeze(-1) for x in (mean, var, third))

    @torch.no_grad()
    def choice_moments(self, obs: Observation) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """``(keeps, boxes)``: ``[mean, variance, third central moment]`` of the points to come
        after each of the 32 keeps ``(N, 32)`` and each of the 13 boxes ``(N, 13)`` when the
        optimal moves follow; the mean is -inf for an illegal box (its other moments 0)."""
        if K.OPPONENT_CARDS not in obs.keys():
            raise ValueError("the win-seeking player needs a match observation (opponent_cards): use --players 2")
        dice, roll, card = obs[K.DICE], obs[K.ROLL], obs[K.CARD]
        staged = self._turns(turn_state(card, self.rules))
        n = len(self.tables)
        box, k2, k1 = staged[:n], staged[n : 2 * n], staged[2 * n :]
        per_order = [position_values(b, x2, x1, dice, roll) for b, x2, x1 in zip(box, k2, k1, strict=True)]

        def moments(raw: list[torch.Tensor]) -> list[torch.Tensor]:
            legal = raw[0] > float("-inf")
            mean, var, third = central([torch.where(legal, x, 0.0) for x in raw])
            return [mean.masked_fill(~legal, float("-inf")), var, third]

        return moments([v[0] for v in per_order]), moments([v[1] for v in per_order])

    @torch.no_grad()
    def win_values(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(keep_win (N, 32), box_win (N, 13), keep_mean, box_mean)``: approximate
        ``P(win) + P(draw) / 2`` after each choice (-inf for illegal boxes), and the mean points
        to come after each (the optimal player's values)."""
        keeps, boxes = self.choice_moments(obs)
        opp_mean, opp_var, opp_third = (x.unsqueeze(-1) for x in self.opponent_moments(obs))
        own = obs[K.SCORE].unsqueeze(-1)

        def chance(mean: torch.Tensor, var: torch.Tensor, third: torch.Tensor) -> torch.Tensor:
            legal = mean > float("-inf")
            skew = third - opp_third if self.approximation == "edgeworth" else None
            p = win_chance(own + torch.where(legal, mean, 0.0) - opp_mean, var + opp_var, skew)
            return p.masked_fill(~legal, float("-inf"))

        return chance(*keeps), chance(*boxes), keeps[0], boxes[0]

    @torch.no_grad()
    def act(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor]:
        keep_win, box_win, keep_mean, box_mean = self.win_values(obs)
        # The optimal player's move wherever it is as likely to win as the best one.
        keep = best_or_chosen(keep_win, keep_mean.argmax(-1), 1e-12)
        return keep, best_or_chosen(box_win, box_mean.argmax(-1), 1e-12)
