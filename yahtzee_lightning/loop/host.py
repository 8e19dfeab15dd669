"""What each part of ``OnPolicyAlgorithm`` reads of the module it is part of.

The base class is composed of parts (this folder's ``settings.py``, ``collection.py``,
``diagnosis.py``, ``evaluation.py``, ``ensemble.py``, ``packed.py``; the algorithms'
``policy_gradient.py``), each a mixin that works on ``self``. What a
part uses of ``self`` beyond its own methods (Lightning's attributes, the base's state, another
part's methods) is listed here, once, as a ``Protocol`` named after the part: a reader of one part
sees what it needs from the others without reading them, and no part imports the base (which
imports every part). ``tests/algorithms/test_host.py`` reads each part's source and checks its
list: everything it uses is listed, nothing listed goes unused, and the base has all of it.
"""

from __future__ import annotations

from typing import Any, Protocol

import lightning as L
import torch
from lightning.fabric.utilities.data import AttributeDict
from tensordict import TensorDictBase

from ..game import Rules
from ..solver import TurnOracle


class Part(Protocol):
    """What every part reads: the settings (one member's, in an ensemble) and the network they train."""

    hparams: AttributeDict
    net: torch.nn.Module


class SettingsHost(Part, Protocol):
    """``Settings``: the budget reads the trainer (its world size) and the progress."""

    _trainer: L.Trainer | None
    trainer: L.Trainer
    updates_done: torch.Tensor


class CollectionHost(Part, Protocol):
    """``Collection`` and its loader of updates: the env is built on the module's
    device and rank, against the evaluation's opponent; the budget comes from the settings."""

    device: torch.device
    global_rank: int
    rules: Rules
    updates_done: torch.Tensor
    _players: Any  # collection's env and policy (``collection._Players``), None until first used
    last_batch: TensorDictBase | None
    _trainer: L.Trainer | None
    trainer: L.Trainer

    @property
    def total_updates(self) -> int: ...

    @property
    def updates_per_epoch(self) -> int: ...

    def opponent(self) -> Any: ...


class PolicyGradientHost(Part, Protocol):
    """``PolicyGradient``: a loss steps through
    ``optimizer_step`` (the single
    run's optimiser step, or every member's at once in a packed update), draws its minibatch
    orders through ``game_orders`` and tells the network its rows' rolls (``batch_rolls``)."""

    def optimizer_step(self, loss_fn: Any, *args: Any) -> dict[str, torch.Tensor]: ...

    @property
    def batch_rolls(self) -> str | None: ...

    @property
    def members_learning(self) -> int: ...

    def game_orders(self, games: int) -> torch.Tensor: ...


class DiagnosisHost(Part, Protocol):
    """``Diagnosis``: the oracle is built once per module, for its rules and device; a logging
    update's metrics read the progress, the policy's drift (``policy_gradient``) and Lightning's
    counters and loggers."""

    device: torch.device
    rules: Rules
    _oracles: dict[str, TurnOracle]
    _trainer: L.Trainer | None
    updates_done: torch.Tensor

    @property
    def world_size(self) -> int: ...

    def policy_drift(self, obs: TensorDictBase, old_log_prob: torch.Tensor) -> torch.Tensor: ...

    def log(self, name: str, value: Any, *args: Any, **kwargs: Any) -> None: ...

    def log_dict(self, dictionary: Any, *args: Any, **kwargs: Any) -> None: ...


class EvaluationHost(Part, Protocol):
    """``Evaluation``: evaluations log through Lightning and score with the oracle."""

    device: torch.device
    global_rank: int
    rules: Rules
    updates_done: torch.Tensor
    final_evaluation: Any  # the final evaluation's summary (a list of them in an ensemble), or None

    @property
    def world_size(self) -> int: ...

    def make_oracle(self, teacher: str = "auto") -> TurnOracle: ...

    def log(self, name: str, value: Any, *args: Any, **kwargs: Any) -> None: ...

    def log_dict(self, dictionary: Any, *args: Any, **kwargs: Any) -> None: ...


class EnsembleHost(Part, Protocol):
    """``Ensemble``: it builds, plays and logs each member with the single run's own
    methods, swapping the member's network and settings (Lightning's ``_hparams``) in and out."""

    _hparams: AttributeDict
    _trainer: L.Trainer | None
    trainer: L.Trainer
    global_rank: int
    updates_done: torch.Tensor
    _players: Any
    final_evaluation: Any

    @property
    def world_size(self) -> int: ...

    def validate_settings(self) -> None: ...

    def build_network(self) -> torch.nn.Module: ...

    def env_seed(self, seed: int) -> int: ...

    def make_env(self, num_envs: int, seed: int | list[int]) -> Any: ...

    def make_players(self, env: Any, seeds: list[int]) -> Any: ...

    def log_dict(self, dictionary: Any, *args: Any, **kwargs: Any) -> None: ...

    def check_packed_settings(self) -> None: ...

    def learn_network(self, batch: TensorDictBase) -> None: ...


class PackedHost(Part, Protocol):
    """``PackedUpdate``: a packed update works as each member (``as_member``) for its
    schedules and generators, on the ensemble's members and stacked forward pass, and steps the
    algorithm's own update and diagnosis."""

    members: Any  # the ensemble's networks (an ``nn.ModuleList``), None in a single run
    member_settings: list[dict[str, Any]] | None
    _stacked: Any  # the ensemble's stacked forward pass (``nn.ensemble.StackedNet``)
    device: torch.device
    updates_done: torch.Tensor
    training: bool
    logging_now: bool

    @property
    def world_size(self) -> int: ...

    @property
    def ensemble_size(self) -> int: ...

    @property
    def progress(self) -> float: ...

    def as_member(self, k: int) -> Any: ...

    def own_generator(self) -> Any: ...

    def optimizers(self, use_pl_optimizer: bool = True) -> Any: ...

    def logs_this_update(self) -> bool: ...

    def entropy_coefs(self, progress: float | None = None) -> tuple[float, float]: ...

    def gamma(self, progress: float | None = None) -> float: ...

    def lr_at(self, progress: float) -> float: ...

    def diagnose(self, batch: TensorDictBase) -> dict[str, Any]: ...

    def member_batch(self, batch: TensorDictBase, k: int) -> TensorDictBase: ...

    def update(self, batch: TensorDictBase, coefs: dict[str, Any]) -> dict[str, Any]: ...

    def log_update(self, batch: TensorDictBase, stats: dict[str, Any], coefs: dict[str, float], lr: float) -> None: ...

    def step_optimizer(self, loss: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...

    def _write_steps(self) -> None: ...

    def _log_bar(self, **kwargs: Any) -> dict[str, list[float]]: ...
