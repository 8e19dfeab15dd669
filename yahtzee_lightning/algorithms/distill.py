"""Learning from the exact optimum: the student plays, the oracle labels every position it visits.

Imitation with DAgger. The student (the usual ``PolicyValueNet``) plays batches of whole
games, sampling its own actions, or with probability ``teacher_mix`` the teacher's, so that it
learns the positions its own mistakes lead to. Every visited decision is labelled by
``TurnOracle`` with the expected points to come after each of the 32 keeps and each of the
13 boxes: exact under the optimal table (full game), or the one-turn greedy values (single-turn
task). From those labels, per step and for the head that acts:

* cross-entropy to the teacher's best action (``lambda_ce``);
* the expected regret of the policy's own distribution, ``sum_a pi(a) (Q* - Q(a))``, in points
  (``lambda_regret``): it weighs each mistake by what it costs, where cross-entropy weighs every
  mistake the same;
* the value head regresses the exact expected points to come, ``V*(s) = max_a Q(s, a)``
  (``lambda_v``), so a distilled network is also a calibrated critic for RL fine-tuning.

Labelling is the expensive part (the network is small), so a batch can be learned from for
several ``epochs`` of minibatches. Logged every update: regret per keep and per box decision of
the student's greedy action (exact, in points), agreement with the teacher, value error.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from ..env import keys as K
from ..game.engine import draw
from ..metrics import masked_mean
from ..nn import PolicyModule, PolicyValueNet, TurnDistribution, as_played
from ..solver import TurnOracle, choice_regret
from .base import OnPolicyAlgorithm

KEEP_VALUES = "keep_values"  # (32,) the teacher's expected points to come after each keep
BOX_VALUES = "box_values"  # (13,) ... after scoring each box (-inf where illegal)
TEACHERS = ("auto", "optimal", "greedy")


class LabelledPolicy(PolicyModule):
    """Plays the student (or, with probability ``teacher_mix``, the teacher) and labels each position."""

    def __init__(self, net: PolicyValueNet, oracle: TurnOracle, teacher_mix: float = 0.0) -> None:
        super().__init__(net)
        self.oracle, self.teacher_mix = oracle, teacher_mix
        self.out_keys = [*self.out_keys, KEEP_VALUES, BOX_VALUES]

    def choose(self, td: TensorDictBase, dist: TurnDistribution) -> tuple[torch.Tensor, torch.Tensor]:
        keep_values, box_values = self.oracle.action_values(td[K.DICE], td[K.ROLL], td[K.CARD])
        td.set(KEEP_VALUES, keep_values.float())
        td.set(BOX_VALUES, box_values.float())
        keep, box = super().choose(td, dist)
        if self.teacher_mix > 0:
            follow = draw(torch.rand, keep.shape, keep.device, self.generators) < self.teacher_mix
            keep = torch.where(follow, keep_values.argmax(-1), keep)
            box = torch.where(follow, box_values.argmax(-1), box)
        return keep, box


def teacher_terms(dist: TurnDistribution, obs: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
    """Per labelled step, for the head that acts: the cross-entropy to the teacher's best action,
    and the policy's expected regret ``sum_a pi(a) (Q* - Q(a))`` in points."""
    rolling = dist.rolling
    kv, bv = obs[KEEP_VALUES], obs[BOX_VALUES]
    keep_regret = kv.amax(-1, keepdim=True) - kv
    box_regret = torch.where(torch.isfinite(bv), bv.amax(-1, keepdim=True) - bv, 0.0)
    keep_logp, box_logp = dist.keep_log_probs(), dist.box.logits
    ce = torch.where(
        rolling,
        -keep_logp.gather(-1, kv.argmax(-1, keepdim=True)).squeeze(-1),
        -box_logp.gather(-1, bv.argmax(-1, keepdim=True)).squeeze(-1),
    )
    expected_regret = torch.where(
        rolling,
        (keep_logp.exp() * keep_regret).sum(-1),
        (box_logp.exp() * box_regret).sum(-1),
    )
    return ce, expected_regret


class Distill(OnPolicyAlgorithm):
    """Imitation of the exact oracle (DAgger), over the same network, env and budget as the RL algorithms.

    Args:
        teacher: ``optimal`` (the exact table), ``greedy`` (one-turn values), or ``auto``:
            greedy for the single-turn task, optimal otherwise.
        teacher_mix: probability that a step plays the teacher's action instead of the student's
            sample at the start of training; it decays linearly to 0 over ``teacher_mix_decay``
            of training (0 = the student always plays).
        lambda_ce, lambda_regret, lambda_v: weights of the cross-entropy to the best action, the
            expected regret (points) and the value error (points squared).
        epochs, games_per_minibatch: passes over each labelled batch and minibatch size (games);
            ``games_per_minibatch`` None = the whole batch.
    """

    #: The teacher and its mix label and play the games that every member of an ensemble shares.
    SHARED_SETTINGS = (*OnPolicyAlgorithm.SHARED_SETTINGS, "teacher", "teacher_mix", "teacher_mix_decay")

    def __init__(
        self,
        teacher: str = "auto",
        teacher_mix: float = 0.0,
        teacher_mix_decay: float = 0.5,
        lambda_ce: float = 1.0,
        lambda_regret: float = 0.1,
        lambda_v: float = 1e-3,
        epochs: int = 1,
        games_per_minibatch: int | None = None,
        lr: float = 1e-3,
        tau_clip: float = 1.0,
        dropout: float = 0.0,
        beta_roll_max: float = 0.0,
        beta_roll_min: float = 0.0,
        beta_score_max: float = 0.0,
        beta_score_min: float = 0.0,
        games_per_batch: int = 256,
        **kwargs: Any,
    ) -> None:
        if teacher not in TEACHERS:
            raise ValueError(f"teacher must be one of {TEACHERS}, got {teacher!r}")
        if not 0.0 <= teacher_mix <= 1.0:
            raise ValueError(f"teacher_mix must be in [0, 1], got {teacher_mix}")
        if epochs < 1:
            raise ValueError(f"epochs must be at least 1, got {epochs}")
        if games_per_minibatch is not None and games_per_minibatch < 1:
            raise ValueError(f"games_per_minibatch must be at least 1 (or null), got {games_per_minibatch}")
        if kwargs.get("n_players", 1) >= 2:
            raise ValueError("Distill learns solitaire play (n_players=1); fine-tune two-player play with PPO")
        super().__init__(
            lr=lr,
            tau_clip=tau_clip,
            dropout=dropout,
            beta_roll_max=beta_roll_max,
            beta_roll_min=beta_roll_min,
            beta_score_max=beta_score_max,
            beta_score_min=beta_score_min,
            games_per_batch=games_per_batch,
            **kwargs,
        )
        self.save_hyperparameters()

    # ------------------------------------------------------------ the teacher
    def make_oracle(self, teacher: str | None = None) -> TurnOracle:
        return super().make_oracle(teacher or self.hparams.teacher)

    def teacher_mix(self) -> float:
        h = self.hparams
        if h.teacher_mix_decay <= 0:
            return 0.0
        return h.teacher_mix * max(0.0, 1.0 - self.progress / h.teacher_mix_decay)

    def collection_policy(self) -> LabelledPolicy:
        # Its own oracle object: the labels' per-game turn cache must not be shared with diagnostics.
        return LabelledPolicy(self.net, TurnOracle(self.rules, self.make_oracle().table), self.teacher_mix())

    def diagnose(self, batch: TensorDictBase) -> dict[str, float]:
        return {}  # every position is labelled: the update logs the regret of the whole batch

    def collect(self) -> TensorDictBase:
        if self._players is not None:
            self._players.policy.teacher_mix = self.teacher_mix()
        return super().collect()

    # --------------------------------------------------------------- the loss
    def loss_parts(self, obs: TensorDictBase) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """The loss terms on a flat batch of labelled steps, and the diagnostics of the greedy student."""
        dist, value = as_played(self.net, obs, self.batch_rolls)
        rolling = dist.rolling
        kv, bv = obs[KEEP_VALUES], obs[BOX_VALUES]
        best_v = torch.where(rolling, kv.amax(-1), bv.amax(-1))
        ce, expected_regret = teacher_terms(dist, obs)
        h = self.hparams
        parts = {
            "ce": h.lambda_ce * ce.mean(),
            "regret": h.lambda_regret * expected_regret.mean(),
            "value": h.lambda_v * (value - best_v).pow(2).mean(),
        }
        with torch.no_grad():
            keep, box = dist.mode
            regret = choice_regret(kv, bv, obs[K.ROLL], keep, box)
            diagnostics = {
                "regret_keep": masked_mean(regret, rolling),
                "regret_box": masked_mean(regret, ~rolling),
                "agreement": (regret < 1e-6).float().mean(),
                "expected_regret": expected_regret.mean(),
                "value_error": (value - best_v).abs().mean(),
            }
        return parts, diagnostics

    def update(self, batch: TensorDictBase, coefs: dict[str, float]) -> dict[str, torch.Tensor | float]:
        h = self.hparams
        size = h.games_per_minibatch or batch.shape[0]
        steps = []
        for mb in self.minibatches(batch, h.epochs, size):
            parts, diagnostics = self.loss_parts(mb)
            loss = sum(parts.values())
            grad_norm, clipped = self.step_optimizer(loss)
            step = {"loss": loss.detach(), **{f"loss_{k}": v.detach() for k, v in parts.items()}, **diagnostics}
            steps.append(step | {"grad_norm": grad_norm, "grad_clipped": clipped})
        stats: dict[str, torch.Tensor | float] = dict(self.mean_stats(steps))
        stats["teacher_mix"] = self.teacher_mix()
        # Decisions per update, for throughput: every step of every game is one labelled decision.
        stats["decisions"] = float(batch.numel())
        return stats


__all__ = ["BOX_VALUES", "KEEP_VALUES", "Distill", "LabelledPolicy", "teacher_terms"]
