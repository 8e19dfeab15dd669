"""PPO: clipped surrogate, GAE(lambda), epochs x minibatches of whole games (docs/hyperparameters.md)."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from torchrl.objectives.value.functional import generalized_advantage_estimate

from ..env import keys as K
from ..nn import LOG_PROB, VALUE
from .base import OnPolicyAlgorithm


class PPO(OnPolicyAlgorithm):
    """Clipped surrogate with ratio ``pi / pi_old`` and clip ``clip_eps``; GAE from TorchRL.

    The loss is TorchRL's ``ClipPPOLoss`` formula written out (``tests/nn/test_torchrl.py``
    checks they agree on the same minibatch) rather than that module itself: with one network
    for policy and value, ``ClipPPOLoss`` runs the shared trunk once for its actor and once more
    for its critic, and the update ran 1.5x slower for it (measured, BENCHMARKS.md). Here one
    forward gives both. Defaults: the study's PPO column, 4 games per minibatch, 3 epochs.
    """

    def __init__(
        self,
        clip_eps: float = 0.2,
        gae_lambda: float = 0.95,
        epochs: int = 3,
        games_per_minibatch: int = 4,
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

    def update(self, batch: TensorDictBase, coefs: dict[str, float]) -> dict[str, float]:
        h = self.hparams
        nxt = batch["next"]
        next_value = self.next_values(batch).unsqueeze(-1)
        advantage, returns = generalized_advantage_estimate(
            coefs["gamma"],
            h.gae_lambda,
            batch[VALUE].unsqueeze(-1),
            next_value,
            nxt[K.REWARD],
            nxt[K.DONE],
            nxt[K.TERMINATED],
        )
        batch.set("advantage", advantage.squeeze(-1))
        batch.set("returns", returns.squeeze(-1))

        stats: dict[str, list[float]] = {}
        for mb in self.minibatches(batch, h.epochs, h.games_per_minibatch):
            parts, ratio, value = self.loss_parts(mb, coefs)
            loss = parts["policy"] + parts["value"] + parts["entropy"]
            grad_norm, clipped = self.step_optimizer(loss)

            mb_stats = self.update_stats(loss, parts, mb["advantage"], value, mb["returns"], grad_norm, clipped)
            mb_stats["clip_fraction"] = float(((ratio - 1).abs() > h.clip_eps).float().mean())
            for k, v in mb_stats.items():
                stats.setdefault(k, []).append(v)
        return {k: sum(v) / len(v) for k, v in stats.items()}

    def loss_parts(
        self, mb: TensorDictBase, coefs: dict[str, float]
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
        """The loss terms of one minibatch (with ``advantage`` and ``returns``), its ratios and values."""
        h = self.hparams
        log_prob, value, ent_keep, ent_box = self.evaluate_actions(mb)
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
        return parts, ratio, value
