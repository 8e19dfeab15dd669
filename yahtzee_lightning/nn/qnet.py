"""A Q-network over the flat (45) or meta (23) action space, for DQN."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from torch import nn

from ..env import keys as K
from ..env.features import encode, feature_size, resolve_features
from ..env.meta_actions import N_META, meta_mask, meta_to_action
from ..game import N_BOXES, N_KEEPS, Rules
from ..game.rules import N_ROLLS

N_FLAT = N_KEEPS + N_BOXES


def flat_mask(obs: TensorDictBase) -> torch.Tensor:
    """Legal flat actions (..., 45): any keep while rolling, the legal boxes when scoring."""
    rolling = (obs[K.ROLL] < N_ROLLS - 1).unsqueeze(-1)
    return torch.cat([rolling.expand(*rolling.shape[:-1], N_KEEPS), obs[K.BOX_MASK] & ~rolling], -1)


class QNetwork(nn.Module):
    """Features -> ReLU MLP -> one Q-value per action. JSON-able constructor, like PolicyValueNet."""

    def __init__(
        self,
        features: str | list[str] = "two_player",
        hidden: list[int] | None = None,
        meta_actions: bool = True,
        rules: dict | None = None,
    ) -> None:
        super().__init__()
        hidden = list(hidden or [256, 256])
        self.config = {
            "features": features,
            "hidden": hidden,
            "meta_actions": meta_actions,
            "rules": Rules.from_dict(rules).to_dict(),
        }
        self.rules = Rules.from_dict(rules)
        self.feature_names = resolve_features(features)
        self.meta_actions = meta_actions
        self.n_actions = N_META if meta_actions else N_FLAT
        layers: list[nn.Module] = []
        size = feature_size(self.feature_names)
        for width in hidden:
            layers += [nn.Linear(size, width), nn.ReLU()]
            size = width
        layers.append(nn.Linear(size, self.n_actions))
        self.mlp = nn.Sequential(*layers)

    def mask(self, obs: TensorDictBase) -> torch.Tensor:
        m = meta_mask(obs) if self.meta_actions else flat_mask(obs)
        return m | ~m.any(-1, keepdim=True)  # a finished game: any action, never used

    def forward(self, obs: TensorDictBase) -> torch.Tensor:
        return self.mlp(encode(obs, self.feature_names, self.rules))

    def to_env_action(self, action: torch.Tensor, obs: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        """An action index to the env's (keep pattern, box)."""
        if self.meta_actions:
            return meta_to_action(action, obs)
        return action.clamp(max=N_KEEPS - 1), (action - N_KEEPS).clamp(min=0)
