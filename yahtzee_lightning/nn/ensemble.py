"""K networks of one shape evaluated as one: the forward pass of an ensemble's collection.

An ensemble trains K independent ``PolicyValueNet`` members (each with its own weights and
optimiser); what they share is the per-step cost of playing. ``StackedNet`` holds a copy of
the members' weights stacked on a leading dimension and evaluates them in one call: a batch of
``K * N`` observations, member-major (member ``k``'s games are rows ``k*N .. (k+1)*N - 1``),
gives the outputs a single network would, member ``k``'s rows computed with member ``k``'s weights.

It is the network's own code that runs: a copy of one member in which every layer with weights
(``Linear``, ``LayerNorm``, ``Embedding``) is replaced by a member-batched twin that reads its
input as ``(K, N, ...)`` (a batched matrix product, ``torch.baddbmm``), and every activation by
one applied to each member's rows on their own. The other operations of the forward pass (the box
mask, concatenations) act row by row and need no change. (``torch.vmap`` over
``torch.func.functional_call`` gives the same, but its per-call overhead doubled the forward's
time at 64 games a member on the CPU.)

Why the activations go member by member: PyTorch's CPU kernels for SiLU and ELU compute a tensor
in SIMD blocks and its last ``numel % block`` elements by a scalar loop, and the two round
differently (by one unit in the last place). Over the whole ``K * N`` rows, which of member ``k``'s
values fall in that tail depends on ``K`` and ``k``; a value head's output one ulp apart moves a
REINFORCE baseline, and a few hundred updates later a sampled action. Applied to each member's
block alone, member ``k``'s activations are computed exactly as in any other ensemble of the same
``N``: its games and weights, not its neighbours, decide its numbers. A CUDA kernel computes every
element by the same code whatever its place, so there the activation takes the whole tensor: one
kernel, not K (on an H100 a pack's kernels a batch grew with K: 7.4x one member's at K = 16,
mostly from the members' own updates; BENCHMARKS.md).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from torch import nn
from torch.nn import functional as F

from .network import ACTIVATIONS, PolicyValueNet


class _Batched(nn.Module):
    """A layer of K members: its weights ``(K, ...)`` (plain tensors, refreshed by ``load_``)."""

    def __init__(self, layer: nn.Module, members: int) -> None:
        super().__init__()
        self.members = members
        self.layer = layer  # the member's layer: its settings (eps, padding ...), never its weights
        self.weights: dict[str, torch.Tensor] = {}

    def load_(self, layers: Sequence[nn.Module]) -> None:
        for name, _ in self.layer.named_parameters(recurse=False):
            self.weights[name] = torch.stack([getattr(m, name).detach() for m in layers])

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """``(K * N, ...)`` rows as ``(K, N * ...)``: each member's rows in one matrix."""
        return x.reshape(self.members, -1, x.shape[-1])


class _Linear(_Batched):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.weights["weight"].shape[1] == 1:  # one output (the value): a dot product a row
            return self._dot(x)
        w = self.weights["weight"].transpose(1, 2)
        y = torch.baddbmm(self.weights["bias"].unsqueeze(1), self.split(x), w) if "bias" in self.weights else None
        y = y if y is not None else torch.bmm(self.split(x), w)
        return y.reshape(*x.shape[:-1], y.shape[-1])

    def _dot(self, x: torch.Tensor) -> torch.Tensor:
        """A one-output layer as each row's dot product with its member's weights. ``baddbmm`` rounds
        a one-column product differently for one member than for several (the BLAS picks another
        kernel), so a member alone and the same member in a pack would drift apart; a row-wise
        product and sum is computed the same way for every row."""
        y = (self.split(x) * self.weights["weight"]).sum(-1, keepdim=True)
        if "bias" in self.weights:
            y = y + self.weights["bias"].unsqueeze(1)
        return y.reshape(*x.shape[:-1], 1)


class _LayerNorm(_Batched):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.layer_norm(x, self.layer.normalized_shape, None, None, self.layer.eps)
        if "weight" in self.weights:
            y = self.split(y) * self.weights["weight"].unsqueeze(1) + self.weights["bias"].unsqueeze(1)
        return y.reshape(x.shape)


class _Embedding(_Batched):
    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        table = self.weights["weight"]  # (K, n, d): member k's rows at k * n ..
        offset = torch.arange(self.members, device=idx.device) * table.shape[1]
        flat = idx.reshape(self.members, -1) + offset.unsqueeze(1)
        return F.embedding(flat, table.reshape(-1, table.shape[-1])).reshape(*idx.shape, table.shape[-1])


#: Device types whose activation kernels compute a tensor's last elements by another code path (the
#: CPU's scalar tail after its SIMD blocks): there an activation goes member by member.
PER_MEMBER_DEVICES = frozenset({"cpu"})


class _Activation(_Batched):
    """An activation applied to each member's block of rows on its own where the device needs it
    (see the module's docstring) and the members' numbers must not depend on their pack
    (``exact``); elsewhere to the whole tensor, in one kernel."""

    exact = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.members == 1 or not self.exact or x.device.type not in PER_MEMBER_DEVICES:
            return self.layer(x)
        blocks = x.reshape(self.members, -1).unbind(0)
        return torch.cat([self.layer(block) for block in blocks]).reshape(x.shape)


_TWINS = {nn.Linear: _Linear, nn.LayerNorm: _LayerNorm, nn.Embedding: _Embedding}
# every activation a network may have, and the value's ELU whatever the trunk's activation
_TWINS.update({activation: _Activation for activation in (*ACTIVATIONS.values(), nn.ELU)})


class StackedNet(nn.Module):
    """The members' forward pass as one call, on a stacked copy of their weights (refreshed by ``load_``).

    Built from ``template``, a network of the members' shape whose code runs (its weights never
    do); its layers with weights must be ``Linear``, ``LayerNorm`` or ``Embedding``. Not trained:
    the members are. ``train()`` / ``eval()`` reach its dropout as in a network.
    """

    takes_rolls = True  # as PolicyValueNet: its forward takes ``rolls``

    def __init__(self, template: PolicyValueNet, members: int) -> None:
        super().__init__()
        self.members = members
        self.net = copy.deepcopy(template)
        self.config, self.rules, self.feature_names = template.config, template.rules, template.feature_names
        self._twins: dict[str, _Batched] = {}
        for name, module in list(self.net.named_modules()):
            if type(module) in _TWINS:
                twin = _TWINS[type(module)](module, members)
                parent, _, attr = name.rpartition(".")
                setattr(self.net.get_submodule(parent), attr, twin)
                self._twins[name] = twin
            elif any(True for _ in module.parameters(recurse=False)):
                raise ValueError(f"StackedNet cannot batch {name} ({type(module).__name__}): it has weights")
        self._loaded = False
        self._shared = False
        self._live: torch.Tensor | None = None  # one of the live stacks (share_): where the members are
        self._device = next(template.parameters()).device

    def fixed_features(self, obs: TensorDictBase) -> torch.Tensor | None:
        """As ``PolicyValueNet.fixed_features``: weight-free, the same for every member."""
        return self.net.fixed_features(obs)

    @property
    def dropout_shape(self) -> tuple[int, int] | None:
        return self.net.dropout_shape

    def draw_dropout_mask(
        self, n: int, generator: torch.Generator | Sequence[torch.Generator] | None = None
    ) -> torch.Tensor | None:
        """As ``PolicyValueNet.draw_dropout_mask`` (member ``k``'s block from ``generator[k]``)."""
        self._follow_live()
        return self.net.draw_dropout_mask(n, generator)

    def _follow(self, device: torch.device) -> None:
        """Move its own tensors (the template's, which set where dropout masks are drawn, and a dice
        embedding's position code) to the members' ``device``. It is not a registered child of the
        module that trains, so Lightning's move to a GPU never reaches it: the members' device does."""
        if self._device != device:
            self.net.to(device)
            self._device = device

    def _follow_live(self) -> None:
        """With live stacks (``share_``), follow them: a packed update's stacks move with its module."""
        if self._live is not None:
            self._follow(self._live.device)

    def share_(self, stacks: dict[str, torch.Tensor]) -> StackedNet:
        """Read the members' weights from ``stacks`` (``(K, ...)`` per parameter name, as a member
        names it) from now on: the live weights of a packed update, never copied again. A packed
        update's members equal their single runs to float tolerance, not to the bit, so the
        activations take the whole tensor here on every device (one operator, not K)."""
        for name, twin in self._twins.items():
            if isinstance(twin, _Activation):
                twin.exact = False
            for param, _ in twin.layer.named_parameters(recurse=False):
                twin.weights[param] = stacks[f"{name}.{param}"]
        self._loaded = self._shared = True
        self._live = next(iter(stacks.values()), None)
        self._follow_live()
        return self

    @torch.no_grad()
    def load_(self, nets: Sequence[nn.Module]) -> StackedNet:
        """Take the members' current weights (a copy: call it again after they change; nothing to
        do once ``share_`` gave it the live stacks)."""
        if self._shared:
            return self
        if len(nets) != self.members:
            raise ValueError(f"a StackedNet of {self.members} members was given {len(nets)} networks")
        self._follow(next(nets[0].parameters()).device)
        for name, twin in self._twins.items():
            twin.load_([net.get_submodule(name) for net in nets])
        self._loaded = True
        return self

    def forward(
        self,
        obs: TensorDictBase,
        features: torch.Tensor | None = None,
        dropout_mask: torch.Tensor | None = None,
        rolls: int | str | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """As ``PolicyValueNet.forward`` on ``K * N`` member-major observations (and masks);
        ``rolls`` as there (whole turns: each member's ``N`` rows in whole turns)."""
        if not self._loaded:
            raise RuntimeError("StackedNet.load_(members) before its first forward")
        if isinstance(rolls, torch.Tensor):  # the heads' rows would cross the members' blocks
            raise ValueError(
                "a stacked pack takes rolls as None, a roll index or whole turns, not a tensor of rows' rolls"
            )
        self._follow_live()
        return self.net(obs, features, dropout_mask, rolls)
