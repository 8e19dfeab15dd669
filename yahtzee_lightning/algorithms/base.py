"""What every on-policy algorithm shares: collection, the update loop, schedules, metrics, evaluation.

A subclass defines only its loss (:meth:`OnPolicyAlgorithm.update`). Each training step first
collects a batch of ``games_per_batch`` whole games with the current weights (TorchRL's
``env.rollout`` into one preallocated rollout TensorDict, on the module's device), then learns
from it. Collecting inside the step, rather than in a data loader, keeps the algorithms on-policy:
Lightning fetches a loader's next batch before the current update, which would play it with the
weights of one update ago. One env per rank, seeded ``seed + rank``. One Lightning epoch is one
evaluation interval: the greedy policy plays ``eval_games`` full games in the validation loop,
and a checkpoint follows.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning as L
import torch
from tensordict import TensorDictBase
from torch.utils.data import DataLoader, IterableDataset
from torchrl.envs.utils import ExplorationType, set_exploration_type
from torchrl.objectives.value.functional import generalized_advantage_estimate

from ..env import YahtzeeEnv
from ..env import keys as K
from ..game import N_BOXES, N_KEEPS, Rules
from ..game.rules import N_ROLLS
from ..metrics import action_counts, approx_kl, explained_variance, mask_diversity, top_k_share
from ..nn import LOG_PROB, VALUE, PolicyModule, PolicyValueNet, distribution, eval_mode, transfer_weights
from ..schedules import anneal, lr_factor
from ..solver import TurnOracle, choice_regret, load_or_solve
from .ensemble import Ensemble


class _Updates(IterableDataset):
    """The update indices left in the current interval (all of it, except in a run resumed from a
    checkpoint saved mid-interval); the data itself is played inside ``training_step``.

    Its length gives Lightning's progress bar a total and an ETA. (Iterable, not map-style: a
    distributed sampler would split the updates between ranks; one process reads it, so
    Lightning's warning about lengths under multi-process loading does not apply.)
    """

    def __init__(self, module: OnPolicyAlgorithm) -> None:
        self.module = module

    def _left(self) -> int:
        m, done = self.module, 0
        if m._trainer is not None:  # Lightning's restored progress: updates made in an unfinished interval
            progress = m.trainer.fit_loop.epoch_loop.batch_progress
            done = 0 if progress.is_last_batch else progress.current.processed
        return max(0, m.updates_per_epoch - done)

    def __iter__(self):
        yield from range(self._left())

    def __len__(self) -> int:
        # The interval's full count: Lightning counts a resumed interval's updates from its restored
        # progress against it (and stops where ``__iter__`` stops).
        return self.module.updates_per_epoch


@dataclass
class _Players:
    """Collection's env and policy: held outside the module's registered children (and checkpoints)."""

    env: YahtzeeEnv
    policy: Any


class _Once(IterableDataset):
    def __iter__(self):
        yield 0

    def __len__(self) -> int:
        return 1


def masked_mean(x: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` over the entries where ``where`` holds (NaN where none does), without the
    device-to-host read of boolean indexing."""
    return (x * where).sum() / where.sum()


def read_stats(stats: dict[str, torch.Tensor | float]) -> dict[str, float]:
    """Metrics as floats, the tensors among them read from the device in one transfer."""
    tensors = {k: v for k, v in stats.items() if isinstance(v, torch.Tensor)}
    values = torch.stack([v.detach().float().reshape(()) for v in tensors.values()]).tolist() if tensors else []
    read = dict(zip(tensors, values, strict=True))
    return {k: read[k] if k in read else float(v) for k, v in stats.items()}


class OnPolicyAlgorithm(Ensemble, L.LightningModule):
    """Base of REINFORCE, A2C and PPO; hyperparameters: docs/hyperparameters.md.

    Task: ``task`` (full_game or single_turn), ``start_card`` (single turn: empty or random),
    ``joker``, ``yahtzee_bonus``, ``boxes``. Network: see :class:`PolicyValueNet`.
    Optimisation: Adam at ``lr`` with warm-up / hold / decay to ``r_alpha * lr``; gradient-norm
    clipping at ``tau_clip`` (0 = off); value-loss weight ``lambda_v``; entropy coefficients per
    head held at their max for ``entropy_hold`` of training then annealed to their min over
    ``entropy_anneal``; discount from ``gamma_min`` to ``gamma_max``. Budget: ``total_games``
    in batches of ``games_per_batch``, ``evaluations`` evaluation intervals of ``eval_games``
    games each, and a final evaluation of ``final_eval_games`` (0 = skip) against the optimum.
    ``init_from``: a Lightning checkpoint or an agent folder whose network weights start this run
    (transfer, or RL fine-tuning of a distilled agent); it may see fewer features than this run
    (features appended to its own start at zero weight). ``reset_value_head``: the value head's
    output starts at zero, for a fine-tune to a reward on another scale (win/loss, not points);
    ``value_lr_scale``: the value head's learning rate as a multiple of ``lr`` (Adam ignores the
    scale of ``lambda_v`` for parameters only the value loss reaches).
    ``diagnose_games``: games of each batch whose decisions the exact oracle scores, for the
    logged regret per keep and per box decision (0 = off); every interval the evaluation games
    are scored too, with the regret broken down by turn and by box.
    ``n_players`` >= 2 trains against ``opponent`` (random, greedy, optimal, an agent folder, or
    ``self``: the learner's own current policy, for self-play) in the N-player env
    with ``reward`` (win, margin, fixed_target, moving_target, score); use features that see the
    opponents (the ``two_player`` preset). ``eval_opponent``: whom the evaluations play (default:
    the training opponent; in self-play, where that would always be about half, ``optimal``).
    ``ensemble``: K members trained at once, each with its own seed and settings (:mod:`.ensemble`).
    """

    def __init__(
        self,
        task: str = "full_game",
        start_card: str = "empty",
        joker: str = "free",
        yahtzee_bonus: bool = True,
        boxes: list[int] | None = None,
        dice_encoder: str = "combined",
        features: str | list[str] = "full_game",
        d_h: int = 600,
        n_layers: int = 3,
        dropout: float = 0.1,
        layer_norm: bool = True,
        activation: str = "silu",
        head_hidden: int = 256,
        roll_head: str = "categorical",
        d_emb: int = 8,
        lr: float = 1e-4,
        r_alpha: float = 0.01,
        warmup: float = 0.05,
        hold: float = 0.70,
        tau_clip: float = 1.0,
        lambda_v: float = 0.01,
        normalize_advantage: bool = True,
        beta_roll_max: float = 0.02,
        beta_roll_min: float = 0.005,
        beta_score_max: float = 0.05,
        beta_score_min: float = 0.01,
        entropy_hold: float = 0.1,
        entropy_anneal: float = 0.8,
        gamma_min: float = 0.99,
        gamma_max: float = 0.99,
        total_games: int = 1_000_000,
        games_per_batch: int = 20,
        evaluations: int = 100,
        eval_games: int = 1000,
        final_eval_games: int = 10_000,
        top_k: int = 3,
        n_players: int = 1,
        opponent: str = "random",
        eval_opponent: str | None = None,
        reward: str = "win",
        init_from: str | None = None,
        reset_value_head: bool = False,
        value_lr_scale: float = 1.0,
        diagnose_games: int = 16,
        seed: int = 0,
        ensemble: int | list[dict[str, Any]] | dict[str, list[Any]] | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.validate_settings()
        self.automatic_optimization = False
        self.rules = Rules(joker=joker, yahtzee_bonus=yahtzee_bonus, boxes=tuple(boxes) if boxes else tuple(range(13)))
        self.net = self.build_network()
        if init_from:
            self._load_network(init_from)
        self.build_ensemble()
        self.register_buffer("updates_done", torch.zeros((), dtype=torch.int64))
        self._players: _Players | None = None  # env and policy of collection, built on first use
        self.last_batch: TensorDictBase | None = None  # the preallocated rollout, refilled every update
        self.final_evaluation: dict | None = None
        self._oracles: dict[str, TurnOracle] = {}  # the exact oracle(s), built on first use

    def validate_settings(self) -> None:
        """Refuse a bad setting when the module is built, naming it, rather than as a crash mid-run.

        The network's settings are checked by the network itself (built next). A subclass with
        settings of its own extends this (``super().validate_settings()`` first).
        """
        from ..env.multiplayer import REWARDS
        from ..env.yahtzee_env import START_CARDS, TASKS

        h = self.hparams

        def need(ok: bool, name: str, rule: str) -> None:
            if not ok:
                raise ValueError(f"{name} must be {rule}, got {h[name]!r}")

        for name, options in (("task", TASKS), ("start_card", START_CARDS), ("reward", REWARDS)):
            need(h[name] in options, name, f"one of {options}")
        for name in ("total_games", "games_per_batch", "evaluations", "eval_games", "top_k", "n_players"):
            need(isinstance(h[name], int) and h[name] >= 1, name, "an integer >= 1")
        need(isinstance(h.final_eval_games, int) and h.final_eval_games >= 0, "final_eval_games", ">= 0 (0: none)")
        need(isinstance(h.diagnose_games, int) and h.diagnose_games >= 0, "diagnose_games", ">= 0 (0: off)")
        need(isinstance(h.seed, int) and 0 <= h.seed < 2**32, "seed", "an integer in 0..2**32-1")
        need(h.lr > 0, "lr", "> 0")
        need(h.value_lr_scale > 0, "value_lr_scale", "> 0")
        unit = ("r_alpha", "warmup", "hold", "entropy_hold", "entropy_anneal", "gamma_min", "gamma_max", "gae_lambda")
        for name in unit:
            if name in h:  # gae_lambda: only the algorithms with GAE advantages have it
                need(0 <= h[name] <= 1, name, "in [0, 1]")
        for name in ("tau_clip", "lambda_v", "beta_roll_max", "beta_roll_min", "beta_score_max", "beta_score_min"):
            need(h[name] >= 0, name, ">= 0")
        if h.total_games < h.games_per_batch:
            raise ValueError(f"total_games ({h.total_games}) must be at least games_per_batch ({h.games_per_batch})")

    NETWORK_KEYS = (
        "dice_encoder",
        "features",
        "d_h",
        "n_layers",
        "dropout",
        "layer_norm",
        "activation",
        "head_hidden",
        "roll_head",
        "d_emb",
    )

    @classmethod
    def network_kwargs(cls, hparams: Any) -> dict[str, Any]:
        """The network's constructor arguments from the module's hyperparameters (also for export)."""
        boxes = hparams.get("boxes")
        rules = Rules(hparams.get("joker", "free"), hparams.get("yahtzee_bonus", True), tuple(boxes or range(13)))
        return {**{k: hparams[k] for k in cls.NETWORK_KEYS if k in hparams}, "rules": rules.to_dict()}

    def build_network(self) -> torch.nn.Module:
        """The trained network (``self.net``); subclasses with another kind of network override it."""
        return PolicyValueNet(**self.network_kwargs(self.hparams))

    def collection_policy(self) -> Any:
        """The TensorDict module that plays the games of a batch."""
        return PolicyModule(self.net)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        # What an exported agent's card says about its training.
        checkpoint["yahtzee_lightning"] = {
            "algorithm": type(self).__name__,
            "games": int(self.updates_done) * self.hparams.games_per_batch * self.world_size,
            "devices": self.world_size,
            "accelerator": self.device.type,
        }
        self.save_members(checkpoint)

    # ------------------------------------------------------------------ budget
    @property
    def total_updates(self) -> int:
        return max(1, self.hparams.total_games // (self.hparams.games_per_batch * self.world_size))

    @property
    def world_size(self) -> int:
        return self.trainer.world_size if self._trainer is not None else 1

    @property
    def updates_per_epoch(self) -> int:
        return max(1, math.ceil(self.total_updates / self.hparams.evaluations))

    @property
    def progress(self) -> float:
        return float(self.updates_done) / self.total_updates

    def gamma(self) -> float:
        h = self.hparams
        return h.gamma_min + (h.gamma_max - h.gamma_min) * self.progress

    def entropy_coefs(self) -> tuple[float, float]:
        h, f = self.hparams, self.progress
        return (
            anneal(f, h.beta_roll_max, h.beta_roll_min, h.entropy_hold, h.entropy_anneal),
            anneal(f, h.beta_score_max, h.beta_score_min, h.entropy_hold, h.entropy_anneal),
        )

    def make_oracle(self, teacher: str = "auto") -> TurnOracle:
        """The exact oracle on the module's device: ``optimal`` (the solved table) or ``greedy``
        (one-turn values); ``auto`` is greedy for the single-turn task, optimal otherwise."""
        if teacher == "auto":
            teacher = "greedy" if self.hparams.task == "single_turn" else "optimal"
        if teacher not in self._oracles:
            table = load_or_solve(self.rules, self.device, progress=False) if teacher == "optimal" else None
            self._oracles[teacher] = TurnOracle(self.rules, table)
        return self._oracles[teacher]

    @torch.no_grad()
    def diagnose(self, batch: TensorDictBase) -> dict[str, float]:
        """Exact regret of the greedy policy on the first ``diagnose_games`` games of a batch."""
        h = self.hparams
        if h.diagnose_games <= 0 or h.n_players >= 2:
            return {}
        sample = batch[: h.diagnose_games].reshape(-1)
        keep_values, box_values = self.make_oracle().action_values(sample[K.DICE], sample[K.ROLL], sample[K.CARD])
        with eval_mode(self.net):
            keep, box = distribution(self.net, sample)[0].mode
        regret = choice_regret(keep_values, box_values, sample[K.ROLL], keep, box)
        rolling = sample[K.ROLL] < N_ROLLS - 1
        return {
            "regret_keep": masked_mean(regret, rolling),
            "regret_box": masked_mean(regret, ~rolling),
            "agreement": (regret < 1e-6).float().mean(),
        }

    def _load_network(self, path: str) -> None:
        """Start from another run's network: a Lightning checkpoint, or an exported agent folder.

        It may see fewer features than this run's (appended features start at zero weight, see
        :func:`transfer_weights`); ``reset_value_head`` starts the value at zero.
        """
        if not isinstance(self.net, PolicyValueNet):
            raise ValueError(f"init_from starts a policy/value network; {type(self).__name__} trains another kind")
        if Path(path).is_dir():
            from ..hub import YahtzeeAgent

            source = YahtzeeAgent.load(path).net
        else:
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
            try:
                source = PolicyValueNet(**self.network_kwargs(ckpt["hyper_parameters"]))
                state = {k.removeprefix("net."): v for k, v in ckpt["state_dict"].items() if k.startswith("net.")}
                source.load_state_dict(state)
            except (KeyError, TypeError, RuntimeError) as e:
                raise ValueError(f"{path}: not a checkpoint of this network ({e})") from e
        try:
            transfer_weights(source, self.net, reset_value_head=self.hparams.reset_value_head)
        except ValueError as e:
            raise ValueError(f"{path}: network does not match this configuration ({e})") from e

    # -------------------------------------------------------------- lightning
    def setup(self, stage: str) -> None:
        self._started = time.monotonic()  # for the wall clock logged with every evaluation
        if stage == "fit":
            # One epoch is one evaluation interval; the number of epochs follows from the budget
            # (a smaller trainer.max_epochs stops early, e.g. to train part of a run).
            budget = math.ceil(self.total_updates / self.updates_per_epoch)
            asked = self.trainer.fit_loop.max_epochs
            self.trainer.fit_loop.max_epochs = budget if asked in (None, -1, 1000) else min(asked, budget)

    def configure_optimizers(self) -> Any:
        if self.in_ensemble():
            return self.ensemble_configure_optimizers(self.configure_optimizers)
        # foreach: one kernel per operation over all parameters rather than one per parameter
        # (the same arithmetic; torch only picks it by default on CUDA).
        h = self.hparams
        value = list(self.net.value_head.parameters()) if hasattr(self.net, "value_head") else []
        ids = {id(p) for p in value}
        groups = [{"params": [p for p in self.net.parameters() if id(p) not in ids], "lr": h.lr}]
        if value:  # the value head may learn faster (a fine-tune that restarts its values)
            groups.append({"params": value, "lr": h.lr * h.value_lr_scale})
        opt = torch.optim.Adam(groups, lr=h.lr, foreach=True)

        def factor(step: int) -> float:
            return lr_factor(step / self.total_updates, h.warmup, h.hold, h.r_alpha)

        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.LambdaLR(opt, factor)}

    def make_env(self, num_envs: int, seed: int) -> YahtzeeEnv:
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
            seed=seed,
        )

    @torch.no_grad()
    def collect(self) -> TensorDictBase:
        """A batch ``(games_per_batch, steps)`` of whole games played now with the current weights.

        The steps are written into the same preallocated TensorDict every update (``last_batch``),
        on the module's device: no copy to the host, no allocation per batch. The network plays in
        eval mode (no dropout), switched once for the whole rollout.

        The loop is TorchRL's ``env.rollout(steps, policy, break_when_any_done=False)`` (a test
        checks they give the same batch) without its check for finished games after every step,
        which reads ``done`` back to the host: here every game lasts exactly ``steps`` steps, so
        none ends before the batch does.
        """
        if self.in_ensemble():
            return self.ensemble_collect(self.collect)
        if self._players is None:
            h = self.hparams
            # Seeded per rank, and per resume point so a resumed run does not replay its first games.
            seed = h.seed + self.global_rank + 7919 * int(self.updates_done)
            self._players = _Players(self.make_env(h.games_per_batch, seed=seed), self.collection_policy())
        steps = N_ROLLS * (1 if self.hparams.task == "single_turn" else self.rules.n_turns)
        env, policy = self._players.env, self._players.policy
        played = []
        with set_exploration_type(ExplorationType.RANDOM), eval_mode(self.net):
            td = env.reset()
            for t in range(steps):
                played.append(env.step(policy(td)))
                if t < steps - 1:
                    td = env.step_mdp(played[-1])
        self.last_batch = torch.stack(played, dim=1, out=self.last_batch)
        return self.last_batch

    def train_dataloader(self) -> DataLoader:
        warnings.filterwarnings("ignore", message="Your `IterableDataset` has `__len__` defined")  # see _Updates
        return DataLoader(_Updates(self), batch_size=None)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(_Once(), batch_size=None)

    def on_fit_end(self) -> None:
        self._players, self.last_batch = None, None

    # ------------------------------------------------------------ the update
    def update(self, batch: TensorDictBase, coefs: dict[str, float]) -> dict[str, float]:
        """One update on a batch of whole games; returns the metrics to log. Defined by subclasses."""
        raise NotImplementedError

    def step_optimizer(self, loss: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Backward, clip at ``tau_clip``, step. Returns the gradient norm and whether it was clipped
        (1.0 or 0.0), as tensors on the device: reading them here would wait for the device."""
        opt = self.optimizers()
        opt.zero_grad()
        self.manual_backward(loss)
        tau = self.hparams.tau_clip
        norm = torch.nn.utils.clip_grad_norm_(self.net.parameters(), tau if tau > 0 else float("inf"))
        opt.step()
        return norm.detach(), (norm > tau).float() if tau > 0 else torch.zeros_like(norm)

    def evaluate_actions(
        self, obs: TensorDictBase, dist_value: tuple[Any, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(log pi(a|s), V(s), keep-head entropy, box-head entropy)`` of the taken actions.

        Each head's entropy is averaged over the steps where that head acts. ``dist_value``: the
        network's ``(distribution, value)`` on ``obs`` when the caller has it already.
        """
        dist, value = dist_value or distribution(self.net, obs)
        log_prob = dist.log_prob(obs[K.KEEP], obs[K.BOX])
        rolling = dist.rolling
        ent_keep = (dist.keep_entropy() * rolling).sum() / rolling.sum().clamp(min=1)
        ent_box = (dist.box_entropy() * ~rolling).sum() / (~rolling).sum().clamp(min=1)
        return log_prob, value, ent_keep, ent_box

    @staticmethod
    def entropy_bonus(ent_keep: torch.Tensor, ent_box: torch.Tensor, coefs: dict[str, float]) -> torch.Tensor:
        return coefs["beta_roll"] * ent_keep + coefs["beta_score"] * ent_box

    @torch.no_grad()
    def next_values(self, batch: TensorDictBase) -> torch.Tensor:
        """``V(s_t+1)`` of every step ``(games, steps)``, mostly from the values stored at collection.

        A batch is played with the current weights (:meth:`collect` runs at the start of the
        update, dropout off), so the value stored at step ``t + 1`` is the next state's value of
        step ``t``: only the batch's last step needs a forward pass. (After a game's last step
        the next step belongs to a new game, but a terminal step's next value is never used.)
        """
        last = batch["next"][..., -1]
        with eval_mode(self.net):
            last_value = self.net(last)[2]
        return torch.cat([batch[VALUE][..., 1:], last_value.unsqueeze(-1)], dim=-1)

    def policy_gradient_step(
        self, obs: TensorDictBase, advantage: torch.Tensor, returns: torch.Tensor, coefs: dict[str, float]
    ) -> dict[str, torch.Tensor]:
        """One optimizer step of ``-log pi * A + lambda_v (R - V)^2 - entropy bonus`` on flat steps.

        The update of REINFORCE and A2C, which differ only in the advantage ``A`` and return ``R``
        they pass; returns the step's metrics (still on the device).
        """
        log_prob, value, ent_keep, ent_box = self.evaluate_actions(obs)
        parts = {
            "policy": -(log_prob * self.normalize(advantage)).mean(),
            "value": self.hparams.lambda_v * (returns - value).pow(2).mean(),
            "entropy": -self.entropy_bonus(ent_keep, ent_box, coefs),
        }
        loss = sum(parts.values())
        grad_norm, clipped = self.step_optimizer(loss)

        parts |= {"entropy_roll": ent_keep, "entropy_score": ent_box}
        return self.update_stats(loss, parts, advantage, value, returns, grad_norm, clipped)

    def advantages(self, batch: TensorDictBase, gamma: float, lam: float) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE(``lam``) advantages and their returns ``(games, steps)``, from the values stored at
        collection (TorchRL's ``generalized_advantage_estimate``; ``lam`` 0 is the TD(0) error)."""
        nxt = batch["next"]
        advantage, returns = generalized_advantage_estimate(
            gamma,
            lam,
            batch[VALUE].unsqueeze(-1),
            self.next_values(batch).unsqueeze(-1),
            nxt[K.REWARD],
            nxt[K.DONE],
            nxt[K.TERMINATED],
        )
        return advantage.squeeze(-1), returns.squeeze(-1)

    @staticmethod
    def update_stats(
        loss: torch.Tensor,
        parts: dict[str, torch.Tensor],
        advantage: torch.Tensor,
        value: torch.Tensor | None,
        target: torch.Tensor | None,
        grad_norm: torch.Tensor,
        clipped: torch.Tensor,
    ) -> dict[str, torch.Tensor]:
        """The metrics every update logs, as tensors (read once per update by :meth:`learn`);
        ``value`` None when the loss reports explained variance."""
        stats = {
            "loss": loss.detach(),
            **{f"loss_{k}": v.detach() for k, v in parts.items()},
            "advantage_mean": advantage.mean(),
            "advantage_std": advantage.std(),
            "grad_norm": grad_norm,
            "grad_clipped": clipped,
        }
        if value is not None:
            stats["explained_variance"] = explained_variance(value.detach(), target)
        return stats

    @staticmethod
    def mean_stats(steps: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        """Each metric's mean over the minibatches of an update, still on the device."""
        return {k: torch.stack([s[k].float() for s in steps]).mean() for k in steps[0]}

    @staticmethod
    def minibatches(batch: TensorDictBase, epochs: int, games_per_minibatch: int) -> Iterator[TensorDictBase]:
        """``epochs`` passes over the batch's games in random minibatches, each flattened to steps."""
        for _ in range(epochs):
            for idx in torch.randperm(batch.shape[0], device=batch.device).split(games_per_minibatch):
                yield batch[idx].reshape(-1)

    def normalize(self, advantage: torch.Tensor) -> torch.Tensor:
        if self.hparams.normalize_advantage and advantage.numel() > 1:
            return (advantage - advantage.mean()) / (advantage.std() + 1e-8)
        return advantage

    @torch.no_grad()
    def policy_drift(self, obs: TensorDictBase, old_log_prob: torch.Tensor) -> torch.Tensor:
        """Approximate KL between the policy that collected ``obs`` and the updated one."""
        with eval_mode(self.net):
            dist, _ = distribution(self.net, obs)
        return approx_kl(old_log_prob, dist.log_prob(obs[K.KEEP], obs[K.BOX]))

    def training_step(self, update: int, batch_idx: int) -> None:
        """One update: play a batch of whole games with the current weights, then learn from it."""
        self.learn(self.collect())

    def learn(self, batch: TensorDictBase) -> None:
        """The update on a freshly collected batch, its schedules and its metrics."""
        if self.in_ensemble():
            return self.ensemble_learn(self.learn, batch)
        beta_roll, beta_score = self.entropy_coefs()
        coefs = {"beta_roll": beta_roll, "beta_score": beta_score, "gamma": self.gamma()}
        stats = self.diagnose(batch) | self.update(batch, coefs)
        self.lr_schedulers().step()
        self.updates_done += 1
        flat = batch.reshape(-1)
        rolling = flat[K.ROLL] < N_ROLLS - 1
        keeps = action_counts(flat[K.KEEP], N_KEEPS, rolling)
        boxes = action_counts(flat[K.BOX], N_BOXES, ~rolling)
        done = flat["next", K.DONE].squeeze(-1)
        stats.update(
            {
                "episode_return": flat["next", K.REWARD].sum() / done.sum().clamp(min=1),
                "kl": self.policy_drift(flat, flat[LOG_PROB]),
                "mask_diversity": mask_diversity(keeps),
                f"top{self.hparams.top_k}_keep_share": top_k_share(keeps, self.hparams.top_k),
                f"top{self.hparams.top_k}_box_share": top_k_share(boxes, self.hparams.top_k),
                "lr": self.optimizers().param_groups[0]["lr"],
                "beta_roll": beta_roll,
                "beta_score": beta_score,
                "gamma": coefs["gamma"],
                "games": float(self.updates_done) * self.hparams.games_per_batch * self.world_size,
            }
        )
        stats = read_stats(stats)  # the update's one read from the device
        self.log_dict({f"train/{k}": v for k, v in stats.items()}, on_step=True, batch_size=1)
        self.log("return", stats["episode_return"], prog_bar=True, on_step=True, logger=False, batch_size=1)

    # ------------------------------------------------------------ evaluation
    def opponent(self) -> Any:
        """The N-player opponent: a player name or agent folder, or ``self`` (the learner, live)."""
        return self.player(greedy=False) if self.hparams.opponent == "self" else self.hparams.opponent

    def eval_opponent(self) -> Any:
        """Whom evaluations play: ``eval_opponent``, else the training opponent (``optimal`` in self-play)."""
        name = self.hparams.get("eval_opponent") or self.hparams.opponent
        return "optimal" if name == "self" else name

    def player(self, greedy: bool = True):
        from ..players.agent import AgentPlayer

        return AgentPlayer(self.net, greedy=greedy, name=type(self).__name__.lower())

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        if self.in_ensemble():
            return self.ensemble_validate(self.validation_step, batch, batch_idx)
        h = self.hparams
        if h.n_players >= 2:
            from ..evaluation.match import play_matches

            r = play_matches(
                self.player(),
                self.eval_opponent(),
                h.eval_games,
                h.seed + 7919,
                self.rules,
                h.n_players,
                device=self.device,
            )
            metrics = {"eval/mean_score": r["player_score"]["mean"], "eval/win_rate": r["win"]["rate"]}
        else:
            from ..evaluation import play_games, summarize

            oracle = self.make_oracle("optimal") if h.diagnose_games > 0 else None
            raw = play_games(self.player(), h.eval_games, h.seed + 7919, self.rules, self.device, regret_oracle=oracle)
            s = summarize(raw, self.rules)
            metrics = {
                "eval/mean_score": s["score"]["mean"],
                "eval/upper_bonus_rate": s["upper_bonus_rate"],
                "eval/yahtzee_rate": s["yahtzee_rate"],
            }
            if "regret" in s:  # where the points go: per decision, per turn, per box
                r = s["regret"]
                metrics |= {"eval/regret_per_game": r["per_game_mean"], "eval/regret_keep": r["keep_mean"]}
                metrics["eval/regret_box"] = r["box_mean"]
                metrics |= {f"eval_regret_turn/{t + 1:02d}": v for t, v in enumerate(r["by_turn"])}
                metrics |= {f"eval_regret_box/{name}": v for name, v in r["by_box"].items()}
        metrics["eval/games"] = float(self.updates_done) * h.games_per_batch * self.world_size
        metrics["eval/wall_clock_s"] = time.monotonic() - getattr(self, "_started", time.monotonic())
        self.log_dict(metrics, sync_dist=True, batch_size=1)
        self.log("eval_score", metrics["eval/mean_score"], prog_bar=True, logger=False, sync_dist=True, batch_size=1)

    def on_train_end(self) -> None:
        if self.in_ensemble():
            return self.ensemble_final_evaluation(self.on_train_end)
        h = self.hparams
        if h.final_eval_games <= 0 or self.global_rank != 0:
            return
        games, seed = h.final_eval_games, h.seed + 104729
        if h.n_players >= 2:
            from ..evaluation.match import format_match, play_matches

            self.final_evaluation = play_matches(
                self.player(), self.eval_opponent(), games, seed, self.rules, h.n_players, device=self.device
            )
            print(format_match(self.final_evaluation))
        else:
            from ..evaluation import evaluate
            from ..evaluation.report import format_text

            self.final_evaluation = evaluate(self.player(), games, seed, self.rules, self.device)
            print(format_text(self.final_evaluation))
