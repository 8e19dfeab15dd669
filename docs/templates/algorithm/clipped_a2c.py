"""A2C with its advantages clipped: the template for a new algorithm (copy it, rename it, change
``update``).

The base class plays a batch of whole games with the current weights before every update, keeps
the schedules, evaluations, checkpoints and logs; a new algorithm states its settings in
``__init__`` (each becomes a YAML key under ``model.init_args``), checks them in
``validate_settings``, and writes its loss in ``update``.
"""

from __future__ import annotations

from tensordict import TensorDictBase

from yahtzee_lightning.algorithms import OnPolicyAlgorithm


class ClippedA2C(OnPolicyAlgorithm):
    """One optimizer step per batch on GAE(``gae_lambda``) advantages clipped to
    ``[-advantage_clip, advantage_clip]``, so that one lucky Yahtzee does not swamp the batch."""

    def __init__(self, advantage_clip: float = 20.0, gae_lambda: float = 0.0, **kwargs) -> None:
        super().__init__(**kwargs)  # records every argument above in self.hparams, the YAML and checkpoints

    def validate_settings(self) -> None:
        super().validate_settings()
        if not self.hparams.advantage_clip > 0:
            raise ValueError(f"advantage_clip must be > 0, got {self.hparams.advantage_clip!r}")

    def update(self, batch: TensorDictBase, coefs: dict[str, float]) -> dict[str, float]:
        # batch: (games, 39) steps as played; coefs: this point's entropy weights and discount.
        advantage, returns = self.advantages(batch, coefs["gamma"], self.hparams.gae_lambda)  # (games, 39) each
        clip = self.hparams.advantage_clip
        advantage = advantage.clamp(-clip, clip)
        # Flat steps: the log-probabilities under the masks the games were played with, the loss
        # -log pi * A + lambda_v (R - V)^2 - entropy bonus, one optimizer step, the metrics to log.
        return self.policy_gradient_step(batch.reshape(-1), advantage.reshape(-1), returns.reshape(-1), coefs)
