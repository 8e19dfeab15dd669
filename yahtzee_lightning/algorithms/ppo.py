"""PPO: clipped surrogate, GAE(lambda), epochs x minibatches of whole games (docs/hyperparameters.md)."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

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
    takes as many optimizer steps, not more.
    """

    PACKABLE = True  # its steps through ``optimizer_step``: ``ensemble_update: batched`` maps them

    LOSS_TERMS = ("policy", "value", "entropy")  # the parts of ``loss_parts`` that are summed

    def __init__(
        self,
        clip_eps: float = 0.2,
        gae_lambda: float = 0.95,
        epochs: int = 3,
        games_per_minibatch: int | None = None,
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
        n = self.hparams.get("games_per_minibatch")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ValueError(f"games_per_minibatch must be an integer >= 1 (or null: a fifth of the batch), got {n!r}")

    @property
    def minibatch_games(self) -> int:
        """Games per minibatch: ``games_per_minibatch``, or a fifth of the batch (at least 1)."""
        h = self.hparams
        return h.games_per_minibatch or max(1, h.games_per_batch // 5)

    def update(self, batch: TensorDictBase, coefs: dict[str, Any]) -> dict[str, torch.Tensor]:
        h = self.hparams
        advantage, returns = self.advantages(batch, coefs["gamma"], h.gae_lambda)
        batch.set("advantage", advantage)
        batch.set("returns", returns)

        steps = [  # each minibatch's metrics, kept on the device until the update is done
            self.optimizer_step(self.minibatch_loss, mb, coefs)
            for mb in self.minibatches(batch, h.epochs, self.minibatch_games)
        ]
        return self.mean_stats(steps)

    def minibatch_loss(self, mb: TensorDictBase, coefs: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """One minibatch's loss (the sum of ``LOSS_TERMS``) and its metrics."""
        parts, ratio, value = self.loss_parts(mb, coefs)
        loss = sum(parts[k] for k in self.LOSS_TERMS)
        signs = {k: parts.pop(k) for k in SATURATION if k in parts}  # metrics of their own, not loss terms
        stats = self.update_stats(loss, parts, mb["advantage"], value, mb["returns"]) | signs
        stats["clip_fraction"] = ((ratio - 1).abs() > self.hparams.clip_eps).float().mean()
        return loss, stats

    def loss_parts(
        self, mb: TensorDictBase, coefs: dict[str, Any]
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
        """The loss terms of one minibatch (with ``advantage`` and ``returns``), its ratios and values."""
        h = self.hparams
        dist, value = as_played(self.net, mb, self.batch_rolls)  # the network that acted: its masks replayed
        log_prob, value, ent_keep, ent_box = self.evaluate_actions(mb, (dist, value))
        adv = self.normalize(mb["advantage"])
        ratio = (log_prob - mb[LOG_PROB]).exp()
        surrogate = torch.minimum(ratio * adv, ratio.clamp(1 - h.clip_eps, 1 + h.clip_eps) * adv)
        parts = {
            "policy": -surrogate.mean(),
            "value": h.lambda_v * (value - mb["returns"]).pow(2).mean(),
            "entropy": -self.entropy_bonus(ent_keep, ent_box, coefs),
            "entropy_roll": ent_keep,
            "entropy_score": ent_box,
        }
        signs = self.saturation(dist, log_prob) if self.logging_now else {}  # logged updates only
        return parts | self.regularizers(mb, dist) | signs, ratio, value

    def regularizers(self, mb: TensorDictBase, dist: TurnDistribution) -> dict[str, torch.Tensor]:
        """Extra loss terms (named in ``LOSS_TERMS``) and their diagnostics; none in plain PPO."""
        return {}
