"""Many runs in one process: K independent members of one algorithm, trained as one ensemble.

``ensemble: K`` (members with seeds ``seed``, ``seed + 1``, ...), a list of per-member settings
(``[{seed: 0}, {seed: 1, lr: 0.001}]``: a member without a ``seed`` gets ``seed + k``), or a
mapping of per-member lists (``{lr: [0.001, 0.002]}``) turns a run into K members that share the
network's shape, the algorithm and the budget, and differ in their seed and in any scalar
setting of the loss and the optimiser given per member (``lr``, the entropy coefficients,
``gamma_*``, ``gae_lambda``, ``clip_eps``, ...; not the settings in ``SHARED_SETTINGS``).

What is shared is the cost of playing: one env holds the K x ``games_per_batch`` games, each
member's block of games drawn from its own generator (seeded with its seed), and one stacked
forward pass (``StackedNet``) plays every member's games
with its own weights. Everything else is the single run's code, run once per member with that
member as ``self.net`` and its settings as ``self.hparams`` (``Ensemble.as_member``): the
algorithm's loss, its schedules, its own Adam and learning-rate schedule (one optimiser per
member), gradient clipping, the diagnostics and the evaluations. So every algorithm built on
``OnPolicyAlgorithm`` gets an ensemble without code of its
own, and a member learns
as the single run with its settings would, independently of the others: its weights start from
its own seed, its games' dice come from its own generator, its action samples, minibatch orders
and dropout masks from another generator of its own (seeded from its seed, as a single run's),
and its update sees only its games; the stacked forward pass computes its rows as it would
compute them alone (``ensemble``). So a member's result is a function
of its own seed and settings: alone or among any others, it learns the same weights, to the bit
on one machine and thread count. A one-member ensemble is the single run with that seed (up to
float rounding: the single run's layers are not the stacked ones).

Logged per member under ``member_K/`` (``member_0/train/loss``, ``member_2/eval/mean_score``),
plus ``ensemble/eval_mean_score_{mean,min,max}`` at every evaluation. ``member_results()``
reads each member's settings and results back by index.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from lightning.fabric.utilities.data import AttributeDict
from tensordict import TensorDictBase
from torch import nn

from ..nn import PolicyValueNet
from ..nn.ensemble import StackedNet
from ..untrusted import check_count

#: Settings every member shares: one algorithm, one network shape (the stacked forward pass), one
#: env (the rules, the task and the batch), one budget and one evaluation protocol.
SHARED_SETTINGS = (
    "algorithm",
    "class_path",
    "task",
    "start_card",
    "joker",
    "yahtzee_bonus",
    "boxes",
    "games_per_batch",
    "total_games",
    "evaluations",
    "eval_games",
    "final_eval_games",
    "top_k",
    "n_players",
    "opponent",
    "eval_opponent",
    "reward",
    "init_from",
    "reset_value_head",
    "diagnose_games",
    "ensemble",
    "ensemble_update",
    "capture",
)

_ALL = "all"  # ``_member`` while the stacked network plays every member's games


def parse_members(spec: Any, base_seed: int) -> list[dict[str, Any]] | None:
    """The per-member overrides of an ``ensemble`` setting, one dict per member (None: a single run).

    Every member's dict has its ``seed``; the other keys are checked by ``Ensemble.build_ensemble``.
    """
    if spec is None:
        return None
    if isinstance(spec, bool) or not isinstance(spec, (int, list, dict)):
        raise ValueError(f"ensemble must be a member count, a list of per-member settings or a mapping, got {spec!r}")
    if isinstance(spec, int):
        members: list[dict[str, Any]] = [{} for _ in range(check_count("ensemble", spec))]
    elif isinstance(spec, dict):
        spec = dict(spec)
        size = spec.pop("size", None)
        lengths = {k: len(v) if isinstance(v, (list, tuple)) else None for k, v in spec.items()}
        if any(n is None for n in lengths.values()):
            bad = next(k for k, n in lengths.items() if n is None)
            raise ValueError(f"ensemble.{bad} must be a list of one value per member, got {spec[bad]!r}")
        k = size if size is not None else next(iter(lengths.values()), None)
        if k is None or isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"ensemble.size must be a member count >= 1, got {k!r}")
        check_count("ensemble", k)
        for key, n in lengths.items():
            if n != k:
                raise ValueError(f"ensemble.{key} has {n} values for {k} members")
        members = [{key: values[i] for key, values in spec.items()} for i in range(k)]
    else:
        if not spec:
            raise ValueError("ensemble must have at least one member, got []")
        check_count("ensemble", len(spec))
        if not all(isinstance(m, dict) for m in spec):
            bad = next(m for m in spec if not isinstance(m, dict))
            raise ValueError(f"ensemble members must be mappings of settings, got {bad!r}")
        members = [dict(m) for m in spec]
    return [{"seed": base_seed + i, **m} for i, m in enumerate(members)]


class Ensemble:
    """The ensemble's part of ``OnPolicyAlgorithm`` (see the
    module's docstring).

    ``self.members`` is None in a single run; in an ensemble an ``nn.ModuleList`` of the K
    networks, and ``self.net`` is the network of the member being worked on (member 0 outside
    ``as_member``). A subclass whose setting must be the same for every member (because the
    collection uses it) adds it to ``SHARED_SETTINGS``.
    """

    SHARED_SETTINGS: tuple[str, ...] = SHARED_SETTINGS
    members: nn.ModuleList | None
    member_settings: list[dict[str, Any]] | None
    _stacked: StackedNet | None = None  # the members' forward pass as one (an ensemble's, else None)

    # ----------------------------------------------------------------- building
    def build_ensemble(self) -> None:
        """Parse ``ensemble`` and build the members (after ``self.net``, which is built as a single
        run's would be and becomes the stacked forward pass's template); each member's settings are
        checked by ``validate_settings`` as the member's."""
        self.members, self._member, self._bar, self._steps = None, None, {}, {}
        self.last_evaluations: list[float | None] | None = None
        h = self.hparams
        self.member_settings = parse_members(h.ensemble, h.seed)
        if self.member_settings is None:
            return
        if not isinstance(self.net, PolicyValueNet):
            raise ValueError(f"ensemble stacks policy/value networks; {type(self).__name__} trains another kind")
        if h.n_players >= 2:
            raise ValueError("ensemble trains solitaire members (n_players 1); a match env has one opponent per game")
        shared = set(self.SHARED_SETTINGS) | set(getattr(self, "NETWORK_KEYS", ()))
        for i, settings in enumerate(self.member_settings):
            for key in settings:
                if key in shared:
                    why = "cannot differ between members (they share the algorithm, network, env and budget)"
                    raise ValueError(f"ensemble member {i}: {key} {why}")
                if key not in h:
                    raise ValueError(f"ensemble member {i}: {type(self).__name__} has no setting {key!r}")
        template, nets = self.net, []
        for i in range(len(self.member_settings)):
            with self.as_member(i):
                try:
                    self.validate_settings()
                except ValueError as e:
                    raise ValueError(f"ensemble member {i}: {e}") from None
                with torch.random.fork_rng(devices=[]):  # the member's own initial weights
                    torch.manual_seed(self.hparams.seed)
                    net = self.build_network()
                if h.init_from:  # every member starts from the given weights
                    net.load_state_dict(template.state_dict())
            nets.append(net)
        del self.net  # the template: no longer a registered (trained, saved) child
        self.members = nn.ModuleList(nets)
        object.__setattr__(self, "_stacked", StackedNet(template, len(nets)))
        object.__setattr__(self, "net", nets[0])
        self.check_packed_settings()

    @property
    def ensemble_size(self) -> int:
        """K, the number of members (1 in a single run)."""
        return 1 if self.members is None else len(self.members)

    def in_ensemble(self) -> bool:
        """Whether a method should run its ensemble version: an ensemble, outside any one member."""
        return self.members is not None and self._member is None

    @contextlib.contextmanager
    def as_member(self, k: int) -> Iterator[None]:
        """Member ``k`` as the module: its network as ``self.net``, its settings as ``self.hparams``,
        its optimiser and schedule from ``optimizers()`` / ``lr_schedulers()``, its metrics under
        ``member_k/``."""
        saved = (self.__dict__.get("net"), self._hparams, self._member)
        self._hparams = AttributeDict({**saved[1], **self.member_settings[k]})
        if self.members is not None:
            object.__setattr__(self, "net", self.members[k])
        self._member = k
        try:
            yield
        finally:
            self._hparams, self._member = saved[1], saved[2]
            if saved[0] is not None:
                object.__setattr__(self, "net", saved[0])

    @contextlib.contextmanager
    def _as_stacked(self) -> Iterator[StackedNet]:
        """The stacked network of the members' current weights as ``self.net`` (collection)."""
        saved = self.net
        stacked = self._stacked.load_(list(self.members))
        object.__setattr__(self, "net", stacked)
        self._member = _ALL
        try:
            yield stacked
        finally:
            object.__setattr__(self, "net", saved)
            self._member = None

    # ------------------------------------------------------------ Lightning
    def optimizers(self, use_pl_optimizer: bool = True) -> Any:
        opts = super().optimizers(use_pl_optimizer)
        return opts[self._member] if isinstance(self._member, int) and isinstance(opts, list) else opts

    def lr_schedulers(self) -> Any:
        scheds = super().lr_schedulers()
        return scheds[self._member] if isinstance(self._member, int) and isinstance(scheds, list) else scheds

    def log(self, name: str, value: Any, *args: Any, **kwargs: Any) -> None:
        """Inside a member: its metrics under ``member_k/``; bar-only values are kept for the members'
        mean, and an update's metrics (``on_step``) for one write of every member's (``_write_steps``)."""
        if not isinstance(self._member, int) or self.members is None:
            return super().log(name, value, *args, **kwargs)
        if kwargs.get("logger") is False:
            self._bar.setdefault(name, []).append(float(value))
        elif kwargs.get("on_step"):
            self._steps[f"member_{self._member}/{name}"] = float(value)
        else:
            super().log(f"member_{self._member}/{name}", value, *args, **kwargs)
        return None

    def _write_steps(self) -> None:
        """Every member's metrics of an update, in one call per logger, where Lightning would log
        them (``log_every_n_steps``). Lightning's ``self.log`` costs about 0.1 ms a value, and an
        ensemble of 8 logs some 250 values an update: a sixth of the update's time.

        Lightning has no public API for either thing this needs: whether this step is one it logs
        (``_logger_connector.should_update_logs``) and the step its own metrics carry
        (``fit_loop.epoch_loop._batches_that_stepped``; ``global_step`` counts every member's
        optimiser step). Both private, checked against lightning 2.6.6: tests/algorithms/
        test_ensemble.py fails loudly if an upgrade renames them or moves the rows' steps."""
        steps, self._steps = self._steps, {}
        trainer = self._trainer
        if not steps or trainer is None or not trainer.loggers:
            return
        step = lightning_log_step(trainer)
        if step is None:
            return
        for logger in trainer.loggers:
            logger.log_metrics({**steps, "epoch": trainer.current_epoch}, step=step)

    def _log_bar(self, **kwargs: Any) -> dict[str, list[float]]:
        """The members' bar-only values of the step just done: their mean on the progress bar."""
        bar, self._bar = self._bar, {}
        for name, values in bar.items():
            super().log(name, sum(values) / len(values), prog_bar=True, logger=False, batch_size=1, **kwargs)
        return bar

    def manual_backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """Inside a member under DDP: the member's gradients averaged over the ranks by hand (DDP's
        own reducer expects every parameter of the module, every member's, in every backward pass)."""
        if not isinstance(self._member, int) or self.world_size == 1:
            return super().manual_backward(loss, *args, **kwargs)
        with self.trainer.strategy.block_backward_sync():
            super().manual_backward(loss, *args, **kwargs)
        grads = [p.grad for p in self.net.parameters() if p.grad is not None]
        flat = self.trainer.strategy.reduce(torch.cat([g.reshape(-1) for g in grads]), reduce_op="mean")
        for g, v in zip(grads, flat.split([g.numel() for g in grads]), strict=True):
            g.copy_(v.view_as(g))
        return None

    # --------------------------------------------------------------- the loop
    def collect(self) -> TensorDictBase:
        """In an ensemble: the members' games, K blocks of ``games_per_batch`` (each from the
        member's own generator, seeded as its single run's env), played by the stacked network."""
        if not self.in_ensemble():
            return super().collect()
        with self._as_stacked():
            if self._players is None:
                seeds = [m["seed"] for m in self.member_settings]
                n = self.hparams.games_per_batch * self.ensemble_size
                env = self.make_env(n, seed=[self.env_seed(s) for s in seeds])
                self._players = self.make_players(env, seeds)
            return super().collect()

    def member_batch(self, batch: TensorDictBase, k: int) -> TensorDictBase:
        """Member ``k``'s games of an ensemble's batch."""
        n = self.hparams.games_per_batch
        return batch[k * n : (k + 1) * n]

    def learn_member_by_member(self, batch: TensorDictBase) -> None:
        """Each member's update (the host's ``learn_network``) on its own games, all at the same
        progress; then one update counted. (``ensemble_update: batched``: every member's at once,
        ``packed_learn`` in ``.packed``.)"""
        done = int(self.updates_done)
        for k in range(self.ensemble_size):
            with self.as_member(k):
                self.learn_network(self.member_batch(batch, k))
                self.updates_done.fill_(done)  # the next member's schedules see the same progress
        self.updates_done.fill_(done + 1)
        self._write_steps()
        self._log_bar(on_step=True)

    def ensemble_configure_optimizers(self, configure: Any) -> tuple[list, list]:
        """One Adam and one learning-rate schedule per member, each at the member's settings."""
        opts, scheds = [], []
        for k in range(self.ensemble_size):
            with self.as_member(k):
                out = configure()
            opts.append(out["optimizer"])
            scheds.append(out["lr_scheduler"])
        return opts, scheds

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        """In an ensemble: each member's evaluation, and the ensemble's summary of their scores."""
        if not self.in_ensemble():
            return super().validation_step(batch, batch_idx)
        for k in range(self.ensemble_size):
            with self.as_member(k):
                super().validation_step(batch, batch_idx)
        scores = self._log_bar().get("eval_score", [])
        if scores:
            self.last_evaluations = scores
            summary = {"mean": sum(scores) / len(scores), "min": min(scores), "max": max(scores)}
            self.log_dict({f"ensemble/eval_mean_score_{k}": v for k, v in summary.items()}, batch_size=1)

    def on_train_end(self) -> None:
        """In an ensemble: each member's final evaluation (``final_evaluation``: a list, one per member)."""
        if not self.in_ensemble():
            return super().on_train_end()
        results = []
        for k in range(self.ensemble_size):
            with self.as_member(k):
                if self.hparams.final_eval_games > 0 and self.global_rank == 0:
                    print(f"member {k} of {self.ensemble_size}:")
                super().on_train_end()
                results.append(self.final_evaluation)
        self.final_evaluation = results if any(r is not None for r in results) else None

    def member_results(self) -> list[dict[str, Any]]:
        """Per member, by index: its settings, its last evaluation's mean score and its final evaluation.

        A single run is a list of one (the study reads every run the same way).
        """
        k = self.ensemble_size
        final = self.final_evaluation
        finals = final if isinstance(final, list) else [final] * k
        last = self.last_evaluations or [None] * k
        settings = self.member_settings or [{"seed": self.hparams.seed}]
        return [
            {"member": i, "settings": settings[i], "last_eval_score": last[i], "final_evaluation": finals[i]}
            for i in range(k)
        ]

    def save_members(self, checkpoint: dict[str, Any]) -> None:
        """The members' settings and last evaluations in the checkpoint (for ``export --member``)."""
        if self.members is not None:
            checkpoint["yahtzee_lightning"]["members"] = [
                {"settings": s, "last_eval_score": (self.last_evaluations or [None] * len(self.members))[i]}
                for i, s in enumerate(self.member_settings)
            ]

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_load_checkpoint(checkpoint)
        members = checkpoint.get("yahtzee_lightning", {}).get("members")
        if members and self.members is not None:
            scores = [m.get("last_eval_score") for m in members]
            self.last_evaluations = scores if any(s is not None for s in scores) else None


def lightning_log_step(trainer: Any) -> int | None:
    """The step Lightning's own metrics carry now, or None where Lightning would not log this step.

    Lightning has no public API for either: both read private attributes, checked against
    lightning 2.6.6. ``tests/algorithms/test_ensemble.py`` (the one-write logging test) fails when
    a Lightning upgrade renames them or changes what they mean.
    """
    if not trainer._logger_connector.should_update_logs:
        return None
    return trainer.fit_loop.epoch_loop._batches_that_stepped
