"""Diagnosis against the exact oracle: the regret of the greedy policy's decisions during training.

A mixin of ``OnPolicyAlgorithm``; the oracle is built on
first use and kept (``self._oracles``), and the evaluations score their games with it too.
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from ..env import keys as K
from ..game.rules import N_ROLLS
from ..metrics import masked_mean
from ..nn import carried, distribution, eval_mode
from ..solver import TurnOracle, choice_regret, load_or_solve


class Diagnosis:
    """The exact oracle on the module's device, and the regret it gives a batch's decisions."""

    def make_oracle(self, teacher: str = "auto") -> TurnOracle:
        """The exact oracle on the module's device: ``optimal`` (the solved table) or ``greedy``
        (one-turn values); ``auto`` is greedy for the single-turn task, optimal otherwise."""
        if teacher == "auto":
            teacher = "greedy" if self.hparams.task == "single_turn" else "optimal"
        if teacher not in self._oracles:
            table = load_or_solve(self.rules, self.device, progress=False) if teacher == "optimal" else None
            self._oracles[teacher] = TurnOracle(self.rules, table)
        return self._oracles[teacher]

    @torch.no_grad()
    def diagnose(self, batch: TensorDictBase) -> dict[str, float]:
        """Exact regret of the greedy policy on the first ``diagnose_games`` games of a batch."""
        h = self.hparams
        if h.diagnose_games <= 0 or h.n_players >= 2:
            return {}
        sample = batch[: h.diagnose_games].reshape(-1)
        keep_values, box_values = self.make_oracle().action_values(sample[K.DICE], sample[K.ROLL], sample[K.CARD])
        with eval_mode(self.net):
            keep, box = distribution(self.net, sample, carried(sample))[0].mode
        regret = choice_regret(keep_values, box_values, sample[K.ROLL], keep, box)
        rolling = sample[K.ROLL] < N_ROLLS - 1
        return {
            "regret_keep": masked_mean(regret, rolling),
            "regret_box": masked_mean(regret, ~rolling),
            "agreement": (regret < 1e-6).float().mean(),
        }
