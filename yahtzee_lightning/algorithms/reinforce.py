"""REINFORCE with the value head as baseline (docs/hyperparameters.md)."""

from __future__ import annotations

from tensordict import TensorDictBase
from torchrl.objectives.value.functional import reward2go

from ..env import keys as K
from ..nn import VALUE
from .base import OnPolicyAlgorithm


class Reinforce(OnPolicyAlgorithm):
    """Policy loss ``-log pi(a|s) (R_t - V(s))``, value loss ``lambda_v (V(s) - R_t)^2``.

    ``R_t`` is the discounted return to the end of the game (TorchRL's ``reward2go``); the
    discount follows the gamma schedule. TorchRL's ``ReinforceLoss`` does not fit: it has no
    entropy bonus (the study anneals one per head) and would run the shared network twice,
    once as actor and once as critic. Defaults: the study's REINFORCE column.
    """

    BASELINE_FROM_UPDATE = True  # its loss is policy_gradient_loss: baseline: update is honoured there
    PACKABLE = True  # its steps through ``optimizer_step``: ``ensemble_update: batched`` maps them

    def __init__(
        self,
        lr: float = 1e-3,
        tau_clip: float = 0.0,
        lambda_v: float = 0.025,
        beta_roll_max: float = 0.1,
        beta_roll_min: float = 0.01,
        beta_score_max: float = 0.02,
        beta_score_min: float = 0.003,
        entropy_hold: float = 0.1,
        entropy_anneal: float = 0.55,
        gamma_min: float = 0.95,
        gamma_max: float = 1.0,
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
        returns = reward2go(self.rewards(batch), batch["next", K.DONE], coefs["gamma"]).reshape(-1)
        advantage = returns - batch[VALUE].reshape(-1)  # V(s) stored at collection, with the current weights
        return self.policy_gradient_step(batch.reshape(-1), advantage, returns, coefs)
