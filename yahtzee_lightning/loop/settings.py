"""The hyperparameters of an on-policy run: their checks, the network they build, the budget and schedules they set.

A mixin of ``OnPolicyAlgorithm``, so that a bad setting is
refused in one place and the schedules read the budget in one place.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from .. import shipped
from ..game import Rules
from ..nn import PolicyValueNet, transfer_weights
from ..schedules import LR_SCHEDULES, anneal, run_lr_factor
from ..untrusted import check_count

#: Where ``V(s)`` in an advantage comes from: recorded when the step was played, or the update's forward.
BASELINES = ("collected", "update")


class Settings:
    """Checks of the settings, the network built from them, the budget and the schedules over it."""

    #: Whether the algorithm's loss can take ``V(s)`` from the update's forward (``baseline: update``):
    #: those on ``policy_gradient_loss`` (REINFORCE, A2C).
    BASELINE_FROM_UPDATE = False

    def validate_settings(self) -> None:
        """Refuse a bad setting when the module is built, naming it, rather than as a crash mid-run.

        The network's settings are checked by the network itself (built next). A subclass with
        settings of its own extends this (``super().validate_settings()`` first).
        """
        from ..env.games import CAPTURES, START_CARDS, TASKS
        from ..env.multiplayer import REWARDS

        h = self.hparams

        def need(ok: bool, name: str, rule: str) -> None:
            if not ok:
                raise ValueError(f"{name} must be {rule}, got {h[name]!r}")

        from .packed import ENSEMBLE_UPDATES

        for name, options in (
            ("task", TASKS),
            ("start_card", START_CARDS),
            ("reward", REWARDS),
            ("ensemble_update", ENSEMBLE_UPDATES),
            ("capture", CAPTURES),
        ):
            need(h[name] in options, name, f"one of {options}")
        need(h.lr_schedule in LR_SCHEDULES, "lr_schedule", f"one of {LR_SCHEDULES}")
        need(h.start_card != "own_play" or h.task == "single_turn", "start_card", "empty or random with task full_game")
        for name in ("total_games", "games_per_batch", "evaluations", "eval_games", "top_k", "n_players", "log_every"):
            need(isinstance(h[name], int) and h[name] >= 1, name, "an integer >= 1")
        need(isinstance(h.final_eval_games, int) and h.final_eval_games >= 0, "final_eval_games", ">= 0 (0: none)")
        need(isinstance(h.diagnose_games, int) and h.diagnose_games >= 0, "diagnose_games", ">= 0 (0: off)")
        need(isinstance(h.seed, int) and 0 <= h.seed < 2**32, "seed", "an integer in 0..2**32-1")
        # Upper bounds, each with its reason: a count past them fills the memory before it fails.
        need(h.games_per_batch <= 1 << 20, "games_per_batch", "at most 1,048,576 (a batch's games are held at once)")
        check_count("total_games", h.total_games)
        for name in ("eval_games", "final_eval_games", "diagnose_games"):
            need(h[name] <= 10_000_000, name, "at most 10,000,000 (every game's record is kept in memory)")
        need(h.n_players <= 8, "n_players", "at most 8 (a match's length and memory grow with its seats)")
        need(h.log_every <= 1_000_000, "log_every", "at most 1,000,000 (a run that never logs hides a collapse)")
        need(h.lr > 0, "lr", "> 0")
        need(h.value_lr_scale > 0, "value_lr_scale", "> 0")
        unit = (
            "r_alpha",
            "warmup",
            "hold",
            "entropy_hold",
            "entropy_anneal",
            "gamma_min",
            "gamma_max",
            "gae_lambda",
            "gamma_anneal",
            "warmup_start",
        )
        for name in unit:
            if name in h:  # gae_lambda: only the algorithms with GAE advantages have it
                need(0 <= h[name] <= 1, name, "in [0, 1]")
        for name in ("tau_clip", "lambda_v", "beta_roll_max", "beta_roll_min", "beta_score_max", "beta_score_min"):
            need(h[name] >= 0, name, ">= 0")
        self.validate_upper_settings()
        for name, default in (("replay_dropout", True), ("play_ahead", False)):
            if not isinstance(h[name], bool):
                raise ValueError(f"{name} must be true or false, got {h[name]!r}")
            if h[name] != default and h.ensemble is not None:
                raise ValueError(
                    f"{name}: {h[name]} (an ablation of the published code's handling) trains one run, not an ensemble"
                )
        need(h.baseline in BASELINES, "baseline", f"one of {BASELINES}")
        if h.baseline == "update":
            if not type(self).BASELINE_FROM_UPDATE:
                raise ValueError(
                    f"baseline: update (V(s) from the update's forward, the published code's REINFORCE and A2C) "
                    f"is for REINFORCE and A2C; {type(self).__name__} takes V(s) as recorded: use baseline: collected"
                )
            if h.get("gae_lambda", 0.0) > 0:
                raise ValueError(
                    f"baseline: update takes V(s) of the update's forward in the TD(0) error (the published "
                    f"code's A2C); gae_lambda {h.gae_lambda} sums later steps' errors: use gae_lambda 0"
                )
            if h.ensemble is not None:
                raise ValueError("baseline: update (an ablation of the published code's handling) trains one run")
        if h.capture != "none" and h.n_players >= 2:
            raise ValueError(
                f"capture: {h.capture} compiles the solitaire env's step; the match env (n_players {h.n_players}) "
                "steps its opponents between the learner's steps: use capture: none"
            )
        if h.total_games < h.games_per_batch:
            raise ValueError(f"total_games ({h.total_games}) must be at least games_per_batch ({h.games_per_batch})")

    def validate_upper_settings(self) -> None:
        """The upper-score head and its shaping: refused where they cannot mean what they say."""
        h = self.hparams
        weight, shaping = h.upper_score_weight, h.upper_shaping
        if weight < 0:
            raise ValueError(f"upper_score_weight must be >= 0 (0: no upper-score head), got {weight!r}")
        if not h.learn_upper_head and not weight:
            raise ValueError(
                "learn_upper_head: false leaves the upper-score head unlearnt, and upper_score_weight 0 builds "
                "none: set upper_score_weight > 0 (the head is built), or learn_upper_head true"
            )
        if shaping and not weight:
            raise ValueError(
                f"upper_shaping {shaping} shapes rewards with the upper-score head's prediction, which "
                "upper_score_weight 0 never trains: set upper_score_weight > 0, or upper_shaping 0"
            )
        if weight and (h.ensemble is not None or h.n_players > 1):
            raise ValueError(
                "upper_score_weight: the upper-score head trains a single solitaire run (no ensemble, n_players 1)"
            )

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
        "layout",
    )

    @classmethod
    def network_kwargs(cls, hparams: Any) -> dict[str, Any]:
        """The network's constructor arguments from the module's hyperparameters (also for export)."""
        boxes = hparams.get("boxes")
        rules = Rules(hparams.get("joker", "free"), hparams.get("yahtzee_bonus", True), tuple(boxes or range(13)))
        upper = {"upper_head": True} if hparams.get("upper_score_weight", 0) > 0 else {}
        return {**{k: hparams[k] for k in cls.NETWORK_KEYS if k in hparams}, "rules": rules.to_dict(), **upper}

    @classmethod
    def complete_agent(cls, agent: Any, hparams: Any) -> None:
        """What an agent exported from this algorithm's checkpoint carries beside its network
        (nothing here; expert iteration adds the turn-start value whose search taught it)."""

    def build_network(self) -> torch.nn.Module:
        """The trained network (``self.net``); subclasses with another kind of network override it."""
        return PolicyValueNet(**self.network_kwargs(self.hparams))

    def check_dropout(self, net: torch.nn.Module) -> None:
        """Refuse a network whose dropout cannot act and learn under the same masks.

        On-policy learning differentiates the policy that chose the actions. With dropout that policy
        is the network under the masks it acted with: the collection draws and records them and the
        update replays them (``ReplayDropout``). A plain ``nn.Dropout``
        (a subclass's own network) cannot take a mask, so its update would learn another policy.
        """
        for name, module in net.named_modules():
            if isinstance(module, torch.nn.modules.dropout._DropoutNd) and module.p > 0:
                raise ValueError(
                    f"dropout: {type(self).__name__} acts and learns under the same dropout masks, which "
                    f"{name} ({type(module).__name__}, p={module.p}) cannot replay; use "
                    "yahtzee_lightning.nn.ReplayDropout, or dropout 0"
                )

    def _load_network(self, path: str) -> None:
        """Start from another run's network: a Lightning checkpoint, or an exported agent folder.

        It may see fewer features than this run's (appended features start at zero weight, see
        ``transfer_weights``); ``reset_value_head`` starts the value at zero.
        """
        if not isinstance(self.net, PolicyValueNet):
            raise ValueError(f"init_from starts a policy/value network; {type(self).__name__} trains another kind")
        if not Path(path).exists() and (ours := shipped.agent(path)) is not None:
            path = str(ours)  # a shipped agent by name: a recipe's init_from, from any folder
        if Path(path).is_dir():
            from ..hub import YahtzeeAgent

            source = YahtzeeAgent.load(path).net
        else:
            from .resume import load_checked

            ckpt, problem = load_checked(path)
            if ckpt is None:
                raise ValueError(f"init_from {path}: the checkpoint cannot be used: {problem}")
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

    def lr_at(self, progress: float) -> float:
        """The learning rate at ``progress``: ``lr`` on its warm-up / hold / decay schedule."""
        h = self.hparams
        return h.lr * run_lr_factor(h, progress)

    def gamma(self, progress: float | None = None) -> float:
        """The discount at ``progress`` (default: now; given, it saves a read of the update counter)."""
        h = self.hparams
        f, length = self.progress if progress is None else progress, h.gamma_anneal
        return h.gamma_min + (h.gamma_max - h.gamma_min) * (min(f / length, 1.0) if length > 0 else 1.0)

    def entropy_coefs(self, progress: float | None = None) -> tuple[float, float]:
        """Each head's entropy weight at ``progress`` (default: now)."""
        h, f = self.hparams, self.progress if progress is None else progress
        return (
            anneal(f, h.beta_roll_max, h.beta_roll_min, h.entropy_hold, h.entropy_anneal),
            anneal(f, h.beta_score_max, h.beta_score_min, h.entropy_hold, h.entropy_anneal),
        )
