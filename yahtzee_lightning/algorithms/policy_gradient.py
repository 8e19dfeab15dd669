"""The policy-gradient pieces the losses are built from: log-probabilities, advantages, one step, metrics.

A mixin of ``OnPolicyAlgorithm``; REINFORCE and A2C use
``policy_gradient_step`` whole, PPO and the distillation compose their own loss from the parts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from tensordict import TensorDictBase
from torchrl.objectives.value.functional import generalized_advantage_estimate

from ..env import keys as K
from ..game import upper_sum
from ..game.rules import UPPER_BONUS, UPPER_BONUS_THRESHOLD
from ..metrics import approx_kl, explained_variance
from ..nn import VALUE, as_played, eval_mode

#: Each step's regression target of the upper-score head: its game's final upper sum as ``(sum - 63) / 63``.
UPPER_TARGET = "upper_target"

#: A batch's rewards with the upper-score shaping, where it carries them (``play_ahead``: read when it
#: was played, by the network that played it); else ``rewards`` reads them when the update asks.
SHAPED_REWARD = "shaped_reward"

#: The saturation signs ``PolicyGradient.saturation`` logs (metrics, not loss terms).
SATURATION = ("max_logit_keep", "max_logit_box", "log_prob_taken")


class PolicyGradient:
    """The parts of a policy-gradient update, on the module's network ``self.net``."""

    #: Whether the update being made logs its metrics (set by ``learn`` once an update, read on the
    #: host: the logging-only signs are computed on those updates alone, nothing read from the device).
    logging_now: bool = False

    def evaluate_actions(
        self, obs: TensorDictBase, dist_value: tuple[Any, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(log pi(a|s), V(s), keep-head entropy, box-head entropy)`` of the taken actions.

        Each head's entropy is averaged over the steps where that head acts. ``dist_value``: the
        network's ``(distribution, value)`` on ``obs`` when the caller has it already.

        :param obs: steps of any batch shape ``B`` (flat ``(N,)`` in the losses), as collected.
        :returns: log-probabilities and values shaped ``B``, and two scalar entropies.
        """
        dist, value = dist_value or as_played(self.net, obs)
        log_prob = dist.log_prob(obs[K.KEEP], obs[K.BOX])
        rolling = dist.rolling
        ent_keep = (dist.keep_entropy() * rolling).sum() / rolling.sum().clamp(min=1)
        ent_box = (dist.box_entropy() * ~rolling).sum() / (~rolling).sum().clamp(min=1)
        return log_prob, value, ent_keep, ent_box

    @staticmethod
    def entropy_bonus(ent_keep: torch.Tensor, ent_box: torch.Tensor, coefs: dict[str, float]) -> torch.Tensor:
        """``beta_roll * H(keep) + beta_score * H(box)``: each head's entropy weighted by its own schedule."""
        return coefs["beta_roll"] * ent_keep + coefs["beta_score"] * ent_box

    @torch.no_grad()
    def next_values(self, batch: TensorDictBase) -> torch.Tensor:
        """``V(s_t+1)`` of every step ``(games, steps)``, mostly from the values stored at collection.

        A batch is played with the current weights (``collect`` runs at the start of the
        update, under the masks the update replays), so the value stored at step ``t + 1`` is the
        next state's value of step ``t``: only the batch's last step needs a forward pass. (After a game's last step
        the next step belongs to a new game, but a terminal step's next value is never used.)
        """
        last = batch["next"][..., -1]
        with eval_mode(self.net):
            last_value = self.net(last)[2]
        return torch.cat([batch[VALUE][..., 1:], last_value.unsqueeze(-1)], dim=-1)

    def policy_gradient_step(
        self, obs: TensorDictBase, advantage: torch.Tensor, returns: torch.Tensor, coefs: dict[str, Any]
    ) -> dict[str, torch.Tensor]:
        """One optimizer step of ``policy_gradient_loss``: the update of REINFORCE and A2C, which
        differ only in the advantage ``A`` and return ``R`` they pass; returns the step's metrics
        (still on the device). In a packed ensemble every member's step at once
        (``packed``)."""
        return self.optimizer_step(self.policy_gradient_loss, obs, advantage, returns, coefs)

    def policy_gradient_loss(
        self, obs: TensorDictBase, advantage: torch.Tensor, returns: torch.Tensor, coefs: dict[str, Any]
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """``-log pi * A + lambda_v (R - V)^2 - entropy bonus`` on flat steps, and its metrics.

        :param obs: ``(N,)`` flat steps (``batch.reshape(-1)``), with their recorded dropout masks.
        :param advantage: ``(N,)``, normalised here when ``normalize_advantage`` is set.
        :param returns: ``(N,)``, the value head's target.
        :param coefs: ``beta_roll``, ``beta_score`` (see ``entropy_bonus``).
        """
        dist, value, *predicted = as_played(self.net, obs, self.batch_rolls, upper=self.has_upper_head)
        log_prob, value, ent_keep, ent_box = self.evaluate_actions(obs, (dist, value))
        if self.hparams.baseline == "update":  # the published code's: V(s) of this forward, V(s') as recorded
            advantage = advantage + (obs[VALUE] - value.detach())
        parts = {
            "policy": -(log_prob * self.normalize(advantage)).mean(),
            "value": self.hparams.lambda_v * (returns - value).pow(2).mean(),
            "entropy": -self.entropy_bonus(ent_keep, ent_box, coefs),
            **self.upper_loss(obs, predicted),
        }
        loss = sum(parts.values())
        parts |= {"entropy_roll": ent_keep, "entropy_score": ent_box}
        stats = self.update_stats(loss, parts, advantage, value, returns)
        return loss, stats | (self.saturation(dist, log_prob) if self.logging_now else {})  # logged updates only

    def advantages(self, batch: TensorDictBase, gamma: float, lam: float) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE(``lam``) advantages and their returns, both ``(games, steps)`` as the batch, from the
        values stored at collection (TorchRL's ``generalized_advantage_estimate``; ``lam`` 0 is the
        TD(0) error ``r + gamma V(s') - V(s)``, 1 the Monte Carlo return less ``V(s)``)."""
        nxt = batch["next"]
        advantage, returns = generalized_advantage_estimate(
            gamma,
            lam,
            batch[VALUE].unsqueeze(-1),
            self.next_values(batch).unsqueeze(-1),
            self.rewards(batch),
            nxt[K.DONE],
            nxt[K.TERMINATED],
        )
        return advantage.squeeze(-1), returns.squeeze(-1)

    # ------------------------------------------------------------------ the upper-score head
    @property
    def has_upper_head(self) -> bool:
        """Whether the run trains an upper-score head (``upper_score_weight`` > 0)."""
        return self.hparams.upper_score_weight > 0

    def rewards(self, batch: TensorDictBase) -> torch.Tensor:
        """The rewards the advantages see, ``(games, steps, 1)``: the game's, plus with
        ``upper_shaping`` w the published code's potential-based shaping ``w (P(s') - P(s))``.

        ``P(s) = 35 min(max(1 + u(s), 0), 1)``: the upper bonus times the share of 63 that the
        upper-score head ``u`` (trained towards ``(final upper sum - 63) / 63``) predicts. As in that
        code, ``u`` after a game's last step is taken as 0 (``P`` = 35), and there is no discount on
        ``P(s')``. The predictions are the current network's under the masks each step was played
        with (those it had when the batch was played), read without gradient; a batch played ahead
        carries its own, read when it was played (``SHAPED_REWARD``).
        """
        reward = batch["next", K.REWARD]
        w = self.hparams.upper_shaping
        if not w:
            return reward
        if SHAPED_REWARD in batch.keys():
            return batch[SHAPED_REWARD]
        with torch.no_grad():
            flat = batch.reshape(-1)
            u = as_played(self.net, flat, self.batch_rolls, upper=True)[2].reshape(batch.shape)
        potential = UPPER_BONUS * (1.0 + u).clamp(0.0, 1.0)
        after = torch.cat([potential[..., 1:], potential.new_full(potential[..., :1].shape, float(UPPER_BONUS))], -1)
        return reward + w * (after - potential).unsqueeze(-1)

    @staticmethod
    def set_upper_targets(batch: TensorDictBase) -> None:
        """Write each step's ``UPPER_TARGET``: its game's final upper sum, ``(sum - 63) / 63``
        (every game of a batch ends at its last step)."""
        final = upper_sum(batch["next", K.CARD][..., -1, :]).float()
        target = (final - UPPER_BONUS_THRESHOLD) / UPPER_BONUS_THRESHOLD
        batch.set(UPPER_TARGET, target.unsqueeze(-1).expand(batch.shape).clone())

    def upper_loss(self, obs: TensorDictBase, predicted: list[torch.Tensor]) -> dict[str, torch.Tensor]:
        """``upper_score_weight * (u(s) - target)^2`` averaged over ``obs`` (the upper-score head's
        regression), as a loss term ``upper``; nothing for a run without the head. With
        ``learn_upper_head: false`` the term is detached: logged, summed into the loss's value, and
        no gradient from it reaches the head or the trunk (as in the published code's PPO)."""
        if not predicted:
            return {}
        loss = self.hparams.upper_score_weight * (predicted[0] - obs[UPPER_TARGET]).pow(2).mean()
        return {"upper": loss if self.hparams.learn_upper_head else loss.detach()}

    @staticmethod
    def update_stats(
        loss: torch.Tensor,
        parts: dict[str, torch.Tensor],
        advantage: torch.Tensor,
        value: torch.Tensor | None,
        target: torch.Tensor | None,
        grad_norm: torch.Tensor | None = None,
        clipped: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """The metrics every update logs, as tensors (read once per update by ``learn``);
        ``value`` None when the loss reports explained variance. The gradient's norm and clipping
        are left out where the step is taken by ``optimizer_step`` (which adds them)."""
        stats = {
            "loss": loss.detach(),
            **{f"loss_{k}": v.detach() for k, v in parts.items()},
            "advantage_mean": advantage.mean(),
            "advantage_std": advantage.std(),
        }
        if grad_norm is not None:
            stats |= {"grad_norm": grad_norm, "grad_clipped": clipped}
        if value is not None:
            stats["explained_variance"] = explained_variance(value.detach(), target)
        return stats

    @staticmethod
    def mean_stats(steps: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        """Each metric's mean over the minibatches of an update, still on the device (``(K,)`` means
        in a packed ensemble's update, whose metrics are per member)."""
        return {k: torch.stack([s[k].float() for s in steps]).mean(0) for k in steps[0]}

    def minibatches(self, batch: TensorDictBase, epochs: int, games_per_minibatch: int) -> Iterator[TensorDictBase]:
        """``epochs`` passes over the batch's games in random minibatches, each flattened to steps
        (in a packed ensemble's update, each member's minibatch of its own games, member-major)."""
        games = batch.shape[0] // self.members_learning
        for _ in range(epochs):
            for idx in self.game_orders(games).split(games_per_minibatch, dim=-1):
                yield batch[idx if idx.dim() == 1 else idx.reshape(-1)].reshape(-1)

    def normalize(self, advantage: torch.Tensor) -> torch.Tensor:
        """Advantages to zero mean and unit deviation over the minibatch where ``normalize_advantage``
        is set (REINFORCE's and PPO's recipes), else as they are (the paper's A2C: raw TD errors)."""
        if self.hparams.normalize_advantage and advantage.numel() > 1:
            return (advantage - advantage.mean()) / (advantage.std() + 1e-8)
        return advantage

    @torch.no_grad()
    def policy_drift(self, obs: TensorDictBase, old_log_prob: torch.Tensor) -> torch.Tensor:
        """Approximate KL between the policy that collected ``obs`` and the updated one (under the
        same dropout masks)."""
        with eval_mode(self.net):
            dist, _ = as_played(self.net, obs)
        return approx_kl(old_log_prob, dist.log_prob(obs[K.KEEP], obs[K.BOX]))

    @staticmethod
    @torch.no_grad()
    def saturation(dist: Any, log_prob: torch.Tensor) -> dict[str, torch.Tensor]:
        """Signs of a saturating policy, on the network the update differentiates: each head's
        largest absolute logit (legal boxes only) and the mean log-probability of the taken actions.
        A collapse shows here first: logits in the thousands, and taken actions the learning
        network finds all but impossible."""
        keep, box = dist.raw_logits  # the network's outputs; illegal boxes at -inf
        return {
            "max_logit_keep": keep.abs().amax(),
            "max_logit_box": torch.where(torch.isfinite(box), box, 0.0).abs().amax(),
            "log_prob_taken": log_prob.mean(),
        }
