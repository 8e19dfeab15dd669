"""The reference players: exact optimum, greedy one-turn, uniform random."""

from __future__ import annotations

import torch

from ..env import keys as K
from ..env.games import Observation
from ..game import N_BOXES, N_KEEPS, Rules
from ..solver import OptimalTable, TurnOracle, load_or_solve
from .base import Player


class OraclePlayer(Player):
    """Takes the action of highest value under a ``TurnOracle`` (ties: the lowest index)."""

    def __init__(self, oracle: TurnOracle) -> None:
        super().__init__(oracle.rules)
        self.oracle = oracle

    @torch.no_grad()
    def act(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor]:
        keep_values, box_values = self.oracle.action_values(obs[K.DICE], obs[K.ROLL], obs[K.CARD])
        return keep_values.argmax(-1), box_values.argmax(-1)


class OptimalPlayer(OraclePlayer):
    """Maximises the expected final score exactly (the solver's table)."""

    name = "optimal"

    def __init__(
        self, rules: Rules | None = None, table: OptimalTable | None = None, device: torch.device | str = "cpu"
    ) -> None:
        rules = rules or Rules()
        super().__init__(TurnOracle(rules, table if table is not None else load_or_solve(rules, device)))


class GreedyPlayer(OraclePlayer):
    """Maximises the expected score of the current turn only (one-turn expectimax)."""

    name = "greedy"

    def __init__(self, rules: Rules | None = None, device: torch.device | str = "cpu") -> None:
        super().__init__(TurnOracle(rules or Rules(), None))


class RandomPlayer(Player):
    """Uniform over legal actions: any keep pattern, any legal box."""

    name = "random"

    def __init__(self, rules: Rules | None = None, device: torch.device | str = "cpu", seed: int = 0) -> None:
        super().__init__(rules)
        self.generator = torch.Generator(device=device).manual_seed(seed)

    def act(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor]:
        legal = obs[K.BOX_MASK]
        n, device = legal.shape[:-1], legal.device
        keep = torch.randint(0, N_KEEPS, n, device=device, generator=self.generator)
        noise = torch.rand(*n, N_BOXES, device=device, generator=self.generator)
        box = noise.masked_fill_(~legal, -1).argmax(-1)
        return keep, box
