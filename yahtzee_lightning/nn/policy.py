"""The turn policy: which head acts depends on the roll index, in one small place.

A step's action is a keep (while ``roll < 2``) or a box (``roll == 2``); the env ignores the
other. So the log-probability and entropy of a step count only the active head. TorchRL's
``CompositeDistribution`` would add both heads' log-probabilities, which is why the policy is
:class:`TurnDistribution` instead: a ``torch.distributions.Distribution`` whose sample is the pair
(keep, box) and whose ``log_prob`` and ``entropy`` pick the head by roll index, in one place.

:func:`make_actor` and :func:`make_critic` wrap the network as TorchRL's ``ProbabilisticActor``
and a value operator, so TorchRL's collectors, estimators and losses (``ClipPPOLoss``, ``GAE`` ...)
run on its TensorDicts as they are (see ``tests/nn/test_torchrl.py``). The algorithms collect
with :class:`PolicyModule` (the same distribution on a cheaper path). In training it acts with
dropout masks it draws and records (``dropout_mask``), and the update replays them
(:func:`as_played`): the network that learns is the one that acted.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, TensorDictModuleBase
from torch.distributions import Bernoulli, Categorical, Distribution
from torchrl.modules import ProbabilisticActor

from ..env import keys as K
from ..env.games import captured
from ..game import N_BOXES, N_DICE, N_KEEPS
from ..game.engine import ReadAhead, keep_bits_to_pattern
from ..game.rules import N_ROLLS
from .network import PolicyValueNet

LOG_PROB = "sample_log_prob"
VALUE = "state_value"
#: The network's fixed features of a state, as the collection computed them (carried in the rollout
#: for the update; a network reads them only when its caller passes them).
FEATURES = "features"
#: The dropout masks ``(layers, width)`` a step's action was chosen under (training's collection, with
#: dropout > 0): the update replays them, so that it differentiates the policy that acted.
DROPOUT_MASK = "dropout_mask"
ROLL_LOGITS = "roll_logits"
BOX_LOGITS = "box_logits"
OBS_KEYS = [K.DICE, K.CARD, K.ROLL, K.TURN, K.BOX_MASK]


class TurnDistribution(Distribution):
    """Keep head (categorical over 32 patterns or 5 Bernoulli bits) and box head, chosen by roll.

    ``sample()`` and ``mode`` give the pair ``(keep pattern, box)``; ``log_prob(keep, box)`` (or
    ``log_prob(action_td)`` with ``keep`` and ``box`` entries, as TorchRL's losses call it) and
    ``entropy()`` are those of the keep head where ``roll < 2`` and of the box head where
    ``roll == 2``. Per-head entropies: :meth:`keep_entropy`, :meth:`box_entropy`.
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
            # Both heads in one draw, as :meth:`PolicyModule.sample` does: the same actions from the
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


@contextmanager
def eval_mode(net: torch.nn.Module) -> Iterator[None]:
    """The network in eval mode (no dropout) inside the block, as it was after it.

    Switching walks every submodule, so a network already in eval mode is left alone: a rollout
    switches once for all its steps rather than once per step.
    """
    if not net.training:
        yield
        return
    net.eval()
    try:
        yield
    finally:
        net.train()


def distribution(
    net: PolicyValueNet,
    obs: TensorDictBase,
    features: torch.Tensor | None = None,
    dropout_mask: torch.Tensor | None = None,
) -> tuple[TurnDistribution, torch.Tensor]:
    """The policy and value of ``obs``; ``features``: its fixed features when the caller has them
    (a rollout's, see :func:`carried`); ``dropout_mask``: the masks to act under (see
    :func:`as_played`)."""
    if dropout_mask is not None:
        roll_logits, box_logits, value = net(obs, features, dropout_mask)
    else:
        roll_logits, box_logits, value = net(obs) if features is None else net(obs, features)
    return TurnDistribution(roll_logits, box_logits, obs[K.ROLL]), value


def as_played(net: PolicyValueNet, obs: TensorDictBase) -> tuple[TurnDistribution, torch.Tensor]:
    """The policy and value of a rollout's steps under the network that chose their actions: its
    carried features and the dropout masks it acted with (none recorded: the network's mode). What
    every on-policy loss differentiates: at the update's first step its log-probabilities are those
    recorded when the games were played."""
    return distribution(net, obs, carried(obs), obs.get(DROPOUT_MASK, None))


def carried(obs: TensorDictBase) -> torch.Tensor | None:
    """The fixed features a rollout carries for ``obs`` (None where it carries none): for the
    update's own steps only, whose features :class:`PolicyModule` wrote at the same step."""
    return obs.get(FEATURES, None)


def _normalized(logits: torch.Tensor) -> torch.Tensor:
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


def _gumbel(log_probs: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """``log p + G`` (G standard Gumbel, ``-log(-log U)`` of the ``uniform`` draws): its argmax over a
    row is a sample of the row's categorical (the Gumbel-max trick; uniform draws and two logs cost
    a seventh of ``multinomial`` here, and of ``exponential_``)."""
    return log_probs - uniform.log().neg().log()


def _race(log_probs: torch.Tensor, generators: Sequence[torch.Generator] | ReadAhead | None) -> torch.Tensor:
    """:func:`_gumbel` with fresh draws (row block ``k`` from ``generators[k]``)."""
    return _gumbel(log_probs, uniform_noise(log_probs.shape, log_probs.device, generators))


class PolicyModule(TensorDictModuleBase):
    """The actor for TorchRL collectors: samples an action, records its log-prob and the value."""

    def __init__(
        self, net: PolicyValueNet, deterministic: bool = False, record_dropout: bool = False, capture: str = "none"
    ) -> None:
        super().__init__()
        self.net = net
        self.deterministic = deterministic
        self.set_capture(capture)
        #: Act under freshly drawn dropout masks and write them (``dropout_mask``) for the update to
        #: replay: training's behaviour policy. False: the mean network (dropout off), as evaluation.
        self.record_dropout = record_dropout
        #: One generator per member's block of games (a training run's own), or those generators
        #: read ahead (:meth:`read_ahead`); None: the process's.
        self.generators: list[torch.Generator] | ReadAhead | None = None
        self.in_keys = list(OBS_KEYS)
        self.out_keys = [K.KEEP, K.BOX, LOG_PROB, VALUE, FEATURES, DROPOUT_MASK]

    @torch.no_grad()
    def forward(self, td: TensorDictBase) -> TensorDictBase:
        # The fixed features are computed here, once per step, and written for the update; so are
        # the dropout masks the step acts under (training's collection of a network with dropout).
        fixed = getattr(self.net, "fixed_features", None)  # a network of our own; another computes its own
        mask = None
        if self.record_dropout and not self.deterministic and getattr(self.net, "dropout_shape", None):
            mask = self.net.draw_dropout_mask(td.shape[0], self.generators)
        if fixed is not None and self.categorical and type(self).choose is PolicyModule.choose:
            # The cheapest path, and the captured one: features, forward and sampling in one function.
            noise = None if self.deterministic else self.action_noise(td.shape[0], td.device)
            with eval_mode(self.net):
                keep, box, log_prob, value, features = self._act(self.observation(td), mask, noise)
        else:  # the Bernoulli keep head, a subclass's own choice, another network: through the distribution
            features = fixed(td) if fixed is not None else None
            with eval_mode(self.net):
                roll_logits, box_logits, value = (
                    self.net(td, features) if mask is None else self.net(td, features, mask)
                )
            dist = TurnDistribution(roll_logits, box_logits, td[K.ROLL])
            keep, box = self.choose(td, dist)
            log_prob = dist.log_prob(keep, box)
        td.set(K.KEEP, keep)
        td.set(K.BOX, box)
        td.set(LOG_PROB, log_prob)
        td.set(VALUE, value)
        if features is not None:
            td.set(FEATURES, features)
        if mask is not None:
            td.set(DROPOUT_MASK, mask)
        return td

    def read_ahead(self, generators: list[torch.Generator]) -> None:
        """Draw the members' masks and action noise ahead, a batch at a time (:meth:`plan`): one
        slice a step for every member, where drawing block by block cost a call a member. The same
        numbers on the CPU. Only where every draw is a uniform one of this class's own sampling
        (not a subclass's choice, not the Bernoulli keep head's draws): elsewhere block by block."""
        own = type(self) is PolicyModule and self.categorical
        self.generators = ReadAhead(generators, torch.rand) if own else list(generators)

    def plan(self, steps: int, rows: int) -> None:
        """The next ``steps`` calls play ``rows`` rows (every member's): their draws are read ahead,
        and nothing beyond them (a member's generator draws its minibatch orders next)."""
        if not isinstance(self.generators, ReadAhead):
            return
        if self.generators.held:
            raise RuntimeError(f"the last batch left {self.generators.held} drawn values unused a member")
        per_row = N_KEEPS + N_BOXES  # the action noise of both heads
        shape = getattr(self.net, "dropout_shape", None)
        if self.record_dropout and not self.deterministic and shape:
            per_row += math.prod(shape)
        self.generators.allow(steps * rows // len(self.generators) * per_row)

    def set_capture(self, capture: str) -> None:
        """How a step's forward pass and sampling run: eagerly (``none``), compiled (``compile``) or
        replayed as a CUDA graph (``cudagraphs``; ``env.games.CAPTURES``). The masks and the noise
        are drawn before, outside the compiled code: fresh at every replay."""
        self.capture = capture
        self._act = captured(self._act_eagerly, capture)

    @property
    def categorical(self) -> bool:
        """Whether the network's keep head is the categorical one (the sampling this class does itself)."""
        return getattr(self.net, "config", {}).get("roll_head", "categorical") == "categorical"

    @staticmethod
    def observation(td: TensorDictBase) -> dict[str, torch.Tensor]:
        """The step's observation as a dict of its top-level tensors (any of which a feature may read)."""
        return {k: v for k, v in td.items() if isinstance(v, torch.Tensor) and k not in ("done", "terminated")}

    def _act_eagerly(
        self, obs: dict[str, torch.Tensor], mask: torch.Tensor | None, noise: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """A step's arithmetic (what ``capture`` compiles): the fixed features, the forward pass and
        the sampling, from the observation's tensors and the drawn masks and noise."""
        features = self.net.fixed_features(obs)
        roll_logits, box_logits, value = self.net(obs, features) if mask is None else self.net(obs, features, mask)
        keep, box, log_prob = self.sample(obs[K.ROLL], roll_logits, box_logits, noise)
        return keep, box, log_prob, value, features

    def action_noise(self, rows: int, device: torch.device) -> torch.Tensor:
        """``(rows, 32 + 13)`` uniform draws for the two heads' Gumbel noise (:func:`uniform_noise`)."""
        return uniform_noise((rows, N_KEEPS + N_BOXES), device, self.generators)

    def sample(
        self, roll: torch.Tensor, roll_logits: torch.Tensor, box_logits: torch.Tensor, noise: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(keep, box, log_prob)`` of the categorical heads as :class:`TurnDistribution` gives them
        (its mode, or a sample of the same law, and the roll-gated log-probability), on the
        cheapest path: one noise draw for both heads (``noise``, or drawn here), no distribution
        objects. The sample is the Gumbel-max trick: the argmax of ``log p - log(-log U)`` over
        each head's row (uniform draws and two logs cost a seventh of ``multinomial`` here)."""
        safe = torch.where(torch.isinf(box_logits).all(-1, keepdim=True), 0.0, box_logits)
        keep_lp, box_lp = _normalized(roll_logits), _normalized(safe)
        if self.deterministic:
            scores = torch.cat([roll_logits, box_logits], -1)
        else:
            if noise is None:
                noise = self.action_noise(roll.shape[0], roll.device)
            scores = _gumbel(torch.cat([keep_lp, box_lp], -1), noise)
        keep, box = scores[..., :N_KEEPS].argmax(-1), scores[..., N_KEEPS:].argmax(-1)
        keep_chosen = keep_lp.gather(-1, keep.unsqueeze(-1)).squeeze(-1)
        box_chosen = box_lp.gather(-1, box.unsqueeze(-1)).squeeze(-1)
        return keep, box, torch.where(roll < N_ROLLS - 1, keep_chosen, box_chosen)

    def choose(self, td: TensorDictBase, dist: TurnDistribution) -> tuple[torch.Tensor, torch.Tensor]:
        """The action played: the network's own (a subclass may label ``td`` or mix in a teacher)."""
        return dist.mode if self.deterministic else dist.sample(generators=self.generators)


class NetworkHeads(TensorDictModuleBase):
    """The network as a TensorDict module: writes the two heads' logits and ``state_value``."""

    def __init__(self, net: PolicyValueNet) -> None:
        super().__init__()
        self.net = net
        self.in_keys = list(OBS_KEYS)
        self.out_keys = [ROLL_LOGITS, BOX_LOGITS, VALUE]

    def forward(self, td: TensorDictBase) -> TensorDictBase:
        roll_logits, box_logits, value = self.net(td)
        return td.update({ROLL_LOGITS: roll_logits, BOX_LOGITS: box_logits, VALUE: value.unsqueeze(-1)})


def make_actor(net: PolicyValueNet) -> ProbabilisticActor:
    """TorchRL's ``ProbabilisticActor`` over the network: writes ``("action", "keep")``,
    ``("action", "box")`` and their roll-gated ``sample_log_prob``."""
    return ProbabilisticActor(
        NetworkHeads(net),
        in_keys=[ROLL_LOGITS, BOX_LOGITS, K.ROLL],
        out_keys=[K.KEEP, K.BOX],
        distribution_class=TurnDistribution,
        return_log_prob=True,
        log_prob_keys=[LOG_PROB],  # one log-prob for the pair: the roll-gated one
        default_interaction_type=InteractionType.RANDOM,
    )


def make_critic(net: PolicyValueNet) -> NetworkHeads:
    """The value operator (TorchRL's critic): ``state_value`` of shape ``(..., 1)``."""
    return NetworkHeads(net)
