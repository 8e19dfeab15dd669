"""A batched TorchRL environment over the rules engine."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Binary, Bounded, Categorical, Composite, Unbounded
from torchrl.envs import EnvBase

from ..game import N_BOXES, N_DICE, N_KEEPS, OPEN, GameState, Rules, engine
from ..game.rules import N_ROLLS
from . import keys as K
from .games import Games, choice, observation

KEEP_FORMATS = ("pattern", "bits")


class LegalCategorical(Categorical):
    """TorchRL's ``Categorical`` spec whose ``mask`` is the live set of legal actions, shared by its clones.

    TorchRL's ``RandomPolicy`` (and so ``Collector(env, policy=None)``) samples from a clone of the
    env's action spec taken once, when it is made; a plain ``Categorical``'s clone keeps a copy of
    the mask of that moment, and plays filled boxes a step later. Here ``update_mask`` writes
    into one mask tensor in place and ``clone`` shares that tensor, so every clone (the env's,
    a policy's, a ``TransformedEnv``'s, which TorchRL's ``ActionMask`` transform updates) samples
    what is legal now. A row with no legal action (a finished game, whose action is never used)
    samples any. ``to(device)`` gives an unshared all-legal spec, as TorchRL's ``Categorical`` drops
    its mask there.
    """

    def __init__(
        self,
        n: int,
        shape: torch.Size | tuple[int, ...] | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.int64,
        mask: torch.Tensor | None = None,
    ) -> None:
        super().__init__(n, shape=shape, device=device, dtype=dtype, mask=mask)

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Write ``mask`` (None: everything legal) into the shared mask, in place: no new tensor, no sync."""
        current = getattr(self, "mask", None)
        if current is None:  # from __init__: the one tensor every clone will share
            super().update_mask(torch.ones(*self.shape, self.n, dtype=torch.bool, device=self.device))
            self.mask = self.mask.clone()  # a buffer of its own, not an expanded view
            current = self.mask
        if mask is None:
            current.fill_(True)
            return
        mask = torch.as_tensor(mask, dtype=torch.bool, device=current.device)
        current.copy_(mask | ~mask.any(-1, keepdim=True))

    def clone(self) -> LegalCategorical:
        out = self.__class__(n=self.space.n, shape=self.shape, device=self.device, dtype=self.dtype)
        out.mask = self.mask  # shared: the clone follows the game
        return out


def observe(
    state: GameState,
    box_mask: torch.Tensor,
    score: torch.Tensor | None = None,
    keep_mask: torch.Tensor | None = None,
) -> TensorDict:
    """``observation`` as a TensorDict with the games' batch shape."""
    return TensorDict(
        observation(state, box_mask, score, keep_mask), batch_size=state.dice_idx.shape, device=state.card.device
    )


class YahtzeeEnv(EnvBase):
    """``num_envs`` games of solitaire Yahtzee stepped together on one device.

    Each step is one decision: the keep choice while ``roll < 2``, the box when ``roll == 2``;
    the action TensorDict carries both and the env uses the one the roll index calls for.
    Observations are the raw state plus legal-action masks; features for networks come from
    ``yahtzee_lightning.env.features``. The action spec's masks follow the state
    (``LegalCategorical``), so ``env.rand_action``, ``env.rollout(n)`` without a policy,
    TorchRL's ``RandomPolicy(env.action_spec)`` and ``Collector(env, policy=None)`` only take legal
    actions; ``keep_mask`` and ``box_mask`` serve TorchRL's ``ActionMask`` transform and
    ``MaskedCategorical`` as they are.

    Args:
        num_envs: games in the batch (>= 1).
        task: ``full_game`` (all boxes, 3 steps a turn) or ``single_turn`` (3 steps from a
            start card drawn by ``start_card``).
        rules: a ``Rules`` or a dict of its fields.
        keep_format: ``pattern`` (one of 32) or ``bits`` (5 keep bits).
        start_card: ``empty``, ``random`` (a random partly filled card) or, single turn only,
            ``own_play`` (each episode the next turn of the card the games' own play left,
            staggered over the turns at the start; a full card starts a new game).
        validate_actions: raise on an illegal box, an out-of-range action or a non-integer (float,
            NaN) action (costs a sync). The slot a step does not use (the box while rolling, the
            keep when scoring) is ignored, whatever it holds.
        compile: (TorchRL's own keyword) compile ``step_and_maybe_reset`` with ``torch.compile``;
            on the CPU it does not pay (BENCHMARKS.md).
        device: where games, tables and outputs live.
        seed: seeds the env's own generator; a list of K seeds gives each of K equal blocks of
            games its own generator (the games of an ensemble's members: a member's dice do not
            depend on the others' seeds; one seed in a list plays as that seed alone).
        capture: ``none``, ``compile`` (the step's arithmetic as one compiled function) or
            ``cudagraphs`` (that function replayed as a CUDA graph; CUDA only): see
            ``CAPTURES``. The same games for the same seed.
    """

    batch_locked = True

    def __init__(
        self,
        num_envs: int = 1,
        *,
        task: str = "full_game",
        rules: Rules | dict | None = None,
        keep_format: str = "pattern",
        start_card: str = "empty",
        validate_actions: bool = True,
        device: torch.device | str = "cpu",
        seed: int | Sequence[int] | None = None,
        capture: str = "none",
    ) -> None:
        games = Games(
            num_envs,
            task=task,
            rules=rules,
            start_card=start_card,
            validate_actions=validate_actions,
            device=device,
            seed=seed,
            capture=capture,
        )
        super().__init__(device=games.device, batch_size=torch.Size([num_envs]))
        self.games = games
        self.task, self.start_card, self.rules = games.task, games.start_card, games.rules
        self.keep_format = choice("keep_format", keep_format, KEEP_FORMATS)
        self._make_specs()
        # The shape a keep action must have (checked every step, always: a cheap comparison).
        bits = self.keep_format == "bits"
        self._keep_shape = torch.Size([*self.batch_size, N_DICE]) if bits else self.batch_size

    @property
    def validate_actions(self) -> bool:
        return self.games.validate_actions

    @validate_actions.setter
    def validate_actions(self, value: bool) -> None:
        self.games.validate_actions = value

    @property
    def _generator(self) -> torch.Generator | list[torch.Generator]:
        return self.games.generator

    # ----------------------------------------------------------------- specs
    def _make_specs(self) -> None:
        n, dev = self.batch_size, self.device
        long = torch.int64
        self.observation_spec = Composite(
            {
                K.DICE: Bounded(1, 6, shape=(*n, N_DICE), dtype=long, device=dev),
                K.CARD: Bounded(OPEN, 50, shape=(*n, N_BOXES), dtype=long, device=dev),
                K.ROLL: Bounded(0, N_ROLLS - 1, shape=n, dtype=long, device=dev),
                K.TURN: Bounded(0, N_BOXES, shape=n, dtype=long, device=dev),
                K.YAHTZEE_BONUSES: Bounded(0, N_BOXES, shape=n, dtype=long, device=dev),
                K.SCORE: Bounded(0, 1575, shape=n, dtype=long, device=dev),
                K.KEEP_MASK: Binary(N_KEEPS, shape=(*n, N_KEEPS), dtype=torch.bool, device=dev),
                K.BOX_MASK: Binary(N_BOXES, shape=(*n, N_BOXES), dtype=torch.bool, device=dev),
            },
            shape=n,
            device=dev,
        )
        if self.keep_format == "pattern":  # every keep is always legal: a mask, all True, as TorchRL's tools expect
            keep_spec = LegalCategorical(N_KEEPS, shape=n, dtype=long, device=dev)
        else:
            keep_spec = Binary(N_DICE, shape=(*n, N_DICE), dtype=torch.bool, device=dev)
        box_spec = LegalCategorical(N_BOXES, shape=n, dtype=long, device=dev)
        self._box_spec = box_spec  # its mask follows the games (_observe)
        self.action_spec = Composite(
            {K.ACTION: Composite(keep=keep_spec, box=box_spec, shape=n, device=dev)}, shape=n, device=dev
        )
        self.reward_spec = Unbounded(shape=(*n, 1), dtype=torch.float32, device=dev)

    # ---------------------------------------------------------------- seeding
    def _set_seed(self, seed: int | None) -> None:
        self.games.seed(seed)

    # ------------------------------------------------------------------ state
    @property
    def state(self) -> GameState:
        """The current games (after ``reset``)."""
        return self.games.current()

    def _wrap(self, obs: dict[str, torch.Tensor]) -> TensorDict:
        """The games' observation as a TensorDict; the action spec's box mask follows it."""
        self._box_spec.update_mask(obs[K.BOX_MASK])
        return TensorDict(obs, batch_size=self.batch_size, device=self.device)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase:
        reset = None if tensordict is None else tensordict.get("_reset", None)
        out = self._wrap(self.games.reset(None if reset is None else reset.reshape(self.batch_size)))
        done = torch.zeros(*self.batch_size, 1, dtype=torch.bool, device=self.device)
        out.set(K.DONE, done)
        out.set(K.TERMINATED, done.clone())
        return out

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        keep = self._action(tensordict, K.KEEP, lambda roll: roll < N_ROLLS - 1)
        box = self._action(tensordict, K.BOX, lambda roll: roll == N_ROLLS - 1)
        if keep.shape != self._keep_shape or box.shape != self.batch_size:
            self._raise_shape(keep, box)
        if self.validate_actions:
            self._check_dtypes(keep, box)
        if self.keep_format == "bits":
            keep = engine.keep_bits_to_pattern(keep)
        obs, reward, done = self.games.step(keep, box)
        out = self._wrap(obs)
        out.set(K.REWARD, reward.to(torch.float32).unsqueeze(-1))
        out.set(K.DONE, done.unsqueeze(-1))
        out.set(K.TERMINATED, done.unsqueeze(-1).clone())
        return out

    # ------------------------------------------------------------- bad input
    def _action(
        self, tensordict: TensorDictBase, key: tuple[str, str], needed: Callable[[torch.Tensor], torch.Tensor]
    ) -> torch.Tensor:
        """The action entry ``key``; it may be left out only when no game needs it this step
        (``needed(roll)``, asked only then)."""
        value = tensordict.get(key, None)
        if value is not None:
            return value
        need = needed(self.state.roll)
        if bool(need.any()):
            i = int(need.nonzero()[0, 0])
            raise KeyError(f"the action has no {key!r} entry, but game {i} needs it this step")
        shape = self._keep_shape if key == K.KEEP else self.batch_size
        return torch.zeros(shape, dtype=torch.int64, device=self.device)

    def _raise_shape(self, keep: torch.Tensor, box: torch.Tensor) -> None:
        """A keep or box of another shape than the spec's: refused, never broadcast or reinterpreted."""
        for name, value, want in (("keep", keep, self._keep_shape), ("box", box, self.batch_size)):
            if value.shape != want:
                raise ValueError(f"the {name} action has shape {tuple(value.shape)}; it must be {tuple(want)}")

    def _check_dtypes(self, keep: torch.Tensor, box: torch.Tensor) -> None:
        """Actions are indices: a float (or NaN) is refused, never truncated into another action."""
        for name, value in (("keep", keep), ("box", box)):
            bits = name == "keep" and self.keep_format == "bits"
            if value.dtype.is_floating_point or value.dtype.is_complex or (value.dtype == torch.bool and not bits):
                nan = " (it holds NaN)" if value.dtype.is_floating_point and bool(value.isnan().any()) else ""
                want = "bool or integer" if bits else "integer"
                raise TypeError(f"the {name} action has dtype {value.dtype}{nan}; it must be {want}")
