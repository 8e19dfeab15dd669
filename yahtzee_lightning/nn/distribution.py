"""The turn's distribution: which head acts depends on the roll index, in one small place.

A step's action is a keep (while ``roll < 2``) or a box (``roll == 2``); the env ignores the
other. So the log-probability and entropy of a step count only the active head. TorchRL's
``CompositeDistribution`` would add both heads' log-probabilities, which is why the policy is
``TurnDistribution`` instead: a ``torch.distributions.Distribution`` whose sample is the pair
(keep, box) and whose ``log_prob`` and ``entropy`` pick the head by roll index, in one place.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from torch.distributions import Bernoulli, Categorical, Distribution

from ..game import N_DICE, N_KEEPS
from ..game.engine import ReadAhead, keep_bits_to_pattern
from ..game.rules import N_ROLLS


class TurnDistribution(Distribution):
    """Keep head (categorical over 32 patterns or 5 Bernoulli bits) and box head, chosen by roll.

    ``sample()`` and ``mode`` give the pair ``(keep pattern, box)``; ``log_prob(keep, box)`` (or
    ``log_prob(action_td)`` with ``keep`` and ``box`` entries, as TorchRL's losses call it) and
    ``entropy()`` are those of the keep head where ``roll < 2`` and of the box head where
    ``roll == 2``. Per-head entropies: ``keep_entropy``, ``box_entropy``.
    """

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(
        self, roll_logits: torch.Tensor, box_logits: torch.Tensor, roll: torch.Tensor, validate_args: bool = False
    ) -> None:
        self.bernoulli = roll_logits.shape[-1] == N_DICE
        self.raw_logits = (roll_logits, box_logits)  # as the network gave them (saturation metrics)
        # No argument validation: it reads every check back to the host, once per step.
        keep = Bernoulli if self.bernoulli else Categorical
        self.keep = keep(logits=roll_logits, validate_args=False)
        # Games past their last box have no legal box: give them a harmless uniform head.
        safe = torch.where(torch.isinf(box_logits).all(-1, keepdim=True), 0.0, box_logits)
        self.box = Categorical(logits=safe, validate_args=False)
        self.rolling = roll < N_ROLLS - 1
        super().__init__(batch_shape=roll.shape, validate_args=False)

    def _keep_log_prob(self, keep: torch.Tensor) -> torch.Tensor:
        if self.bernoulli:
            bits = ((keep.unsqueeze(-1) >> torch.arange(N_DICE, device=keep.device)) & 1).float()
            return self.keep.log_prob(bits).sum(-1)
        return self.keep.log_prob(keep)

    def keep_log_probs(self) -> torch.Tensor:
        """``(..., 32)``: the log-probability of every keep pattern (for losses over all of them)."""
        if not self.bernoulli:
            return self.keep.logits
        patterns = torch.arange(1 << N_DICE, device=self.keep.logits.device)
        bits = ((patterns.unsqueeze(-1) >> torch.arange(N_DICE, device=patterns.device)) & 1).to(self.keep.logits)
        logits = self.keep.logits
        on, off = torch.nn.functional.logsigmoid(logits), torch.nn.functional.logsigmoid(-logits)
        return on @ bits.T + off @ (1 - bits).T

    def keep_entropy(self) -> torch.Tensor:
        return self.keep.entropy().sum(-1) if self.bernoulli else self.keep.entropy()

    def box_entropy(self) -> torch.Tensor:
        return self.box.entropy()

    def log_prob(self, keep: torch.Tensor | TensorDictBase, box: torch.Tensor | None = None) -> torch.Tensor:
        if box is None:  # TorchRL's losses pass the whole ``action`` entry
            keep, box = keep["keep"], keep["box"]
        # The one place where the roll index picks the head that counts.
        return torch.where(self.rolling, self._keep_log_prob(keep), self.box.log_prob(box))

    def entropy(self) -> torch.Tensor:
        return torch.where(self.rolling, self.keep_entropy(), self.box_entropy())

    def sample(
        self, sample_shape: tuple[int, ...] = (), generators: Sequence[torch.Generator] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A pair ``(keep pattern, box)``. ``generators``: K generators, one per equal block of the
        leading dimension (an ensemble's members' games), each block sampled from its own: a
        member's actions then depend on no other member (None: the process's generator)."""
        if not self.bernoulli and not sample_shape:
            # Both heads in one draw, as ``PolicyModule.sample`` does: the same actions from the
            # same generator state, whichever of the two a policy plays through.
            scores = _race(torch.cat([self.keep.logits, self.box.logits], -1), generators)
            return scores[..., :N_KEEPS].argmax(-1), scores[..., N_KEEPS:].argmax(-1)
        if generators is None:
            keep = self.keep.sample(torch.Size(sample_shape))
            box = self.box.sample(torch.Size(sample_shape))
        else:
            keep, box = _sample_by_blocks(self.keep, generators), _sample_by_blocks(self.box, generators)
        if self.bernoulli:
            keep = keep_bits_to_pattern(keep.bool())
        return keep, box

    @property
    def mode(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.bernoulli:
            keep = keep_bits_to_pattern(self.keep.logits > 0)
        else:
            keep = self.keep.logits.argmax(-1)
        return keep, self.box.logits.argmax(-1)

    @property
    def deterministic_sample(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.mode


def _sample_by_blocks(head: Distribution, generators: Sequence[torch.Generator]) -> torch.Tensor:
    """One sample of ``head`` (Categorical or Bernoulli) per row, block ``k`` of the rows drawn from
    ``generators[k]``: what ``head.sample()`` computes, with a generator of its own per block."""
    probs = head.probs
    n = probs.shape[0] // len(generators)
    out = []
    for p, g in zip(probs.split(n), generators, strict=True):
        if isinstance(head, Bernoulli):
            out.append(torch.bernoulli(p, generator=g))
        else:
            flat = torch.multinomial(p.reshape(-1, p.shape[-1]), 1, True, generator=g)
            out.append(flat.reshape(p.shape[:-1]))
    return torch.cat(out)


def normalized(logits: torch.Tensor) -> torch.Tensor:
    """Log-probabilities as ``Categorical(logits=...)`` computes them (to the bit: PPO's first
    ratio is exactly 1)."""
    return logits - logits.logsumexp(dim=-1, keepdim=True)


def uniform_noise(
    shape: tuple[int, ...], device: torch.device, generators: Sequence[torch.Generator] | ReadAhead | None
) -> torch.Tensor:
    """Uniform draws of ``shape``, row block ``k`` from ``generators[k]`` (read ahead where they
    are), so that a member's draws depend on its own generator alone; None: the process's."""
    if isinstance(generators, ReadAhead):
        return generators(torch.rand, shape, device)
    noise = torch.empty(shape, device=device)
    if generators is None:
        return noise.uniform_()
    for block, g in zip(noise.split(shape[0] // len(generators)), generators, strict=True):
        block.uniform_(generator=g)
    return noise


def gumbel(log_probs: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """``log p + G`` (G standard Gumbel, ``-log(-log U)`` of the ``uniform`` draws): its argmax over a
    row is a sample of the row's categorical (the Gumbel-max trick; uniform draws and two logs cost
    a seventh of ``multinomial`` here, and of ``exponential_``)."""
    return log_probs - uniform.log().neg().log()


def _race(log_probs: torch.Tensor, generators: Sequence[torch.Generator] | ReadAhead | None) -> torch.Tensor:
    """``gumbel`` with fresh draws (row block ``k`` from ``generators[k]``)."""
    return gumbel(log_probs, uniform_noise(log_probs.shape, log_probs.device, generators))
