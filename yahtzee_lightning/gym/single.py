"""One game of Yahtzee as a ``gymnasium.Env``, on the pure-Python single-game engine.

Registered as ``yahtzee_lightning/Yahtzee-v0`` (the full game) and
``yahtzee_lightning/YahtzeeSingleTurn-v0`` (one turn from a random card)::

    import gymnasium, yahtzee_lightning
    env = gymnasium.make("yahtzee_lightning/Yahtzee-v0", joker="forced")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(int(obs["action_mask"].argmax()))

The spaces are ``yahtzee_lightning.gym.spaces``'s (``Discrete(45)``; a dict of the 39-entry
``observation`` and the 45-entry ``action_mask``); ``action_masks()`` gives the mask as bools for
sb3-contrib's MaskablePPO. The reward of a step is the change in total score (a box's points, the
upper bonus when reached, +100 per bonus Yahtzee), so an episode's return is the game's score
(in the single-turn task, the points of that turn). The rules are those of the batched engine,
which a test checks move by move.
"""

from __future__ import annotations

import random
from typing import Any

import gymnasium
import numpy as np

from ..game import BOX_NAMES, Rules
from ..game.rules import N_ROLLS, TASKS
from ..game.single import N_CODES, SingleGame
from . import spaces

START_CARDS = ("empty", "random")
RULE_KEYWORDS = ("joker", "yahtzee_bonus", "boxes")


def make_rules(rules: Rules | dict | None, variants: dict[str, Any]) -> Rules:
    """``rules`` (a Rules or a dict of its fields) with the keyword variants on top; an unknown
    keyword is refused by name."""
    unknown = sorted(set(variants) - set(RULE_KEYWORDS))
    if unknown:
        raise TypeError(f"unknown keyword {unknown[0]!r}; the env takes rules, task, start_card, {RULE_KEYWORDS}")
    base = (rules if isinstance(rules, Rules) else Rules.from_dict(rules)).to_dict()
    return Rules.from_dict({**base, **{k: v for k, v in variants.items() if v is not None}})


def check_choice(name: str, value: str, options: tuple[str, ...]) -> str:
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def action_index(action: Any) -> int:
    """A Discrete action as an int: a Python or numpy integer, or a 0-d / one-element integer array."""
    if type(action) is int:
        return action
    if isinstance(action, np.ndarray) and action.size == 1 and action.ndim <= 1:
        action = action.reshape(())[()]
    if isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)):
        return int(action)
    shape = f" of shape {action.shape}" if hasattr(action, "shape") else ""
    raise TypeError(f"an action is one integer 0..{spaces.N_ACTIONS - 1}, got {type(action).__name__}{shape}")


def illegal_reason(game: SingleGame, a: int) -> str:
    """Why flat action ``a`` is not legal in ``game`` now, in one line."""
    if not 0 <= a < spaces.N_ACTIONS:
        return f"action {a} is out of range 0..{spaces.N_ACTIONS - 1}"
    if game.over:
        return f"action {a}: every box is filled"
    if game.roll < N_ROLLS - 1:
        return f"action {a} scores box {BOX_NAMES[a - spaces.FIRST_BOX_ACTION]}, but this decision is a keep (0..31)"
    if a < spaces.FIRST_BOX_ACTION:
        return f"action {a} is a keep, but this decision scores a box (32..44)"
    box = a - spaces.FIRST_BOX_ACTION
    why = "is already filled" if game.card[box] != -1 else "is barred by the forced joker rule"
    return f"action {a} scores box {BOX_NAMES[box]}, which {why}"


class YahtzeeGymEnv(gymnasium.Env):
    """One game at a time: 32 keep actions, 13 box actions, the mask in the observation.

    Args:
        rules: a ``Rules`` or a dict of its fields.
        task: ``full_game`` (an episode is a whole game: 3 decisions a turn) or ``single_turn``
            (an episode is one turn: 3 decisions).
        start_card: ``empty`` or ``random`` (a random, partly filled card, as the TorchRL env draws).
        render_mode: None or ``ansi`` (the dice and the card as text).
        joker, yahtzee_bonus, boxes: rule variants on top of ``rules``.

    ``reset(seed=s)`` replays the same games for the same ``s``. An illegal action (a box that is
    filled or barred, a keep at the scoring decision) raises ``ValueError`` naming it; a
    non-integer action raises ``TypeError``.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        rules: Rules | dict | None = None,
        task: str = "full_game",
        start_card: str = "empty",
        render_mode: str | None = None,
        **variants: Any,
    ) -> None:
        self.rules = make_rules(rules, variants)
        self.task = check_choice("task", task, TASKS)
        self.start_card = check_choice("start_card", start_card, START_CARDS)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.render_mode = render_mode
        self.action_space = spaces.action_space(lambda: self._mask)  # sample() draws legal actions
        self.observation_space = spaces.observation_space()
        self.game = SingleGame(self.rules)
        self._rng = random.Random(0)
        self._mask = np.zeros(spaces.N_ACTIONS, dtype=np.int8)
        self._done = True

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self._rng = rng = random.Random(int(self.np_random.integers(2**62)))
        game = self.game
        card = game.random_card(rng) if self.start_card == "random" else game.empty_card()
        game.start(card, rng.randrange(N_CODES))
        self._done = False
        return self._observe(), {}

    def _observe(self) -> dict[str, np.ndarray]:
        obs, self._mask = spaces.encode_single(self.game)
        return {spaces.OBS_KEY: obs, spaces.MASK_KEY: self._mask}

    def action_masks(self) -> np.ndarray:
        """The legal actions now, ``(45,) bool`` (what sb3-contrib's MaskablePPO reads)."""
        return self._mask.astype(bool)

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        a = action_index(action)
        game = self.game
        if self._done:
            raise RuntimeError("the episode is over: call reset() before step()")
        if not 0 <= a < spaces.N_ACTIONS or not self._mask[a]:
            raise ValueError(illegal_reason(game, a))
        if a < spaces.FIRST_BOX_ACTION:
            game.keep(a, self._rng.randrange(N_CODES))
            reward = 0
        else:
            reward = game.score_box(a - spaces.FIRST_BOX_ACTION, self._rng.randrange(N_CODES))
            self._done = game.turn >= game.n_turns or self.task == "single_turn"
        return self._observe(), float(reward), self._done, False, {}

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        g = self.game
        dice = " ".join(str(v) for v in g.faces)
        boxes = self.rules.boxes
        card = ", ".join(f"{BOX_NAMES[b]}={'-' if c == -1 else c}" for b, c in enumerate(g.card) if b in boxes)
        return f"turn {g.turn} roll {g.roll}: dice {dice} | {card} | score {g.score}"
