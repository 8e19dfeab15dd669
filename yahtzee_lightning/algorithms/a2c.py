"""A2C with one-step TD(0) advantages (docs/hyperparameters.md)."""

from __future__ import annotations

from tensordict import TensorDictBase
from torchrl.objectives.value.functional import td0_return_estimate

from ..env import keys as K
from .base import OnPolicyAlgorithm


class A2C(OnPolicyAlgorithm):
    """``delta = r + gamma V(s') - V(s)``; policy loss ``-log pi * delta``, value loss ``lambda_v delta^2``.

    The TD target comes from TorchRL's TD(0) estimator (``td0_return_estimate``). TorchRL's
    ``A2CLoss`` does not fit, and the loss is the three lines below instead: in torchrl 0.14 it
    reads a nested action as a composite one and adds both heads' log-probabilities (the roll
    index must pick one, see ``nn/policy.py``), and its entropy bonus takes one coefficient where
    the study anneals one per head. Written here, actor and critic also share one forward
    pass of the network. Defaults: the study's A2C column.
    """

    def __init__(
        self,
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

    def update(self, batch: TensorDictBase, coefs: dict[str, float]) -> dict[str, float]:
        obs, nxt = batch.reshape(-1), batch["next"].reshape(-1)
        target = td0_return_estimate(
            coefs["gamma"],
            self.next_values(batch).reshape(-1, 1),
            nxt[K.REWARD],
            terminated=nxt[K.TERMINATED],
        ).squeeze(-1)

        log_prob, value, ent_keep, ent_box = self.evaluate_actions(obs)
        delta = target - value
        parts = {
            "policy": -(log_prob * self.normalize(delta.detach())).mean(),
            "value": self.hparams.lambda_v * delta.pow(2).mean(),
            "entropy": -self.entropy_bonus(ent_keep, ent_box, coefs),
        }
        loss = sum(parts.values())
        grad_norm, clipped = self.step_optimizer(loss)

        parts |= {"entropy_roll": ent_keep, "entropy_score": ent_box}
        return self.update_stats(loss, parts, delta.detach(), value, target, grad_norm, clipped)
