"""DQN (Yuan 2023's agent, docs/hyperparameters.md) over the base's collection, env and evaluation.

TorchRL provides the pieces: ``QValueModule`` (masked greedy action), ``EGreedyModule``
(exploration), ``DQNLoss`` (Huber TD loss against a delayed target network), ``SoftUpdate``
(target tau) and a ``ReplayBuffer``. This file only wires them: one collected batch of whole
games goes into the buffer, then ``updates_per_batch`` minibatches are drawn from it.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase, TensorDictSequential
from torchrl.data import Categorical, LazyTensorStorage, ReplayBuffer
from torchrl.modules import EGreedyModule, QValueModule
from torchrl.objectives import DQNLoss, SoftUpdate

from ..env import keys as K
from ..nn.qnet import QNetwork
from ..players.base import Player
from .base import OnPolicyAlgorithm

# Flat keys: the collector's first-step key detection trips over a nested TensorDict here.
Q_ACTION, Q_VALUES, Q_MASK, Q_CHOSEN = "dqn_action", "dqn_action_value", "dqn_mask", "dqn_chosen_value"
OBS_KEYS = [K.DICE, K.CARD, K.ROLL, K.TURN, K.SCORE, K.BOX_MASK, K.YAHTZEE_BONUSES]
TWO_PLAYER_KEYS = [K.SCORE_DIFF, K.OPPONENT_CARDS, K.OPPONENT_SCORES]


class _QValues(TensorDictModuleBase):
    """Reads the raw observation; writes Q-values and the legal-action mask."""

    def __init__(self, qnet: QNetwork, two_player: bool) -> None:
        super().__init__()
        self.qnet = qnet
        self.in_keys = OBS_KEYS + (TWO_PLAYER_KEYS if two_player else [])
        self.out_keys = [Q_VALUES, Q_MASK]

    def forward(self, td: TensorDictBase) -> TensorDictBase:
        td.set(Q_VALUES, self.qnet(td))
        td.set(Q_MASK, self.qnet.mask(td))
        return td


class _ToEnvAction(TensorDictModuleBase):
    def __init__(self, qnet: QNetwork) -> None:
        super().__init__()
        self.qnet = qnet
        self.in_keys, self.out_keys = [Q_ACTION, K.DICE], [K.KEEP, K.BOX]

    def forward(self, td: TensorDictBase) -> TensorDictBase:
        keep, box = self.qnet.to_env_action(td[Q_ACTION], td)
        td.set(K.KEEP, keep)
        td.set(K.BOX, box)
        return td


class QPlayer(Player):
    """The greedy (masked argmax) policy of a Q-network."""

    name = "dqn"

    def __init__(self, qnet: QNetwork) -> None:
        super().__init__(qnet.rules)
        self.qnet = qnet

    @torch.no_grad()
    def act(self, obs: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        q = self.qnet(obs).masked_fill(~self.qnet.mask(obs), float("-inf"))
        return self.qnet.to_env_action(q.argmax(-1), obs)


class DQN(OnPolicyAlgorithm):
    """Epsilon-greedy DQN with soft target updates and a Huber loss; Yuan's defaults.

    ``meta_actions``: Yuan's 23 meta-actions, or the full masked 45-action space.
    Epsilon decays multiplicatively per game from ``eps_start`` to ``eps_end``.
    """

    def __init__(
        self,
        hidden: list[int] | None = None,
        meta_actions: bool = True,
        lr: float = 1e-3,
        weight_decay: float = 0.01,
        gamma: float = 0.99,
        tau: float = 0.005,
        buffer_size: int = 20_000,
        batch_size: int = 100,
        updates_per_batch: int = 16,
        eps_start: float = 0.9,
        eps_end: float = 0.1,
        eps_decay: float = 0.9998,
        n_players: int = 2,
        features: str | list[str] = "two_player",
        games_per_batch: int = 16,
        **kwargs: Any,
    ) -> None:
        super().__init__(lr=lr, n_players=n_players, features=features, games_per_batch=games_per_batch, **kwargs)
        self.save_hyperparameters()
        self.qvalues = _QValues(self.net, two_player=n_players >= 2)
        self.actor = TensorDictSequential(
            self.qvalues,
            QValueModule(
                action_space="categorical",
                action_value_key=Q_VALUES,
                action_mask_key=Q_MASK,
                out_keys=[Q_ACTION, Q_VALUES, Q_CHOSEN],
            ),
        )
        self.loss = DQNLoss(self.actor, loss_function="smooth_l1", delay_value=True, action_space="categorical")
        self.loss.set_keys(action=Q_ACTION, action_value=Q_VALUES, value=Q_CHOSEN)
        self.loss.make_value_estimator(gamma=gamma)
        self.target_updater = SoftUpdate(self.loss, tau=tau)
        self.buffer = ReplayBuffer(storage=LazyTensorStorage(buffer_size), batch_size=batch_size)

    def build_network(self) -> QNetwork:
        h = self.hparams
        return QNetwork(h.features, h.hidden, h.meta_actions, self.rules.to_dict())

    def collection_policy(self) -> Any:
        self.explore = EGreedyModule(
            Categorical(self.net.n_actions),
            eps_init=self.hparams.eps_start,
            eps_end=self.hparams.eps_end,
            action_key=Q_ACTION,
            action_mask_key=Q_MASK,
        )
        return TensorDictSequential(self.actor, self.explore, _ToEnvAction(self.net))

    def configure_optimizers(self) -> Any:
        return torch.optim.AdamW(self.net.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)

    def epsilon(self) -> float:
        h = self.hparams
        games = float(self.updates_done) * h.games_per_batch
        return max(h.eps_end, h.eps_start * h.eps_decay**games)

    def learn(self, batch: TensorDictBase) -> None:
        h = self.hparams
        self.explore.eps.fill_(self.epsilon())
        self.buffer.extend(batch.reshape(-1).select(*self.qvalues.in_keys, Q_ACTION, "next").cpu())
        losses = []
        for _ in range(h.updates_per_batch):
            sample = self.buffer.sample().to(self.device)
            loss = self.loss(sample)["loss"]
            self.step_optimizer(loss)
            self.target_updater.step()
            losses.append(float(loss.detach()))
        self.updates_done += 1
        done = batch["next", K.DONE].squeeze(-1)
        stats = {
            "loss": sum(losses) / len(losses),
            "episode_return": float(batch["next", K.REWARD].sum() / done.sum().clamp(min=1)),
            "epsilon": self.epsilon(),
            "buffer": float(len(self.buffer)),
            "games": float(self.updates_done) * h.games_per_batch * self.world_size,
        }
        self.log_dict({f"train/{k}": v for k, v in stats.items()}, on_step=True, batch_size=1)
        self.log("return", stats["episode_return"], prog_bar=True, on_step=True, logger=False, batch_size=1)

    def player(self, greedy: bool = True) -> Player:
        return QPlayer(self.net)
