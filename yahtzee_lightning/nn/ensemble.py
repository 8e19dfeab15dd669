"""K networks of one shape evaluated as one: the forward pass of an ensemble's collection.

An ensemble trains K independent :class:`PolicyValueNet` members (each with its own weights and
optimiser); what they share is the per-step cost of playing. :class:`StackedNet` holds a copy of
the members' weights stacked on a leading dimension and evaluates them in one call, with
``torch.vmap`` over ``torch.func.functional_call`` of one network's code (so every layer kind the
network has, LayerNorm, dice embeddings, the box mask, works as it is): a batch of ``K * N``
observations, member-major (member ``k``'s games are rows ``k*N .. (k+1)*N - 1``), gives the
outputs a single network would, member ``k``'s rows computed with member ``k``'s weights.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from torch import nn
from torch.func import functional_call, stack_module_state

from .network import PolicyValueNet


class StackedNet(nn.Module):
    """The members' forward pass as one call, on a stacked copy of their weights (refreshed by :meth:`load_`).

    ``template`` is a network of the members' shape: its code runs, its own weights never do. It is a
    child module, so ``train()`` / ``eval()`` (dropout) reach it. Not trained: the members are.
    """

    def __init__(self, template: PolicyValueNet, members: int) -> None:
        super().__init__()
        self.template = template
        self.members = members
        self.config, self.rules, self.feature_names = template.config, template.rules, template.feature_names
        self._state: dict[str, torch.Tensor] = {}

    @torch.no_grad()
    def load_(self, nets: Sequence[nn.Module]) -> StackedNet:
        """Take the members' current weights (a copy: call it again after they change)."""
        if len(nets) != self.members:
            raise ValueError(f"a StackedNet of {self.members} members was given {len(nets)} networks")
        params, buffers = stack_module_state(list(nets))
        self._state = {k: v.detach() for k, v in {**params, **buffers}.items()}
        return self

    def forward(self, obs: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """As :meth:`PolicyValueNet.forward` on ``K * N`` member-major observations."""
        if not self._state:
            raise RuntimeError("StackedNet.load_(members) before its first forward")
        n = obs.batch_size[0] // self.members

        def one(state: dict[str, torch.Tensor], member_obs: TensorDictBase):
            return functional_call(self.template, state, (member_obs,))

        out = torch.vmap(one, randomness="different")(self._state, obs.reshape(self.members, n))
        return tuple(x.flatten(0, 1) for x in out)
