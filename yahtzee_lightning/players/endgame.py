"""A player that switches to the exact win-maximising move on its last turn of a match."""

from __future__ import annotations

import torch

from ..env import keys as K
from ..env.games import Observation
from ..game import OPEN
from ..solver.endgame import last_turn, win_values
from .base import Player


def endgame_positions(obs: Observation) -> tuple[torch.Tensor, torch.Tensor]:
    """``(applies (N,) bool, need (N,))``: the positions of a match where the player has its last
    turn and every opponent has finished, and the points it needs there (best opponent's final
    score minus its own score; it wins with more, draws with exactly that). Solitaire
    observations (no opponents) have no such position."""
    card = obs[K.CARD]
    if K.OPPONENT_CARDS not in obs.keys():
        return torch.zeros(card.shape[:-1], dtype=torch.bool, device=card.device), torch.zeros_like(card[..., 0])
    finished = (obs[K.OPPONENT_CARDS] != OPEN).all(-1).all(-1)
    return last_turn(card) & finished, obs[K.OPPONENT_SCORES].amax(-1) - obs[K.SCORE]


def best_or_chosen(values: torch.Tensor, chosen: torch.Tensor, tol: float = 1e-9) -> torch.Tensor:
    """The chosen action where it is as good as the best one (within ``tol``), else the best."""
    best = values.amax(-1)
    good = values.gather(-1, chosen.long().unsqueeze(-1)).squeeze(-1) >= best - tol
    return torch.where(good, chosen.long(), values.argmax(-1))


class EndgamePlayer(Player):
    """Plays ``base``, except on its last turn once every opponent has finished: there it plays
    the move that maximises ``P(win) + P(draw) / 2`` exactly (``..solver.endgame``), keeping
    the base's move whenever that is as good."""

    def __init__(self, base: Player) -> None:
        super().__init__(base.rules)
        self.base = base
        self.matches_only = base.matches_only
        self.name = f"endgame:{getattr(base, 'name', type(base).__name__)}"

    @torch.no_grad()
    def act(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor]:
        keep, box = self.base.act(obs)
        applies, need = endgame_positions(obs)
        if not bool(applies.any()):
            return keep, box
        i = applies.nonzero().squeeze(-1)
        keep_values, box_values = win_values(obs[K.DICE][i], obs[K.ROLL][i], obs[K.CARD][i], need[i], self.rules)
        keep, box = keep.clone().long(), box.clone().long()
        keep[i] = best_or_chosen(keep_values, keep[i])
        box[i] = best_or_chosen(box_values, box[i])
        return keep, box
