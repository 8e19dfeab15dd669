"""A batched TorchRL environment over the rules engine."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Binary, Bounded, Categorical, Composite, Unbounded
from torchrl.envs import EnvBase

from ..game import BOX_NAMES, N_BOXES, N_DICE, N_KEEPS, OPEN, GameState, Rules, card_total, engine, legal_mask
from ..game.rules import N_ROLLS
from . import keys as K

TASKS = ("full_game", "single_turn")
KEEP_FORMATS = ("pattern", "bits")
START_CARDS = ("empty", "random")


def _choice(name: str, value: str, options: tuple[str, ...]) -> str:
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


class LegalCategorical(Categorical):
    """TorchRL's ``Categorical`` spec whose ``mask`` is the live set of legal actions, shared by its clones.

    TorchRL's ``RandomPolicy`` (and so ``Collector(env, policy=None)``) samples from a clone of the
    env's action spec taken once, when it is made; a plain ``Categorical``'s clone keeps a copy of
    the mask of that moment, and plays filled boxes a step later. Here :meth:`update_mask` writes
    into one mask tensor in place and :meth:`clone` shares that tensor, so every clone (the env's,
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
    """The raw-state observation of a batch of games (any batch shape), with its masks.

    ``score`` (the card's total) and ``keep_mask`` (every keep is always legal) may be passed in
    by a caller that keeps them, to save recomputing them every step.
    """
    shape = state.dice_idx.shape
    device = state.card.device
    if keep_mask is None:
        keep_mask = torch.ones(*shape, N_KEEPS, dtype=torch.bool, device=device)
    return TensorDict(
        {
            K.DICE: state.dice,
            K.CARD: state.card,
            K.ROLL: state.roll,
            K.TURN: state.turn,
            K.YAHTZEE_BONUSES: state.yahtzee_bonuses,
            K.SCORE: card_total(state.card, state.yahtzee_bonuses) if score is None else score,
            K.KEEP_MASK: keep_mask,
            K.BOX_MASK: box_mask,
        },
        batch_size=shape,
        device=state.card.device,
    )


class YahtzeeEnv(EnvBase):
    """``num_envs`` games of solitaire Yahtzee stepped together on one device.

    Each step is one decision: the keep choice while ``roll < 2``, the box when ``roll == 2``;
    the action TensorDict carries both and the env uses the one the roll index calls for.
    Observations are the raw state plus legal-action masks; features for networks come from
    :mod:`yahtzee_lightning.env.features`. The action spec's masks follow the state
    (:class:`LegalCategorical`), so ``env.rand_action``, ``env.rollout(n)`` without a policy,
    TorchRL's ``RandomPolicy(env.action_spec)`` and ``Collector(env, policy=None)`` only take legal
    actions; ``keep_mask`` and ``box_mask`` serve TorchRL's ``ActionMask`` transform and
    ``MaskedCategorical`` as they are.

    Args:
        num_envs: games in the batch (>= 1).
        task: ``full_game`` (all boxes, 3 steps a turn) or ``single_turn`` (3 steps from a
            start card drawn by ``start_card``).
        rules: a :class:`~yahtzee_lightning.game.Rules` or a dict of its fields.
        keep_format: ``pattern`` (one of 32) or ``bits`` (5 keep bits).
        start_card: ``empty`` or ``random`` (a random partly filled card); single turn only
            uses it unless ``task == "full_game"`` and it is ``empty``.
        validate_actions: raise on an illegal box, an out-of-range action or a non-integer (float,
            NaN) action (costs a sync). The slot a step does not use (the box while rolling, the
            keep when scoring) is ignored, whatever it holds.
        compile: (TorchRL's own keyword) compile ``step_and_maybe_reset`` with ``torch.compile``;
            on the CPU it does not pay (BENCHMARKS.md).
        device: where games, tables and outputs live.
        seed: seeds the env's own generator; a list of K seeds gives each of K equal blocks of
            games its own generator (the games of an ensemble's members: a member's dice do not
            depend on the others' seeds; one seed in a list plays as that seed alone).
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
    ) -> None:
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be an int >= 1, got {num_envs!r}")
        if isinstance(seed, Sequence) and (not seed or num_envs % len(seed)):
            raise ValueError(f"a list of seeds splits the games in equal blocks: {num_envs} games, {len(seed)} seeds")
        super().__init__(device=torch.device(device), batch_size=torch.Size([num_envs]))
        self.task = _choice("task", task, TASKS)
        self.keep_format = _choice("keep_format", keep_format, KEEP_FORMATS)
        self.start_card = _choice("start_card", start_card, START_CARDS)
        self.rules = rules if isinstance(rules, Rules) else Rules.from_dict(rules)
        self.validate_actions = validate_actions
        self._generator: torch.Generator | list[torch.Generator]
        if isinstance(seed, Sequence):
            self._generator = [torch.Generator(device=self.device).manual_seed(s) for s in seed]
        else:
            self._generator = torch.Generator(device=self.device)
            self._generator.manual_seed(int(torch.empty((), dtype=torch.int64).random_()) if seed is None else seed)
        self._make_specs()
        # The shape a keep action must have (checked every step, always: a cheap comparison).
        bits = self.keep_format == "bits"
        self._keep_shape = torch.Size([*self.batch_size, N_DICE]) if bits else self.batch_size
        self._state: GameState | None = None
        self._score: torch.Tensor | None = None  # each game's total, kept up to date by its rewards
        # Every keep is always legal: one all-True mask, shared by every observation (never written).
        self._keep_mask = torch.ones(*self.batch_size, N_KEEPS, dtype=torch.bool, device=self.device)

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
        if seed is None:
            seed = int(torch.empty((), dtype=torch.int64).random_())
        for i, g in enumerate(self._generator if isinstance(self._generator, list) else [self._generator]):
            g.manual_seed(seed + i)

    # ------------------------------------------------------------------ state
    def _start_states(self) -> GameState:
        shape = tuple(self.batch_size)
        card = None
        if self.start_card == "random":
            card = engine.random_partial_cards(shape, self.rules, self.device, self._generator)
        return engine.new_games(shape, self.rules, self.device, self._generator, card=card)

    def _observe(self, state: GameState, box_mask: torch.Tensor, score: torch.Tensor | None = None) -> TensorDict:
        """The observation of ``state``; the action spec's box mask follows it (keeps are always legal)."""
        self._box_spec.update_mask(box_mask)
        return observe(state, box_mask, score, self._keep_mask)

    @property
    def state(self) -> GameState:
        """The current games (after ``reset``)."""
        if self._state is None:
            raise RuntimeError("call reset() before reading the state")
        return self._state

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase:
        fresh = self._start_states()
        reset = None if tensordict is None else tensordict.get("_reset", None)
        if reset is not None and self._state is not None:
            fresh = fresh.where(reset.reshape(self.batch_size), self._state)
        score = fresh.score
        self._state, self._score = fresh, score
        out = self._observe(fresh, legal_mask(fresh.dice_idx, fresh.card, self.rules), score)
        done = torch.zeros(*self.batch_size, 1, dtype=torch.bool, device=self.device)
        out.set(K.DONE, done)
        out.set(K.TERMINATED, done.clone())
        return out

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        state = self.state
        rolling = state.roll < N_ROLLS - 1
        keep = self._action(tensordict, K.KEEP, rolling)
        box = self._action(tensordict, K.BOX, ~rolling)
        if keep.shape != self._keep_shape or box.shape != self.batch_size:
            self._raise_shape(keep, box)
        if self.validate_actions:
            self._check_dtypes(keep, box)
        if self.keep_format == "bits":
            keep = engine.keep_bits_to_pattern(keep)
        if self.validate_actions:
            self._check_range(keep, box, state)
        box = torch.where(rolling, 0, box)  # the unused slot is ignored, whatever it holds
        result = engine.step(state, keep, box, self.rules, self._generator)
        if self.validate_actions and not bool(result.legal.all()):
            self._raise_illegal(state, box, result.legal)
        next_state = result.state
        done = result.game_over
        if self.task == "single_turn":
            done = done | (state.roll == N_ROLLS - 1)
        self._state = next_state
        self._score = self._score + result.reward
        legal = legal_mask(next_state.dice_idx, next_state.card, self.rules)
        out = self._observe(next_state, legal, self._score)
        out.set(K.REWARD, result.reward.to(torch.float32).unsqueeze(-1))
        out.set(K.DONE, done.unsqueeze(-1))
        out.set(K.TERMINATED, done.unsqueeze(-1).clone())
        return out

    # ------------------------------------------------------------- bad input
    def _action(self, tensordict: TensorDictBase, key: tuple[str, str], needed: torch.Tensor) -> torch.Tensor:
        """The action entry ``key``; it may be left out only when no game needs it this step."""
        value = tensordict.get(key, None)
        if value is not None:
            return value
        if bool(needed.any()):
            i = int(needed.nonzero()[0, 0])
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

    def _check_range(self, keep: torch.Tensor, box: torch.Tensor, state: GameState) -> None:
        rolling = state.roll < N_ROLLS - 1
        bad_keep = rolling & ((keep < 0) | (keep >= N_KEEPS))
        bad_box = ~rolling & ((box < 0) | (box >= N_BOXES))
        if bool(bad_keep.any()):
            i = int(bad_keep.nonzero()[0, 0])
            raise ValueError(f"game {i}: keep pattern {int(keep[i])} is out of range 0..{N_KEEPS - 1}")
        if bool(bad_box.any()):
            i = int(bad_box.nonzero()[0, 0])
            raise ValueError(f"game {i}: box {int(box[i])} is out of range 0..{N_BOXES - 1}")

    def _raise_illegal(self, state: GameState, box: torch.Tensor, legal: torch.Tensor) -> None:
        i = int((~legal).nonzero()[0, 0])
        b = int(box.reshape(-1)[i])
        why = "is already filled" if int(state.card[i, b]) != OPEN else "is barred by the forced joker rule"
        dice = state.dice[i].tolist()
        raise ValueError(f"game {i}: illegal box {b} ({BOX_NAMES[b]}) for dice {dice}: it {why}")
