"""PPO anchored to the exact optimum: a new objective, learned without forgetting how to play.

Fine-tuning a near-optimal agent to a new reward (winning a match rather than scoring points) with
plain PPO drifts: the +1/-1 result of a match says little about any one decision, and the noise of
its advantages wears down the solitaire play faster than the new objective improves it (measured
in BENCHMARKS.md). Here every position the learner visits is also labelled by the exact
solitaire oracle (as in ``Distill``), and the loss adds ``anchor`` times the
policy's expected regret in points, ``sum_a pi(a) (Q*(a) - max Q*)``: the learner leaves the
optimal solitaire move only where the reward's advantage outweighs ``anchor`` per point it gives
up. (``anchor_ce`` adds the cross-entropy to the optimal move, a stronger pull.) The rest is PPO.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from ..metrics import masked_mean
from ..nn import TurnDistribution
from ..solver import TurnOracle
from .distill import LabelledPolicy, teacher_terms
from .ppo import PPO


class AnchoredPPO(PPO):
    """PPO plus ``anchor`` x expected regret and ``anchor_ce`` x cross-entropy to the exact
    solitaire-optimal move on every visited position (the oracle labels them during collection)."""

    PACKABLE = False  # its anchor's terms are not mapped over members: ``ensemble_update: batched`` is refused

    LOSS_TERMS = (*PPO.LOSS_TERMS, "anchor")

    def __init__(self, anchor: float = 0.1, anchor_ce: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.save_hyperparameters()

    def validate_settings(self) -> None:
        super().validate_settings()
        for name in ("anchor", "anchor_ce"):
            value = self.hparams.get(name, 0.0)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")

    def collection_policy(self) -> LabelledPolicy:
        # Its own oracle object: the labels' per-game turn cache is not shared with evaluation.
        return LabelledPolicy(self.net, TurnOracle(self.rules, self.make_oracle("optimal").table))

    def regularizers(self, mb: TensorDictBase, dist: TurnDistribution) -> dict[str, torch.Tensor]:
        ce, expected_regret = teacher_terms(dist, mb)
        h = self.hparams
        rolling = dist.rolling
        return {
            "anchor": h.anchor * expected_regret.mean() + h.anchor_ce * ce.mean(),
            "expected_regret_keep": masked_mean(expected_regret, rolling).detach(),
            "expected_regret_box": masked_mean(expected_regret, ~rolling).detach(),
        }
