"""A2C: one gradient step per batch on TD(0) or GAE(lambda) advantages (docs/hyperparameters.md)."""

from __future__ import annotations

from tensordict import TensorDictBase

from .base import OnPolicyAlgorithm


class A2C(OnPolicyAlgorithm):
    """Policy loss ``-log pi * A``, value loss ``lambda_v (R - V)^2``, one optimizer step per batch.

    ``gae_lambda`` 0 (the study's A2C) makes ``A`` the one-step TD error
    ``r + gamma V(s') - V(s)``; larger values blend in longer returns (GAE, as PPO uses), which
    trades the bias of a young value function for variance. Advantages come from TorchRL's GAE
    estimator. The loss is the base class's ``policy_gradient_step`` (shared with REINFORCE, one
    forward pass for actor and critic) rather than TorchRL's ``A2CLoss``, which does not fit: in
    torchrl 0.14 it reads a nested action as a composite one and adds both heads'
    log-probabilities (the roll index must pick one, see ``nn/policy.py``), and its entropy bonus
    takes one coefficient where the study anneals one per head. Defaults: the study's A2C column.
    """

    BASELINE_FROM_UPDATE = True  # its loss is policy_gradient_loss: baseline: update is honoured there
    PACKABLE = True  # its steps through ``optimizer_step``: ``ensemble_update: batched`` maps them

    def __init__(
        self,
        gae_lambda: float = 0.0,
        lr: float = 1e-4,
        tau_clip: float = 1.0,
        lambda_v: float = 0.005,
        beta_roll_max: float = 0.06,
        beta_roll_min: float = 0.02,
        beta_score_max: float = 0.03,
        beta_score_min: float = 0.008,
        entropy_hold: float = 0.3,
        entropy_anneal: float = 0.6,
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
        advantage, returns = self.advantages(batch, coefs["gamma"], self.hparams.gae_lambda)
        return self.policy_gradient_step(batch.reshape(-1), advantage.reshape(-1), returns.reshape(-1), coefs)
