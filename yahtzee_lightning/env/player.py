"""The Player interface: what chooses the actions of a seat, for evaluation and the opponents of a match.

It lives with the env, which takes players for the other seats of a match; the players themselves
(optimal, greedy, random, trained agents) live in ``yahtzee_lightning.players``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from ..game import Rules
from .games import Observation


class Player(ABC):
    """Chooses actions for a batch of games from the environment's raw observation.

    ``obs`` (a TensorDict from the env, or a dict from ``Games``:
    read it by key only) carries the keys of ``yahtzee_lightning.env.keys`` (dice, card, roll, turn,
    yahtzee_bonuses, score, keep_mask, box_mask) with batch shape ``(N,)``. A player returns a
    keep pattern (0..31, bit i keeps sorted die i) and a box (0..12) for every game; the game
    uses the keep where ``roll < 2`` and the box where ``roll == 2``, and the box must be legal
    there (``box_mask``).
    """

    name: str = "player"
    matches_only: bool = False  # plays from the opponents' cards too: matches (N players) only

    def __init__(self, rules: Rules | None = None) -> None:
        self.rules = rules or Rules()

    @abstractmethod
    def act(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(keep (N,) int64, box (N,) int64)``."""
