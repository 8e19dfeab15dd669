"""The turn policy: which head acts depends on the roll index, in one small place.

A step's action is a keep (while ``roll < 2``) or a box (``roll == 2``); the env ignores the
other. So the log-probability and entropy of a step count only the active head. TorchRL's
composite distributions would add both heads' log-probabilities, which is why the algorithms use
:class:`TurnDistribution` instead of ``CompositeDistribution``.
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torch.distributions import Bernoulli, Categorical

from ..env import keys as K
from ..game import N_DICE
from ..game.engine import keep_bits_to_pattern
from ..game.rules import N_ROLLS
from .network import PolicyValueNet

LOG_PROB = "sample_log_prob"
VALUE = "state_value"


class TurnDistribution:
    """Keep head (categorical over 32 patterns or 5 Bernoulli bits) and box head, chosen by roll."""

    def __init__(self, roll_logits: torch.Tensor, box_logits: torch.Tensor, roll: torch.Tensor) -> None:
        self.bernoulli = roll_logits.shape[-1] == N_DICE
        self.keep = Bernoulli(logits=roll_logits) if self.bernoulli else Categorical(logits=roll_logits)
        # Games past their last box have no legal box: give them a harmless uniform head.
        safe = torch.where(torch.isinf(box_logits).all(-1, keepdim=True), 0.0, box_logits)
        self.box = Categorical(logits=safe)
        self.rolling = roll < N_ROLLS - 1

    def _keep_log_prob(self, keep: torch.Tensor) -> torch.Tensor:
        if self.bernoulli:
            bits = ((keep.unsqueeze(-1) >> torch.arange(N_DICE, device=keep.device)) & 1).float()
            return self.keep.log_prob(bits).sum(-1)
        return self.keep.log_prob(keep)

    def keep_entropy(self) -> torch.Tensor:
        return self.keep.entropy().sum(-1) if self.bernoulli else self.keep.entropy()

    def box_entropy(self) -> torch.Tensor:
        return self.box.entropy()

    def log_prob(self, keep: torch.Tensor, box: torch.Tensor) -> torch.Tensor:
        return torch.where(self.rolling, self._keep_log_prob(keep), self.box.log_prob(box))

    def sample(self) -> tuple[torch.Tensor, torch.Tensor]:
        keep = self.keep.sample()
        if self.bernoulli:
            keep = keep_bits_to_pattern(keep.bool())
        return keep, self.box.sample()

    def mode(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.bernoulli:
            keep = keep_bits_to_pattern(self.keep.logits > 0)
        else:
            keep = self.keep.logits.argmax(-1)
        return keep, self.box.logits.argmax(-1)


def distribution(net: PolicyValueNet, obs: TensorDictBase) -> tuple[TurnDistribution, torch.Tensor]:
    roll_logits, box_logits, value = net(obs)
    return TurnDistribution(roll_logits, box_logits, obs[K.ROLL]), value


class PolicyModule(TensorDictModuleBase):
    """The actor for TorchRL collectors: samples an action, records its log-prob and the value."""

    def __init__(self, net: PolicyValueNet, deterministic: bool = False) -> None:
        super().__init__()
        self.net = net
        self.deterministic = deterministic
        self.in_keys = [K.DICE, K.CARD, K.ROLL, K.TURN, K.BOX_MASK]
        self.out_keys = [K.KEEP, K.BOX, LOG_PROB, VALUE]

    @torch.no_grad()
    def forward(self, td: TensorDictBase) -> TensorDictBase:
        # Collect with the deterministic network (no dropout noise in the behaviour policy).
        was_training = self.net.training
        self.net.eval()
        dist, value = distribution(self.net, td)
        self.net.train(was_training)
        keep, box = dist.mode() if self.deterministic else dist.sample()
        td.set(K.KEEP, keep)
        td.set(K.BOX, box)
        td.set(LOG_PROB, dist.log_prob(keep, box))
        td.set(VALUE, value)
        return td
