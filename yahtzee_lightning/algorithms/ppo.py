"""PPO: TorchRL's ``ClipPPOLoss`` on GAE(lambda) advantages, epochs x minibatches of whole games."""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.objectives import ClipPPOLoss
from torchrl.objectives.value.functional import generalized_advantage_estimate

from ..env import keys as K
from ..nn import LOG_PROB, VALUE, TurnDistribution, make_actor, make_critic
from .base import OnPolicyAlgorithm


class TurnClipPPOLoss(ClipPPOLoss):
    """``ClipPPOLoss`` with one entropy bonus per head, each over the steps where its head acts.

    The one change to TorchRL's loss, and why: its per-head entropy coefficients expect a
    ``CompositeDistribution``, which would also add both heads' log-probabilities on every step.
    The roll-gated :class:`TurnDistribution` keeps the right log-prob, and reports its two heads
    here: each head's entropy, zero on the other head's steps, scaled by the inverse share of its
    steps, so that the batch mean is that head's mean entropy over its own steps.
    """

    def _get_entropy(self, dist: TurnDistribution, adv_shape: torch.Size) -> TensorDictBase:
        rolling = dist.rolling.float()
        keep = dist.keep_entropy() * rolling / rolling.mean().clamp(min=1e-8)
        box = dist.box_entropy() * (1 - rolling) / (1 - rolling).mean().clamp(min=1e-8)
        return TensorDict({"keep": keep, "box": box}, batch_size=adv_shape)

    def set_entropy_coeffs(self, roll: float, score: float) -> None:
        """The annealed coefficients of this update (TorchRL keeps the per-head map in a dict)."""
        self._entropy_coeff_map = {"keep": float(roll), "box": float(score)}


class PPO(OnPolicyAlgorithm):
    """Clipped surrogate with ratio ``pi / pi_old`` and clip ``clip_eps`` (TorchRL's ``ClipPPOLoss``);
    GAE(``gae_lambda``) advantages from TorchRL; value loss ``lambda_v (V - R)^2``.

    Defaults: the study's PPO column, 4 games per minibatch, 3 epochs.
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
        self._loss: list[TurnClipPPOLoss] = []  # a list: not a registered submodule (see below)

    @property
    def loss_module(self) -> TurnClipPPOLoss:
        """TorchRL's loss over ``self.net``, built on first use on the module's device.

        Kept out of the registered submodules so the network's weights appear once in
        checkpoints; it holds no state of its own (the coefficients are set every update).
        """
        if not self._loss:
            h = self.hparams
            loss = TurnClipPPOLoss(
                make_actor(self.net),
                make_critic(self.net),
                clip_epsilon=h.clip_eps,
                entropy_coeff={"keep": h.beta_roll_max, "box": h.beta_score_max},
                critic_coeff=h.lambda_v,
                loss_critic_type="l2",
                normalize_advantage=h.normalize_advantage,
                functional=False,  # actor and critic share the network: one set of parameters
            )
            loss.set_keys(action=K.ACTION, sample_log_prob=LOG_PROB, value=VALUE)
            self._loss.append(loss.to(self.device))
        return self._loss[0]

    def update(self, batch: TensorDictBase, coefs: dict[str, float]) -> dict[str, float]:
        h = self.hparams
        nxt = batch["next"]
        next_value = self.values_of(nxt.reshape(-1)).view(batch.shape).unsqueeze(-1)
        advantage, returns = generalized_advantage_estimate(
            coefs["gamma"],
            h.gae_lambda,
            batch[VALUE].unsqueeze(-1),
            next_value,
            nxt[K.REWARD],
            nxt[K.DONE],
            nxt[K.TERMINATED],
        )
        # What the loss reads: observations, the action taken, its log-prob, advantage and target.
        data = batch.select(*self.loss_module.actor_network.in_keys, K.ACTION, LOG_PROB, strict=False)
        data.update({"advantage": advantage, "value_target": returns})
        self.loss_module.set_entropy_coeffs(coefs["beta_roll"], coefs["beta_score"])

        stats: dict[str, list[float]] = {}
        for _ in range(h.epochs):
            for idx in torch.randperm(batch.shape[0], device=batch.device).split(h.games_per_minibatch):
                mb = data[idx].reshape(-1)
                out = self.loss_module(mb)
                parts = {"policy": out["loss_objective"], "value": out["loss_critic"], "entropy": out["loss_entropy"]}
                loss = sum(parts.values())
                grad_norm, clipped = self.step_optimizer(loss)

                heads = out["composite_entropy"]
                parts |= {"entropy_roll": heads["keep"].mean(), "entropy_score": heads["box"].mean()}
                mb_stats = self.update_stats(loss, parts, mb["advantage"], None, None, grad_norm, clipped)
                mb_stats["explained_variance"] = float(out["explained_variance"])
                mb_stats["clip_fraction"] = float(out["clip_fraction"])
                for k, v in mb_stats.items():
                    stats.setdefault(k, []).append(v)
        return {k: sum(v) / len(v) for k, v in stats.items()}
