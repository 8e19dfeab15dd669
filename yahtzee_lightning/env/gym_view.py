"""A single-game, Gymnasium-style view for people who come from Gymnasium.

``reset(seed) -> (obs, info)`` and ``step(action) -> (obs, reward, terminated, truncated, info)``
with numpy observations. One flat discrete action: 0..31 keep patterns, 32..44 boxes; the
observation's ``action_mask`` (45 bools) says which are legal now. It runs on the same
:class:`YahtzeeEnv` (a batch of one), so rules, tasks and checks are identical.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..game import N_BOXES, N_KEEPS, Rules
from ..game.rules import N_ROLLS
from . import keys as K
from .yahtzee_env import YahtzeeEnv

N_ACTIONS = N_KEEPS + N_BOXES


class YahtzeeGymEnv:
    """One game at a time with a flat action; see the module docstring."""

    n_actions = N_ACTIONS

    def __init__(self, rules: Rules | dict | None = None, task: str = "full_game", start_card: str = "empty") -> None:
        self._env = YahtzeeEnv(1, rules=rules, task=task, start_card=start_card)
        self._td = None

    @property
    def rules(self) -> Rules:
        return self._env.rules

    def _obs(self) -> dict[str, np.ndarray]:
        td = self._td[0]
        mask = np.zeros(N_ACTIONS, dtype=bool)
        if int(td[K.ROLL]) < N_ROLLS - 1:
            mask[:N_KEEPS] = td[K.KEEP_MASK].numpy()
        else:
            mask[N_KEEPS:] = td[K.BOX_MASK].numpy()
        obs = {k: td[k].numpy().copy() for k in (K.DICE, K.CARD, K.ROLL, K.TURN, K.YAHTZEE_BONUSES, K.SCORE)}
        obs["action_mask"] = mask
        return obs

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self._env.set_seed(seed)
        self._td = self._env.reset()
        obs = self._obs()
        return obs, {"action_mask": obs["action_mask"]}

    def step(self, action: int) -> tuple[dict, float, bool, bool, dict]:
        if self._td is None:
            raise RuntimeError("call reset() before step()")
        action = int(action)
        mask = self._obs()["action_mask"]
        if not 0 <= action < N_ACTIONS:
            raise ValueError(f"action {action} is out of range 0..{N_ACTIONS - 1}")
        if not mask[action]:
            phase = "keep (0..31)" if int(self._td[0][K.ROLL]) < N_ROLLS - 1 else "an open, legal box (32..44)"
            raise ValueError(f"action {action} is illegal now: this decision is {phase}")
        td = self._td.clone()
        keep, box = (action, 0) if action < N_KEEPS else (0, action - N_KEEPS)
        td[K.KEEP] = torch.tensor([keep])
        td[K.BOX] = torch.tensor([box])
        nxt = self._env.step(td)["next"]
        done = bool(nxt[K.DONE])
        reward = float(nxt[K.REWARD])
        self._td = nxt.exclude(K.REWARD, K.DONE, K.TERMINATED)
        obs = self._obs()
        return obs, reward, done, False, {"action_mask": obs["action_mask"]}
