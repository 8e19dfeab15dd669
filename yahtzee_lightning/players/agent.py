"""A trained network as a player."""

from __future__ import annotations

import torch

from ..env.games import Observation
from ..game import Rules
from ..nn import PolicyValueNet, distribution
from ..solver.value import TurnValueNet
from ..solver.win_value import WinValueNet
from .base import Player


class AgentPlayer(Player):
    """Plays the network's most likely action (or samples with ``greedy=False``).

    ``turn_value``: the agent's learned turn-start value, where it carries one; this player does not
    use it, ``lookahead:`` does (``.lookahead.lookahead_player``); ``win_value``: its learned chance
    of winning a match, for ``winlookahead:`` (``.win_lookahead.win_lookahead_player``)."""

    def __init__(
        self,
        net: PolicyValueNet,
        greedy: bool = True,
        name: str = "agent",
        turn_value: TurnValueNet | None = None,
        win_value: WinValueNet | None = None,
    ) -> None:
        super().__init__(Rules.from_dict(net.config["rules"]))
        self.net, self.greedy, self.name = net, greedy, name
        self.turn_value, self.win_value = turn_value, win_value

    @torch.no_grad()
    def act(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor]:
        was_training = self.net.training
        self.net.eval()
        dist, _ = distribution(self.net, obs)
        self.net.train(was_training)
        return dist.mode if self.greedy else dist.sample()
