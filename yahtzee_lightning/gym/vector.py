"""N games in one object for Gymnasium: a ``gymnasium.vector.VectorEnv`` on the batched engine.

Not N processes nor N single envs: one batch of games on the rules engine, stepped by one call
of tensors, so a step of 4096 games costs about what a step of one does. The spaces, the flat
action (0..31 keep pattern, 32..44 box) and the observation are those of the single-game env
(``yahtzee_lightning.gym.spaces``). Autoreset is **same-step**
(``metadata["autoreset_mode"] == AutoresetMode.SAME_STEP``): a game that ends is restarted in
the same ``step``, which returns the new game's first observation, and the last observation of
the finished one is in ``infos["final_obs"]`` (``infos["_final_obs"]`` says which). That is the
mode Stable-Baselines3 expects too (``yahtzee_lightning.gym.sb3``), and with it no step is
spent on a reset.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from ..game import N_KEEPS, GameState, Rules, engine
from ..game.rules import N_ROLLS
from .single import START_CARDS, TASKS, check_choice, make_rules
from .spaces import MASK_KEY, N_ACTIONS, OBS_KEY, action_space, encode_batch, observation_space, split_actions


class BatchedGames:
    """N games on the engine with flat actions and same-step autoreset: what both vector envs share.

    ``step`` checks the actions (an integer array of shape ``(N,)``, each legal now) and returns
    the next observations, rewards, which games ended, and the last observations of those.
    """

    def __init__(
        self,
        num_envs: int,
        rules: Rules | dict | None = None,
        task: str = "full_game",
        start_card: str = "empty",
        seed: int | None = None,
        **variants: Any,
    ) -> None:
        if not isinstance(num_envs, (int, np.integer)) or isinstance(num_envs, bool) or num_envs < 1:
            raise ValueError(f"num_envs must be an int >= 1, got {num_envs!r}")
        self.num_envs = int(num_envs)
        self.rules = make_rules(rules, variants)  # the rule keywords (joker=...) on top of rules
        self.task = check_choice("task", task, TASKS)
        self.start_card = check_choice("start_card", start_card, START_CARDS)
        self.generator = torch.Generator()
        self.generator.manual_seed(int(np.random.SeedSequence().generate_state(1)[0]) if seed is None else int(seed))
        self.state: GameState | None = None
        self.mask: np.ndarray | None = None

    def _start(self) -> GameState:
        shape = (self.num_envs,)
        card = None
        if self.start_card == "random":
            card = engine.random_partial_cards(shape, self.rules, generator=self.generator)
        return engine.new_games(shape, self.rules, generator=self.generator, card=card)

    def _observe(self) -> dict[str, np.ndarray]:
        obs, mask = encode_batch(self.state, self.rules)
        self.mask = mask.astype(bool)
        return {OBS_KEY: obs, MASK_KEY: mask}

    def reset(self, seed: int | None = None) -> dict[str, np.ndarray]:
        """Every game from its start; ``seed`` reseeds the dice (the same seed plays the same games)."""
        if seed is not None:
            self.generator.manual_seed(int(seed))
        self.state = self._start()
        return self._observe()

    def action_masks(self) -> np.ndarray:
        """``(N, 45)`` bool: the legal actions of every game now."""
        if self.mask is None:
            raise RuntimeError("call reset() before action_masks()")
        return self.mask.copy()

    def check(self, actions: Any) -> np.ndarray:
        """The actions as an int64 array ``(N,)``, or a one-line error naming what is wrong."""
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        a = np.asarray(actions)
        if a.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},) (one per game), got {a.shape}")
        if not np.issubdtype(a.dtype, np.integer):
            raise TypeError(f"actions must be integers 0..{N_ACTIONS - 1}, got dtype {a.dtype}")
        a = a.astype(np.int64)
        bad = np.flatnonzero((a < 0) | (a >= N_ACTIONS))
        if bad.size:
            raise ValueError(f"game {bad[0]}: action {a[bad[0]]} is out of range 0..{N_ACTIONS - 1}")
        illegal = np.flatnonzero(~self.mask[np.arange(self.num_envs), a])
        if illegal.size:
            i = illegal[0]
            phase = "a keep (0..31)" if a[i] >= N_KEEPS else "an open, legal box (32..44)"
            raise ValueError(f"game {i}: action {a[i]} is illegal now: this decision is {phase}")
        return a

    def step(self, actions: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, dict[str, np.ndarray] | None]:
        """``(obs, reward, ended, final_obs)``; ``final_obs`` (the last observations of every game,
        read where ``ended``) is None when no game ended."""
        keep, box = split_actions(self.check(actions))
        state = self.state
        result = engine.step(state, keep, box, self.rules, self.generator)
        ended = result.game_over
        if self.task == "single_turn":
            ended = ended | (state.roll == N_ROLLS - 1)
        self.state = result.state
        reward = result.reward.numpy().astype(np.float32)
        done = ended.numpy()
        final = None
        if done.any():
            final = self._observe()
            self.state = self._start().where(ended, self.state)
        return self._observe(), reward, done, final


class YahtzeeVectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` games of Yahtzee as one Gymnasium vector env (same-step autoreset).

    ``task``: ``full_game`` (39 steps a game) or ``single_turn`` (3 steps from a start card drawn
    by ``start_card``: ``empty`` or ``random``); ``rules``: a ``Rules`` or a dict of its
    fields, with the keywords ``joker``, ``yahtzee_bonus``, ``boxes`` on top (as the single env).
    ``gymnasium.make_vec("yahtzee_lightning/Yahtzee-v0", num_envs=N)`` makes one (the ids'
    vector entry point). ``action_masks()`` gives the legal actions ``(N, 45)`` (bool), as sb3-contrib reads
    them; the same mask is in every observation (``obs["action_mask"]``, int8).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int = 16,
        rules: Rules | dict | None = None,
        task: str = "full_game",
        start_card: str = "empty",
        seed: int | None = None,
        render_mode: str | None = None,
        **variants: Any,
    ) -> None:
        if render_mode is not None:
            raise ValueError(f"render_mode must be None (the vector env does not render), got {render_mode!r}")
        self.games = BatchedGames(num_envs, rules, task, start_card, seed, **variants)
        self.num_envs = self.games.num_envs
        self.single_observation_space = observation_space()
        self.single_action_space = action_space()
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    @property
    def rules(self) -> Rules:
        return self.games.rules

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        return self.games.reset(seed), {}

    def step(self, actions: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, reward, done, final = self.games.step(actions)
        infos: dict[str, Any] = {}
        if final is not None:
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(done):
                final_obs[i] = {k: v[i] for k, v in final.items()}
            infos = {"final_obs": final_obs, "_final_obs": done.copy(), "final_info": {}, "_final_info": done.copy()}
        return obs, reward, done, np.zeros(self.num_envs, dtype=bool), infos

    def action_masks(self) -> np.ndarray:
        """``(N, 45)`` bool: which actions are legal in each game now."""
        return self.games.action_masks()


__all__ = ["BatchedGames", "YahtzeeVectorEnv"]
