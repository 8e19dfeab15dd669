"""PPO: clipped surrogate, GAE(lambda), epochs x minibatches of whole games (docs/hyperparameters.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from tensordict import TensorDictBase

from ..env import keys as K
from ..nn import LOG_PROB, TurnDistribution, as_played
from .base import OnPolicyAlgorithm
from .policy_gradient import SATURATION


class PPO(OnPolicyAlgorithm):
    """Clipped surrogate with ratio ``pi / pi_old`` and clip ``clip_eps``; GAE from TorchRL.

    The loss is TorchRL's ``ClipPPOLoss`` formula written out (``tests/nn/test_torchrl.py``
    checks they agree on the same minibatch) rather than that module itself: with one network
    for policy and value, ``ClipPPOLoss`` runs the shared trunk once for its actor and once more
    for its critic, and the update ran 1.5x slower for it (measured, BENCHMARKS.md). Here one
    forward gives both. Defaults: the study's PPO column, 3 epochs of minibatches of a fifth of
    the batch (``games_per_minibatch`` None: 4 of the study's 20 games), so that a larger batch
    takes as many optimizer steps, not more. ``minibatch``: ``games`` (each minibatch whole games)
    or ``steps`` (as many steps drawn at random from the whole batch: the published code's);
    ``normalize_over``: advantages normalised over each ``minibatch`` or once over the ``batch``
    before it is cut (the published code's).
    """

    PACKABLE = True  # its steps through ``optimizer_step``: ``ensemble_update: batched`` maps them

    LOSS_TERMS = ("policy", "value", "entropy")  # the parts of ``loss_parts`` that are summed (and ``upper``, where
    # the run trains an upper-score head)

    MINIBATCHES = ("games", "steps")
    NORMALIZE_OVER = ("minibatch", "batch")

    def __init__(
        self,
        clip_eps: float = 0.2,
        gae_lambda: float = 0.95,
        epochs: int = 3,
        games_per_minibatch: int | None = None,
        minibatch: str = "games",
        normalize_over: str = "minibatch",
        lr: float = 1e-4,
        tau_clip: float = 1.0,
        lambda_v: float = 0.01,
        beta_roll_max: float = 0.02,
        beta_roll_min: float = 0.005,
        beta_score_max: float = 0.05,
        beta_score_min: float = 0.01,
        entropy_hold: float = 0.1,
        entropy_anneal: float = 0.8,
        gamma_min: float = 0.99,
        gamma_max: float = 0.99,
        **kwargs,
    ) -> None:
        super().__init__(
            lr=lr,
            tau_clip=tau_clip,
            lambda_v=lambda_v,
            beta_roll_max=beta_roll_max,
            beta_roll_min=beta_roll_min,
            beta_score_max=beta_score_max,
            beta_score_min=beta_score_min,
            entropy_hold=entropy_hold,
            entropy_anneal=entropy_anneal,
            gamma_min=gamma_min,
            gamma_max=gamma_max,
            **kwargs,
        )
        self.save_hyperparameters()

    def validate_settings(self) -> None:
        super().validate_settings()
        n = self.hparams.games_per_minibatch
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ValueError(f"games_per_minibatch must be an integer >= 1 (or null: a fifth of the batch), got {n!r}")
        for name, options in (("minibatch", self.MINIBATCHES), ("normalize_over", self.NORMALIZE_OVER)):
            if self.hparams.get(name, options[0]) not in options:
                raise ValueError(f"{name} must be one of {options}, got {self.hparams[name]!r}")
        if self.hparams.minibatch == "steps" and self.hparams.ensemble is not None:
            raise ValueError("minibatch: steps draws from one run's batch; an ensemble's minibatches are whole games")

    @property
    def minibatch_games(self) -> int:
        """Games per minibatch: ``games_per_minibatch``, or a fifth of the batch (at least 1)."""
        h = self.hparams
        return h.games_per_minibatch or max(1, h.games_per_batch // 5)

    def update(self, batch: TensorDictBase, coefs: dict[str, Any]) -> dict[str, torch.Tensor]:
        h = self.hparams
        advantage, returns = self.advantages(batch, coefs["gamma"], h.gae_lambda)
        if self.hparams.normalize_over == "batch":
            advantage = self.normalize(advantage)  # once, over the batch; not again per minibatch
        batch.set("advantage", advantage)
        batch.set("returns", returns)

        if self.hparams.minibatch == "steps":
            minibatches = self.step_minibatches(batch, h.epochs, self.minibatch_games * batch.shape[1])
        else:
            minibatches = self.minibatches(batch, h.epochs, self.minibatch_games)
        steps = [  # each minibatch's metrics, kept on the device until the update is done
            self.optimizer_step(self.minibatch_loss, mb, coefs) for mb in minibatches
        ]
        return self.mean_stats(steps)

    @staticmethod
    def step_minibatches(batch: TensorDictBase, epochs: int, size: int) -> Iterator[TensorDictBase]:
        """``epochs`` passes over the batch's steps in random minibatches of ``size`` steps (the last
        one of a pass smaller where ``size`` does not divide the batch)."""
        flat = batch.reshape(-1)
        for _ in range(epochs):
            yield from (flat[idx] for idx in torch.randperm(flat.shape[0], device=flat.device).split(size))

    def minibatch_loss(self, mb: TensorDictBase, coefs: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """One minibatch's loss (the sum of ``LOSS_TERMS``) and its metrics."""
        parts, ratio, value = self.loss_parts(mb, coefs)
        loss = sum(parts[k] for k in (*self.LOSS_TERMS, *(("upper",) if "upper" in parts else ())))
        signs = {k: parts.pop(k) for k in SATURATION if k in parts}  # metrics of their own, not loss terms
        stats = self.update_stats(loss, parts, mb["advantage"], value, mb["returns"]) | signs
        stats["clip_fraction"] = ((ratio - 1).abs() > self.hparams.clip_eps).float().mean()
        return loss, stats

    def loss_parts(
        self, mb: TensorDictBase, coefs: dict[str, Any]
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
        """The loss terms of one minibatch (with ``advantage`` and ``returns``), its ratios and values."""
        h = self.hparams
        # The network that acted: its masks replayed; each row runs the head that acts at its roll
        # (whole turns, or the rows' own rolls in a minibatch of random steps).
        rolls = self.batch_rolls if h.minibatch == "games" else mb[K.ROLL]
        dist, value, *predicted = as_played(self.net, mb, rolls, upper=self.has_upper_head)
        log_prob, value, ent_keep, ent_box = self.evaluate_actions(mb, (dist, value))
        adv = mb["advantage"] if h.normalize_over == "batch" else self.normalize(mb["advantage"])
        ratio = (log_prob - mb[LOG_PROB]).exp()
        surrogate = torch.minimum(ratio * adv, ratio.clamp(1 - h.clip_eps, 1 + h.clip_eps) * adv)
        parts = {
            "policy": -surrogate.mean(),
            "value": h.lambda_v * (value - mb["returns"]).pow(2).mean(),
            "entropy": -self.entropy_bonus(ent_keep, ent_box, coefs),
            "entropy_roll": ent_keep,
            "entropy_score": ent_box,
            **self.upper_loss(mb, predicted),
        }
        signs = self.saturation(dist, log_prob) if self.logging_now else {}  # logged updates only
        return parts | self.regularizers(mb, dist) | signs, ratio, value

    def regularizers(self, mb: TensorDictBase, dist: TurnDistribution) -> dict[str, torch.Tensor]:
        """Extra loss terms (named in ``LOSS_TERMS``) and their diagnostics; none in plain PPO."""
        return {}
