"""Any policy over Gymnasium observations as a player: the same evaluation table as our agents.

``GymPolicyPlayer`` wraps a callable that maps Gymnasium observations (the layout of
``yahtzee_lightning.gym.spaces``) to flat actions, so that ``evaluate`` plays it over
batches of seeded games and scores each of its decisions against the exact optimum.
``sb3_player`` makes one from a Stable-Baselines3 model file (``evaluate --agent
sb3:PATH``). An SB3 zip holds pickled parts (its spaces and policy class): it is read only when
the user names that file, and its spaces must be this env's, or it is refused.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from ..env import keys as K
from ..env.player import Player
from ..game import GameState, Rules, dice_index
from .spaces import MASK_KEY, N_ACTIONS, OBS_KEY, action_space, encode_batch, observation_space, split_actions

Policy = Callable[[dict[str, np.ndarray]], Any]


def state_of(obs: TensorDictBase) -> GameState:
    """The engine's state of the games a player is shown (the env's raw observation)."""
    return GameState(
        dice_idx=dice_index(obs[K.DICE]),
        card=obs[K.CARD],
        roll=obs[K.ROLL],
        turn=obs[K.TURN],
        yahtzee_bonuses=obs[K.YAHTZEE_BONUSES],
    )


class GymPolicyPlayer(Player):
    """A policy over Gymnasium observations as a ``Player``.

    ``policy`` maps a batch of observations (a dict of ``(N, ...)`` arrays: ``observation`` and
    ``action_mask``) to ``N`` actions 0..44; with ``batched=False`` it maps one observation to
    one action and is called once per game. An action that is not legal now is refused in one
    line (the mask is in the observation it was given).
    """

    def __init__(self, policy: Policy, rules: Rules | None = None, name: str = "policy", batched: bool = True) -> None:
        super().__init__(rules)
        self.policy, self.name, self.batched = policy, name, batched

    def actions(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        if self.batched:
            return np.asarray(self.policy(obs)).reshape(-1)
        n = len(obs[MASK_KEY])
        return np.array([np.asarray(self.policy({k: v[i] for k, v in obs.items()})).item() for i in range(n)])

    @torch.no_grad()
    def act(self, obs: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        features, mask = encode_batch(state_of(obs), self.rules)
        gym_obs = {OBS_KEY: features, MASK_KEY: mask}
        n = len(mask)
        a = self.actions(gym_obs)
        if a.shape != (n,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{self.name}: the policy must give {n} integer actions, got {a.dtype} of shape {a.shape}")
        bad = np.flatnonzero((a < 0) | (a >= N_ACTIONS))
        bad = bad if bad.size else np.flatnonzero(~mask.astype(bool)[np.arange(n), a])
        if bad.size:
            i = bad[0]
            raise ValueError(f"{self.name}: game {i}: action {a[i]} is not legal there (legal: its action_mask)")
        keep, box = split_actions(a)
        device = obs[K.CARD].device
        return keep.to(device), box.to(device)


def sb3_player(path: str | Path, rules: Rules | None = None, device: torch.device | str = "cpu") -> GymPolicyPlayer:
    """The deterministic policy of a Stable-Baselines3 model zip (PPO, A2C, DQN, sb3-contrib's
    MaskablePPO ...) as a player. Loading the zip unpickles its spaces and policy class: only
    call this on a file the user named. A model whose spaces are not this env's is refused."""
    path = Path(path)
    if not path.is_file() and path.with_suffix(".zip").is_file():
        path = path.with_suffix(".zip")
    if not path.is_file():
        raise ValueError(f"sb3 model {str(path)!r} is not a file")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"sb3 model {str(path)!r} is not a Stable-Baselines3 zip")
    try:
        from stable_baselines3.common.save_util import load_from_zip_file
    except ImportError as e:
        raise ValueError("sb3: models need stable-baselines3 (pip install stable-baselines3 sb3-contrib)") from e
    data, params, _ = load_from_zip_file(path, device=device)
    if not data or "policy_class" not in data or "policy" not in (params or {}):
        raise ValueError(f"sb3 model {str(path)!r} has no policy (is it a Stable-Baselines3 model zip?)")
    _check_spaces(f"sb3 model {str(path)!r}", data.get("observation_space"), data.get("action_space"))
    policy = data["policy_class"](observation_space(), action_space(), lambda _: 0.0, **data.get("policy_kwargs", {}))
    policy.load_state_dict(params["policy"])
    return sb3_policy_player(policy.to(device), rules, name=f"sb3:{path.name}")


def _check_spaces(what: str, obs_space: Any, act_space: Any) -> None:
    want_obs, want_act = observation_space(), action_space()
    if obs_space != want_obs or act_space != want_act:
        raise ValueError(
            f"{what} was trained on observation space {obs_space} and action space {act_space}, "
            f"not this env's {want_obs} and {want_act}"
        )


def sb3_policy_player(policy: Any, rules: Rules | None = None, name: str = "sb3") -> GymPolicyPlayer:
    """An SB3 policy object (``model.policy``) as a player: its deterministic action, given the
    legal actions where it takes them (sb3-contrib's maskable policies). A policy of other
    observation or action spaces is refused."""
    spaces = getattr(policy, "observation_space", None), getattr(policy, "action_space", None)
    _check_spaces(f"sb3 policy {name!r}", *spaces)
    policy.set_training_mode(False)
    masked = "action_masks" in policy.predict.__code__.co_varnames

    def act(obs: dict[str, np.ndarray]) -> np.ndarray:
        kwargs = {"action_masks": obs[MASK_KEY].astype(bool)} if masked else {}
        return policy.predict(obs, deterministic=True, **kwargs)[0]

    return GymPolicyPlayer(act, rules, name=name)


__all__ = ["GymPolicyPlayer", "sb3_player", "sb3_policy_player", "state_of"]
