"""Collection: the games of each update, played inside the training step with the current weights.

A mixin of ``OnPolicyAlgorithm`` with the loaders that
drive Lightning's loops (the data itself is played in ``training_step``, see ``base.py``).
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase
from torch.utils.data import DataLoader, IterableDataset
from torchrl.envs.utils import ExplorationType, set_exploration_type

from ..env import YahtzeeEnv
from ..game.rules import N_ROLLS
from ..nn import WHOLE_TURNS, PolicyModule, eval_mode

if TYPE_CHECKING:
    from .host import CollectionHost


class _Updates(IterableDataset):
    """The update indices left in the current interval (all of it, except in a run resumed from a
    checkpoint saved mid-interval); the data itself is played inside ``training_step``.

    Its length gives Lightning's progress bar a total and an ETA. (Iterable, not map-style: a
    distributed sampler would split the updates between ranks; one process reads it, so
    Lightning's warning about lengths under multi-process loading does not apply.)
    """

    def __init__(self, module: CollectionHost) -> None:
        self.module = module

    def _left(self) -> int:
        m, done = self.module, 0
        if m._trainer is not None:  # Lightning's restored progress: updates made in an unfinished interval
            progress = m.trainer.fit_loop.epoch_loop.batch_progress
            done = 0 if progress.is_last_batch else progress.current.processed
        # Never past the budget: a run resumed with a smaller budget than it started with may have
        # made more updates in its unfinished interval than the new intervals hold.
        return max(0, min(m.updates_per_epoch - done, m.total_updates - int(m.updates_done)))

    def __iter__(self):
        yield from range(self._left())

    def __len__(self) -> int:
        # The interval's full count: Lightning counts a resumed interval's updates from its restored
        # progress against it (and stops where ``__iter__`` stops).
        return self.module.updates_per_epoch


@dataclass
class _Players:
    """Collection's env and policy, and each member's generator (a single run's: one); held outside
    the module's registered children (and checkpoints)."""

    env: YahtzeeEnv
    policy: Any
    generators: list[torch.Generator]


def _mix(seed: int) -> int:
    """Another seed from ``seed`` (a generator's that is not the env's of the same run)."""
    return (seed * 6364136223846793005 + 1442695040888963407) % (1 << 63)


@contextlib.contextmanager
def as_default_generator(generator: torch.Generator) -> Iterator[None]:
    """``generator`` as its device's default generator inside the block (the randomness that takes
    no generator argument: dropout masks, ``randperm`` of minibatches), its state advanced by what
    the block drew; the default's own state as it was after the block. CPU and CUDA; on another
    device the default generator is used."""
    device = generator.device
    if device.type == "cpu":
        default = torch.default_generator
    elif device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        default = torch.cuda.default_generators[index]
    else:
        yield
        return
    saved = default.get_state()
    default.set_state(generator.get_state())
    try:
        yield
    finally:
        generator.set_state(default.get_state())
        default.set_state(saved)


class _Once(IterableDataset):
    def __iter__(self):
        yield 0

    def __len__(self) -> int:
        return 1


class Collection:
    """The env and policy that play a batch, and the batch played into one preallocated TensorDict."""

    def collection_policy(self) -> Any:
        """The TensorDict module that plays the games of a batch."""
        return PolicyModule(self.net)

    def env_seed(self, seed: int) -> int:
        """The collection env's seed for a run seeded ``seed``: per rank, and per resume point so
        that a resumed run does not replay its first games."""
        return seed + self.global_rank + 7919 * int(self.updates_done)

    def make_players(self, env: YahtzeeEnv, seeds: list[int]) -> _Players:
        """The collection's env and policy, with one generator per member of ``seeds`` (a single
        run: one): its action samples, minibatch orders and dropout masks, so that what a member
        draws depends on its own seed alone (not on how many members share the process)."""
        generators = [torch.Generator(device=self.device).manual_seed(_mix(self.env_seed(s))) for s in seeds]
        policy = self.collection_policy()
        if isinstance(policy, PolicyModule):
            policy.read_ahead(generators)
            policy.set_capture(self.hparams.capture)
            # It acts under dropout masks it draws and records; the update replays them (on-policy).
            policy.record_dropout = True
        return _Players(env, policy, generators)

    def own_generator(self) -> contextlib.AbstractContextManager:
        """The member's generator (a single run's) as the default one inside the block (its update)."""
        if self._players is None:
            return contextlib.nullcontext()
        k = getattr(self, "_member", None)
        k = k if isinstance(k, int) else 0
        return as_default_generator(self._players.generators[k])

    def make_env(self, num_envs: int, seed: int | list[int]) -> YahtzeeEnv:
        h = self.hparams
        if h.n_players >= 2:
            from ..env.multiplayer import MultiPlayerYahtzeeEnv

            return MultiPlayerYahtzeeEnv(
                num_envs,
                opponents=self.opponent(),
                n_players=h.n_players,
                reward=h.reward,
                learner_seat="random",
                rules=self.rules,
                validate_actions=False,
                device=self.device,
                seed=seed,
            )
        return YahtzeeEnv(
            num_envs,
            task=h.task,
            rules=self.rules,
            start_card=h.start_card,
            validate_actions=False,
            device=self.device,
            capture=h.capture,
            seed=seed,
        )

    @torch.no_grad()
    def collect(self) -> TensorDictBase:
        """A batch ``(games_per_batch, steps)`` of whole games played now with the current weights.

        The steps are written into the same preallocated TensorDict every update (``last_batch``),
        on the module's device: no copy to the host, no allocation per batch. A network with dropout
        plays under masks drawn for each step and kept in the batch (``dropout_mask``), which the
        update replays: it learns the policy that acted. (Eval mode, switched once for the rollout,
        is only the mode a step without a given mask would use.)

        The loop is TorchRL's ``env.rollout(steps, policy, break_when_any_done=False)`` (a test
        checks they give the same batch) without its check for finished games after every step,
        which reads ``done`` back to the host: here every game lasts exactly ``steps`` steps, so
        none ends before the batch does.
        """
        if self._players is None:
            env = self.make_env(self.hparams.games_per_batch, seed=self.env_seed(self.hparams.seed))
            self._players = self.make_players(env, [self.hparams.seed])
        steps = N_ROLLS * (1 if self.hparams.task == "single_turn" else self.rules.n_turns)
        env, policy = self._players.env, self._players.policy
        played = []
        # Each step's roll, where the policy takes it (it then runs only the head that acts).
        in_step = self.batch_rolls is not None and "roll" in inspect.signature(policy.forward).parameters
        if isinstance(policy, PolicyModule):
            policy.plan(steps, env.batch_size[0])  # the batch's masks and action noise, drawn ahead
        with set_exploration_type(ExplorationType.RANDOM), eval_mode(self.net):
            td = env.reset()
            for t in range(steps):
                played.append(env.step(policy(td, roll=t % N_ROLLS) if in_step else policy(td)))
                if t < steps - 1:
                    td = env.step_mdp(played[-1])
        self.last_batch = torch.stack(played, dim=1, out=self.last_batch)
        return self.last_batch

    @property
    def batch_rolls(self) -> str | None:
        """The rolls of a batch's steps, for the network (``PolicyValueNet.heads``), or None.

        A single player's games all start at roll 0 and every turn takes ``N_ROLLS`` steps, so at
        step ``t`` of a batch every game is at roll ``t % N_ROLLS``, and a batch's games (or any of
        them), flattened, are rows in whole turns (``WHOLE_TURNS``; a test holds this for every
        task, start card and rule variant). Other seatings: None (every head on every row)."""
        return WHOLE_TURNS if self.hparams.n_players == 1 else None

    def train_dataloader(self) -> DataLoader:
        warnings.filterwarnings("ignore", message="Your `IterableDataset` has `__len__` defined")  # see _Updates
        return DataLoader(_Updates(self), batch_size=None)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(_Once(), batch_size=None)

    def on_fit_end(self) -> None:
        self._players, self.last_batch = None, None
