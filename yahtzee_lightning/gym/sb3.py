"""N games in one object for Stable-Baselines3: a ``VecEnv`` on the batched engine.

SB3's own vector envs (``DummyVecEnv``, ``SubprocVecEnv``) step one Python env per game; this
one steps every game at once (``BatchedGames``), so an
algorithm collects thousands of games per step. sb3-contrib's ``MaskablePPO`` reads the legal
actions through ``env_method("action_masks")``; a finished game restarts in the same step, its
last observation in ``infos[i]["terminal_observation"]``, as SB3 expects. Needs
``stable-baselines3`` (``pip install stable-baselines3 sb3-contrib``; the ``test`` extra has them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices

from ..game import Rules
from .spaces import action_space, observation_space
from .vector import BatchedGames


class YahtzeeSB3VecEnv(VecEnv):
    """``num_envs`` games of Yahtzee as one SB3 ``VecEnv`` (the arguments of
    ``YahtzeeVectorEnv``); use ``MultiInputPolicy``."""

    render_mode = None

    def __init__(self, num_envs: int = 64, **games: Any) -> None:
        # games: rules, task, start_card, seed and the rule keywords, as YahtzeeVectorEnv takes them
        self.games = BatchedGames(num_envs, **games)
        super().__init__(self.games.num_envs, observation_space(), action_space())
        self._actions: np.ndarray | None = None

    @property
    def rules(self) -> Rules:
        return self.games.rules

    def reset(self) -> dict[str, np.ndarray]:
        seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else None
        self._reset_seeds()
        self._reset_options()
        return self.games.reset(seed)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, list[dict[str, Any]]]:
        obs, reward, done, final = self.games.step(self._actions)
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if final is not None:
            for i in np.flatnonzero(done):
                infos[i] = {"terminal_observation": {k: v[i] for k, v in final.items()}, "TimeLimit.truncated": False}
        return obs, reward, done, infos

    def action_masks(self) -> np.ndarray:
        """``(N, 45)`` bool: which actions are legal in each game now."""
        return self.games.action_masks()

    def close(self) -> None:
        pass

    # Attributes and methods "of each env": every game shares this object, so each reads its row.
    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        value = getattr(self, attr_name)  # an unknown name raises AttributeError, as has_attr expects
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(f"{type(self).__name__} does not set per-game attributes (asked: {attr_name!r})")

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list[Any]:
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        rows = list(self._get_indices(indices))
        if method_name == "action_masks":
            return [result[i] for i in rows]
        return [result for _ in rows]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


__all__ = ["YahtzeeSB3VecEnv"]
