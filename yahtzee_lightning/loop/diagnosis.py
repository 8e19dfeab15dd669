"""What a logging update measures: the regret of the greedy policy's decisions against the exact
oracle, and the collapse metrics of the batch it learnt from.

A mixin of ``OnPolicyAlgorithm``; the oracle is built on
first use and kept (``self._oracles``), and the evaluations score their games with it too. Every
``log_every``-th update logs (``logs_this_update``); the others compute none of it.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from ..env import keys as K
from ..game import N_BOXES, N_KEEPS
from ..game.rules import N_ROLLS
from ..metrics import action_counts, mask_diversity, masked_mean, read_stats, top_k_share
from ..nn import LOG_PROB, carried, distribution, eval_mode
from ..solver import TurnOracle, choice_regret, load_or_solve
from .ensemble import lightning_log_step


class Diagnosis:
    """The exact oracle on the module's device, the regret it gives a batch's decisions, and the
    metrics a logging update reads from the device once and logs."""

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

    def log_update(self, batch: TensorDictBase, stats: dict[str, Any], coefs: dict[str, float], lr: float) -> None:
        """A logging update's metrics: the loss's ``stats``, the collapse metrics of the batch it
        learnt from, the schedules (``coefs``, ``lr``), read from the device once and logged."""
        h = self.hparams
        flat = batch.reshape(-1)
        rolling = flat[K.ROLL] < N_ROLLS - 1
        keeps = action_counts(flat[K.KEEP], N_KEEPS, rolling)
        boxes = action_counts(flat[K.BOX], N_BOXES, ~rolling)
        done = flat["next", K.DONE].squeeze(-1)
        stats = dict(stats)
        stats.update(
            {
                "episode_return": flat["next", K.REWARD].sum() / done.sum().clamp(min=1),
                "kl": self.policy_drift(flat, flat[LOG_PROB]),
                "mask_diversity": mask_diversity(keeps),
                f"top{h.top_k}_keep_share": top_k_share(keeps, h.top_k),
                f"top{h.top_k}_box_share": top_k_share(boxes, h.top_k),
                "lr": lr,
                "beta_roll": coefs["beta_roll"],
                "beta_score": coefs["beta_score"],
                "gamma": coefs["gamma"],
                "games": float(self.updates_done) * h.games_per_batch * self.world_size,
            }
        )
        stats = read_stats(stats)  # the update's one read from the device
        self.log_dict({f"train/{k}": v for k, v in stats.items()}, on_step=True, batch_size=1)
        self.log("return", stats["episode_return"], prog_bar=True, on_step=True, logger=False, batch_size=1)

    def logs_this_update(self) -> bool:
        """Whether the update about to be made is one whose metrics are computed and logged: every
        ``log_every``-th, where Lightning's loggers write (the trainer's ``log_every_n_steps`` is
        set to ``log_every`` in ``setup``). Read from Lightning's own counters under a trainer:
        no read from the device."""
        trainer = self._trainer
        if trainer is None:  # a bare module (benchmarks, tests): the same cadence on its own counter
            return (int(self.updates_done) + 1) % self.hparams.log_every == 0
        return lightning_log_step(trainer) is not None
