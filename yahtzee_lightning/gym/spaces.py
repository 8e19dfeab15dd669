"""The one observation and action layout of every Gymnasium, SB3 and PettingZoo interface.

Actions are one flat ``Discrete(45)``: ``a < 32`` is keep pattern ``a`` (bit i keeps sorted die i,
the same index as the game's keep-pattern table and the TorchRL env's ``keep`` action) and
``32 <= a < 45`` scores box ``a - 32`` (canonical box order, ``ones`` .. ``chance``).

Observations are ``Dict(observation=Box(0, 1, (39,), float32), action_mask=Box(0, 1, (45,), int8))``
(PettingZoo classic's ``observation["action_mask"]`` convention; sb3-contrib's MaskablePPO reads
the same mask as a bool array from ``env.action_masks()``). The ``observation`` vector, in order:

* ``[0:6]`` face counts n_1..n_6 / 5 of the current dice;
* ``[6:19]`` open boxes: 1 where the box is in play and not yet filled;
* ``[19:22]`` one-hot roll index (0: first decision of the turn, 2: the scoring decision);
* ``[22]`` turn / 12 (boxes filled so far), clipped to 1 (13 filled boxes is the final observation);
* ``[23]`` min(upper-section sum / 63, 1): progress towards the upper bonus;
* ``[24]`` 1 if the Yahtzee box holds 50 (under the bonus rule further Yahtzees earn +100);
* ``[25]`` 1 if a joker is active now: the joker rule is on, the dice are a Yahtzee and the
  Yahtzee box is filled;
* ``[26:39]`` for each box, what the current dice would score there now (the box's own points,
  without the Yahtzee or upper bonus), 0 if it is filled or barred, / 50, clipped to 1.

The mask allows every keep while rolling (roll 0 and 1), the legal boxes at the scoring decision
(roll 2), and nothing once every box is filled. ``encode_batch`` encodes a batch of engine
states; the single-game env builds the same vectors from its own state (a test checks they agree).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np
import torch
from gymnasium import spaces

from ..game import N_BOXES, N_KEEPS, OPEN, GameState, Rules, box_options, upper_sum
from ..game.rules import N_FACES, N_ROLLS, UPPER_BONUS_THRESHOLD, YAHTZEE_BOX
from ..game.single import SingleGame
from ..game.tables import tables, take

N_ACTIONS = N_KEEPS + N_BOXES  # 45
FIRST_BOX_ACTION = N_KEEPS  # 32: action 32 + b scores box b
OBS_SIZE = 39
OBS_KEY = "observation"
MASK_KEY = "action_mask"

# Where each part of the observation vector lives.
COUNTS = slice(0, 6)
OPEN_BOXES = slice(6, 19)
ROLL = slice(19, 22)
TURN = 22
UPPER = 23
YAHTZEE_50 = 24
JOKER = 25
BOX_SCORES = slice(26, 39)

# Scales (divisors) of the scalar parts; values above 1 are clipped.
COUNT_SCALE = 5.0
TURN_SCALE = 12.0
UPPER_SCALE = float(UPPER_BONUS_THRESHOLD)
SCORE_SCALE = 50.0


class MaskedDiscrete(spaces.Discrete):
    """``Discrete(45)`` whose ``sample()`` without a mask draws one of the actions legal now.

    Random play (``env.action_space.sample()``) and the random steps of Gymnasium's and SB3's env
    checkers are then legal moves, while a wrong action still raises. It equals, and pickles as, a
    plain ``Discrete(45)`` (a saved model does not drag the env along).
    """

    def __init__(self, current_mask: Callable[[], np.ndarray] | None = None) -> None:
        super().__init__(N_ACTIONS)
        self._current_mask = current_mask

    def sample(self, mask: np.ndarray | None = None, probability: np.ndarray | None = None) -> np.int64:
        if mask is None and probability is None and self._current_mask is not None:
            legal = self._current_mask()
            mask = legal if legal.any() else None
        return super().sample(mask=mask, probability=probability)

    def __reduce__(self) -> tuple:
        return (spaces.Discrete, (self.n,))


def action_space(current_mask: Callable[[], np.ndarray] | None = None) -> spaces.Discrete:
    """``Discrete(45)``: 32 keep patterns, then 13 boxes; given the env's ``current_mask``, its
    ``sample()`` draws legal actions (``MaskedDiscrete``)."""
    return spaces.Discrete(N_ACTIONS) if current_mask is None else MaskedDiscrete(current_mask)


def observation_space(extra: int = 0) -> spaces.Dict:
    """The observation space; ``extra`` appends that many [0, 1] entries (a match's view of the others)."""
    return spaces.Dict(
        {
            OBS_KEY: spaces.Box(0.0, 1.0, (OBS_SIZE + extra,), np.float32),
            MASK_KEY: spaces.Box(0, 1, (N_ACTIONS,), np.int8),
        }
    )


def split_actions(actions: np.ndarray | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat actions ``(N,)`` to the engine's ``(keep, box)`` pair; the slot a step does not use is 0."""
    a = torch.as_tensor(np.asarray(actions), dtype=torch.int64)
    is_box = a >= FIRST_BOX_ACTION
    return torch.where(is_box, 0, a), torch.where(is_box, a - FIRST_BOX_ACTION, 0)


def encode_batch(state: GameState, rules: Rules) -> tuple[np.ndarray, np.ndarray]:
    """Observations ``(N, 39) float32`` and action masks ``(N, 45) int8`` of a batch of engine states.

    Computed in float64 and cast once, as the single-game path does, so both give identical vectors.
    """
    T = tables(state.dice_idx.device)
    card = state.card
    f64 = torch.float64
    counts = take(T.counts, state.dice_idx).to(f64) / COUNT_SCALE
    is_open = (card == OPEN).to(f64)
    roll = torch.nn.functional.one_hot(state.roll.long(), N_ROLLS).to(f64)
    turn = (state.turn.to(f64) / TURN_SCALE).clamp(max=1.0).unsqueeze(-1)
    upper = (upper_sum(card).to(f64) / UPPER_SCALE).clamp(max=1.0).unsqueeze(-1)
    yahtzee_box = card[..., YAHTZEE_BOX]
    holds_50 = (yahtzee_box == 50).to(f64).unsqueeze(-1)
    joker = take(T.is_yahtzee, state.dice_idx) & (yahtzee_box != OPEN) & rules.joker_active
    scores, legal, _ = box_options(state.dice_idx, card, rules)
    scaled = (scores.to(f64) / SCORE_SCALE).clamp(max=1.0)
    obs = torch.cat([counts, is_open, roll, turn, upper, holds_50, joker.to(f64).unsqueeze(-1), scaled], -1)
    over = state.turn >= len(rules.boxes)
    rolling = (state.roll < N_ROLLS - 1) & ~over
    scoring = (state.roll == N_ROLLS - 1) & ~over
    mask = torch.cat([rolling.unsqueeze(-1).expand(*rolling.shape, N_KEEPS), legal & scoring.unsqueeze(-1)], -1)
    return obs.to(torch.float32).cpu().numpy(), mask.to(torch.int8).cpu().numpy()


@cache
def _single_parts() -> tuple[list[list[float]], ...]:
    """The observation's pieces as Python floats, indexed by the state: a list concatenation then
    one ``np.array`` per step is the fast path for one game."""
    f = np.float64  # the same float64 arithmetic as encode_batch, so the float32 casts agree
    counts = (tables("cpu").counts.numpy().astype(f) / COUNT_SCALE).tolist()
    roll = np.eye(N_ROLLS).tolist()
    turn = np.minimum(np.arange(N_BOXES + 1, dtype=f) / TURN_SCALE, 1.0).tolist()
    upper = np.minimum(np.arange(6 * 30 + 1, dtype=f) / UPPER_SCALE, 1.0).tolist()
    score = np.minimum(np.arange(51, dtype=f) / SCORE_SCALE, 1.0).tolist()
    return counts, roll, turn, upper, score


_KEEP_MASK = np.array([1] * N_KEEPS + [0] * N_BOXES, dtype=np.int8)
_NO_KEEP = [0] * N_KEEPS


def encode_single(game: SingleGame) -> tuple[np.ndarray, np.ndarray]:
    """The observation ``(39,) float32`` and action mask ``(45,) int8`` of one game (as ``encode_batch``)."""
    counts, roll, turn, upper, score = _single_parts()
    obs = counts[game.dice] + list(map(float, game.is_open)) + roll[game.roll]
    holds_50 = 1.0 if game.card[YAHTZEE_BOX] == 50 else 0.0
    obs += [turn[game.turn], upper[game.upper], holds_50, 1.0 if game.joker else 0.0]
    obs += map(score.__getitem__, game.values)
    if game.turn >= game.n_turns:
        mask = np.zeros(N_ACTIONS, dtype=np.int8)
    elif game.roll < N_ROLLS - 1:
        mask = _KEEP_MASK.copy()
    else:
        mask = np.array(_NO_KEEP + game.legal, dtype=np.int8)
    return np.array(obs, dtype=np.float32), mask


assert N_FACES + 2 * N_BOXES + N_ROLLS + 4 == OBS_SIZE
