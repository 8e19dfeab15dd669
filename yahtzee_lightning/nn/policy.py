"""The turn policy as modules: the network's outputs as a ``TurnDistribution``, and the actors.

``make_actor`` and ``make_critic`` wrap the network as TorchRL's ``ProbabilisticActor``
and a value operator, so TorchRL's collectors, estimators and losses (``ClipPPOLoss``, ``GAE`` ...)
run on its TensorDicts as they are (see ``tests/nn/test_torchrl.py``). The algorithms collect
with ``PolicyModule`` (the same distribution on a cheaper path). In training it acts with
dropout masks it draws and records (``dropout_mask``), and the update replays them
(``as_played``): the network that learns is the one that acted.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, TensorDictModuleBase
from torchrl.modules import ProbabilisticActor

from ..env import keys as K
from ..env.games import captured
from ..game import N_BOXES, N_KEEPS
from ..game.engine import ReadAhead
from ..game.rules import N_ROLLS
from .distribution import TurnDistribution, gumbel, normalized, uniform_noise
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
    rolls: int | str | torch.Tensor | None = None,
) -> tuple[TurnDistribution, torch.Tensor]:
    """The policy and value of ``obs``; ``features``: its fixed features when the caller has them
    (a rollout's, see ``carried``); ``dropout_mask``: the masks to act under (see
    ``as_played``); ``rolls``: the rows' rolls where the caller knows them
    (``PolicyValueNet.heads``: each row runs only the head that acts there)."""
    roll_logits, box_logits, value = outputs(net, obs, features, dropout_mask, rolls)
    return TurnDistribution(roll_logits, box_logits, obs[K.ROLL]), value


def outputs(
    net: PolicyValueNet,
    obs: TensorDictBase | dict[str, torch.Tensor],
    features: torch.Tensor | None = None,
    dropout_mask: torch.Tensor | None = None,
    rolls: int | str | torch.Tensor | None = None,
    upper: bool = False,
) -> tuple[torch.Tensor, ...]:
    """The network's ``(roll_logits, box_logits, value)``, given only the arguments it was given
    (another network, a teacher's, need not take them): ``rolls`` reaches a network that reads
    them (``takes_rolls``) and is dropped for another, which computes every head. ``upper``: and
    its upper-score head's prediction, fourth (a ``PolicyValueNet`` built with one)."""
    if upper:
        return net(obs, features, dropout_mask, rolls if getattr(net, "takes_rolls", False) else None, upper=True)
    if rolls is not None and getattr(net, "takes_rolls", False):
        return net(obs, features, dropout_mask, rolls)
    if dropout_mask is not None:
        return net(obs, features, dropout_mask)
    return net(obs) if features is None else net(obs, features)


def as_played(
    net: PolicyValueNet, obs: TensorDictBase, rolls: int | str | torch.Tensor | None = None, upper: bool = False
) -> tuple[Any, ...]:
    """The policy and value of a rollout's steps under the network that chose their actions: its
    carried features and the dropout masks it acted with (none recorded: the network's mode). What
    every on-policy loss differentiates: at the update's first step its log-probabilities are those
    recorded when the games were played. ``rolls``: as ``distribution`` (a loss on whole games:
    ``WHOLE_TURNS``). ``upper``: the upper-score head's
    prediction third, from the same forward pass."""
    if not upper:
        return distribution(net, obs, carried(obs), obs.get(DROPOUT_MASK, None), rolls)
    roll_logits, box_logits, value, predicted = outputs(
        net, obs, carried(obs), obs.get(DROPOUT_MASK, None), rolls, upper=True
    )
    return TurnDistribution(roll_logits, box_logits, obs[K.ROLL]), value, predicted


def carried(obs: TensorDictBase) -> torch.Tensor | None:
    """The fixed features a rollout carries for ``obs`` (None where it carries none): for the
    update's own steps only, whose features ``PolicyModule`` wrote at the same step."""
    return obs.get(FEATURES, None)


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
        #: read ahead (``read_ahead``); None: the process's.
        self.generators: list[torch.Generator] | ReadAhead | None = None
        self.in_keys = list(OBS_KEYS)
        self.out_keys = [K.KEEP, K.BOX, LOG_PROB, VALUE, FEATURES, DROPOUT_MASK]

    @torch.no_grad()
    def forward(self, td: TensorDictBase, roll: int | None = None) -> TensorDictBase:
        """Act on ``td``'s games. ``roll``: the roll every game is at, where the caller knows it
        (training's collection, whose games move in step): the head that does not act is then not
        computed, and the other head's recorded action (which the game ignores) is a placeholder.
        The played actions, log-probabilities and values are those of ``roll`` None."""
        # The fixed features are computed here, once per step, and written for the update; so are
        # the dropout masks the step acts under (training's collection of a network with dropout).
        if roll is not None and not 0 <= roll < N_ROLLS:
            raise ValueError(f"roll must be 0..{N_ROLLS - 1}, got {roll!r}")
        rolls = None if roll is None else (0 if roll < N_ROLLS - 1 else N_ROLLS - 1)  # one graph a head
        fixed = getattr(self.net, "fixed_features", None)  # a network of our own; another computes its own
        mask = None
        if self.record_dropout and not self.deterministic and getattr(self.net, "dropout_shape", None):
            mask = self.net.draw_dropout_mask(td.shape[0], self.generators)
        if fixed is not None and self.categorical and type(self).choose is PolicyModule.choose:
            # The cheapest path, and the captured one: features, forward and sampling in one function.
            noise = None if self.deterministic else self.action_noise(td.shape[0], td.device)
            with eval_mode(self.net):
                keep, box, log_prob, value, features = self._act(self.observation(td), mask, noise, rolls)
        else:  # the Bernoulli keep head, a subclass's own choice, another network: through the distribution
            features = fixed(td) if fixed is not None else None
            with eval_mode(self.net):
                roll_logits, box_logits, value = outputs(self.net, td, features, mask, rolls)
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
        """Draw the members' masks and action noise ahead, a batch at a time (``plan``): one
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
        self,
        obs: dict[str, torch.Tensor],
        mask: torch.Tensor | None,
        noise: torch.Tensor | None,
        rolls: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """A step's arithmetic (what ``capture`` compiles, one graph for each ``rolls``): the fixed
        features, the forward pass and the sampling, from the observation's tensors, the drawn masks
        and noise and the games' roll where known (0: before the last roll, 2: at it)."""
        features = self.net.fixed_features(obs)
        roll_logits, box_logits, value = outputs(self.net, obs, features, mask, rolls)
        keep, box, log_prob = self.sample(obs[K.ROLL], roll_logits, box_logits, noise)
        return keep, box, log_prob, value, features

    def action_noise(self, rows: int, device: torch.device) -> torch.Tensor:
        """``(rows, 32 + 13)`` uniform draws for the two heads' Gumbel noise (``uniform_noise``)."""
        return uniform_noise((rows, N_KEEPS + N_BOXES), device, self.generators)

    def sample(
        self, roll: torch.Tensor, roll_logits: torch.Tensor, box_logits: torch.Tensor, noise: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(keep, box, log_prob)`` of the categorical heads as ``TurnDistribution`` gives them
        (its mode, or a sample of the same law, and the roll-gated log-probability), on the
        cheapest path: one noise draw for both heads (``noise``, or drawn here), no distribution
        objects. The sample is the Gumbel-max trick: the argmax of ``log p - log(-log U)`` over
        each head's row (uniform draws and two logs cost a seventh of ``multinomial`` here)."""
        safe = torch.where(torch.isinf(box_logits).all(-1, keepdim=True), 0.0, box_logits)
        keep_lp, box_lp = normalized(roll_logits), normalized(safe)
        if self.deterministic:
            scores = torch.cat([roll_logits, box_logits], -1)
        else:
            if noise is None:
                noise = self.action_noise(roll.shape[0], roll.device)
            scores = gumbel(torch.cat([keep_lp, box_lp], -1), noise)
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
