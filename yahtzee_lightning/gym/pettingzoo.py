"""A match of 2-4 players as a PettingZoo AEC env, and any project player at a seat.

Seats ``player_0`` .. ``player_{P-1}`` play whole turns in seat order (three decisions each: keep,
keep, box), on the same rules engine as ``yahtzee_lightning.gym.single``. Spaces follow
PettingZoo's classic games: ``Discrete(45)`` actions (``yahtzee_lightning.gym.spaces``) and a
dict observation whose ``action_mask`` (45 int8) allows the legal actions of the seat to move
(all zeros for the others). The ``observation`` vector is the solitaire layout's 39 entries of
the seat's own game, then, for each opponent in seat order after it, its 13 open boxes (1 = in
play and open), then the score difference, own score minus the best opponent's, as
``0.5 + diff / 400`` clipped to [0, 1]: ``39 + 13 (P - 1) + 1`` entries, all in [0, 1].

Rewards (``reward=``): ``points`` (default), each step's change of the mover's own total score
(so a seat's return is its final score); ``win``, 0 until the match ends, then +1 for the winner,
-1 for every other seat, 0 for the seats tied for first.

A seat can be played by any ``Player`` of this project
(``optimal``, ``greedy``, ``random``, ``winseeking``, a trained agent's folder or hub id) through
``Seat``; ``play_match`` runs a whole match through the AEC API.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from pettingzoo import AECEnv
from tensordict import TensorDict

from ..env import keys as K
from ..env.player import Player
from ..game import N_BOXES, N_KEEPS, Rules
from ..game.rules import N_ROLLS
from ..game.single import N_CODES, OPEN, SingleGame
from . import spaces
from .single import action_index, illegal_reason, make_rules

REWARDS = ("points", "win")
DIFF_SCALE = 400.0


class YahtzeeAECEnv(AECEnv):
    """Yahtzee for ``n_players`` (2-4) seats taking whole turns in turn; see the module docstring.

    Args:
        n_players: 2, 3 or 4.
        rules: a ``Rules`` or a dict of its fields.
        reward: ``points`` or ``win``.
        render_mode: None or ``ansi``.
        joker, yahtzee_bonus, boxes: rule variants on top of ``rules``.
    """

    metadata = {"name": "yahtzee_lightning_v0", "render_modes": ["ansi"], "is_parallelizable": False}

    def __init__(
        self,
        n_players: int = 2,
        rules: Rules | dict | None = None,
        reward: str = "points",
        render_mode: str | None = None,
        **variants: Any,
    ) -> None:
        super().__init__()
        if not isinstance(n_players, int) or not 2 <= n_players <= 4:
            raise ValueError(f"n_players must be 2, 3 or 4, got {n_players!r}")
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.rules = make_rules(rules, variants)
        self.reward_mode = reward
        self.render_mode = render_mode
        self.possible_agents = [f"player_{i}" for i in range(n_players)]
        self.agents = list(self.possible_agents)
        self.games = {a: SingleGame(self.rules) for a in self.possible_agents}
        extra = N_BOXES * (n_players - 1) + 1
        self._observation_spaces = {a: spaces.observation_space(extra) for a in self.possible_agents}
        self._action_spaces = {a: spaces.action_space() for a in self.possible_agents}
        self._rng = random.Random()
        self.agent_selection = self.possible_agents[0]

    def observation_space(self, agent: str) -> Any:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> Any:
        return self._action_spaces[agent]

    # ------------------------------------------------------------------ state
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self._rng = rng = random.Random(seed)
        self.agents = list(self.possible_agents)
        for game in self.games.values():
            game.start(game.empty_card(), rng.randrange(N_CODES))
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.agents[0]

    def opponents(self, agent: str) -> list[str]:
        """The other seats, in seat order after ``agent``."""
        i = self.possible_agents.index(agent)
        return [self.possible_agents[(i + k) % len(self.possible_agents)] for k in range(1, len(self.possible_agents))]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        game = self.games[agent]
        own, mask = spaces.encode_single(game)
        others = [self.games[o] for o in self.opponents(agent)]
        diff = game.score - max(o.score for o in others)
        extra = [1.0 if c == OPEN else 0.0 for o in others for c in o.card]
        extra.append(min(max(0.5 + diff / DIFF_SCALE, 0.0), 1.0))
        obs = np.concatenate([own, np.array(extra, dtype=np.float32)])
        moving = agent == self.agent_selection and not self.terminations.get(agent, True)
        return {spaces.OBS_KEY: obs, spaces.MASK_KEY: mask if moving else np.zeros_like(mask)}

    def action_mask(self, agent: str) -> np.ndarray:
        """The legal actions of ``agent`` now, ``(45,) bool`` (none unless it is the seat to move)."""
        return self.observe(agent)[spaces.MASK_KEY].astype(bool)

    # ---------------------------------------------------------------- actions
    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        a, game = action_index(action), self.games[agent]
        mask = spaces.encode_single(game)[1]
        if not 0 <= a < spaces.N_ACTIONS or not mask[a]:
            raise ValueError(f"{agent}: {illegal_reason(game, a)}")
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {x: 0.0 for x in self.agents}
        code = self._rng.randrange(N_CODES)
        if a < spaces.FIRST_BOX_ACTION:
            game.keep(a, code)
        else:
            points = game.score_box(a - spaces.FIRST_BOX_ACTION, code)
            if self.reward_mode == "points":
                self.rewards[agent] = float(points)
            if all(g.over for g in self.games.values()):
                self._finish()
            else:
                self.agent_selection = self.opponents(agent)[0]
        self._accumulate_rewards()

    def _finish(self) -> None:
        scores = {a: self.games[a].score for a in self.agents}
        best = max(scores.values())
        if self.reward_mode == "win":
            top = [a for a in self.agents if scores[a] == best]
            for a in self.agents:
                self.rewards[a] = 0.0 if a in top and len(top) > 1 else (1.0 if a in top else -1.0)
        for a in self.agents:
            self.terminations[a] = True
            self.infos[a] = {"score": scores[a], "winner": scores[a] == best}

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        lines = []
        for a in self.possible_agents:
            g, here = self.games[a], ">" if a == self.agent_selection else " "
            card = " ".join("-" if c == OPEN else str(c) for b, c in enumerate(g.card) if b in self.rules.boxes)
            lines.append(f"{here} {a}: score {g.score:3d} | dice {g.faces} roll {g.roll} | {card}")
        return "\n".join(lines)

    def close(self) -> None:
        pass


class Seat:
    """A project player at a seat: ``seat(env, agent)`` is that player's flat action for ``agent``.

    ``player`` is a ``Player``: a name (``optimal``, ``greedy``,
    ``random``, ``winseeking``, an agent folder or hub id) becomes one through
    ``resolve_player``, which sits above these envs. It sees what the
    TorchRL match env shows a seat: its own game and the opponents' cards and scores.
    """

    def __init__(self, player: Player, device: torch.device | str = "cpu") -> None:
        if isinstance(player, str):
            raise TypeError(
                f"Seat({player!r}): a seat takes a Player; make one of a name with "
                "yahtzee_lightning.resolve.resolve_player(name, rules)"
            )
        self.player = player
        self.device = torch.device(device)

    def observation(self, env: YahtzeeAECEnv, agent: str) -> TensorDict:
        """The raw observation (the TorchRL env's keys) of ``agent``'s game, a batch of one."""
        game, others = env.games[agent], [env.games[o] for o in env.opponents(agent)]

        def t(x: Any, dtype: torch.dtype = torch.int64) -> torch.Tensor:
            return torch.tensor([x], dtype=dtype, device=self.device)

        cards = [o.card for o in others]
        scores = [o.score for o in others]
        return TensorDict(
            {
                K.DICE: t(game.faces),
                K.CARD: t(game.card),
                K.ROLL: t(game.roll),
                K.TURN: t(game.turn),
                K.YAHTZEE_BONUSES: t(game.yahtzee_bonuses),
                K.SCORE: t(game.score),
                K.KEEP_MASK: torch.ones(1, N_KEEPS, dtype=torch.bool, device=self.device),
                K.BOX_MASK: t(game.legal, torch.bool),
                K.OPPONENT_CARDS: t(cards),
                K.OPPONENT_SCORES: t(scores),
                K.OPPONENT_UPPER_SUMS: t([o.upper for o in others]),
                K.SCORE_DIFF: t(game.score - max(scores)),
                K.SEAT: t(env.possible_agents.index(agent)),
            },
            batch_size=[1],
            device=self.device,
        )

    def __call__(self, env: YahtzeeAECEnv, agent: str) -> int:
        keep, box = self.player.act(self.observation(env, agent))
        game = env.games[agent]
        return int(keep[0]) if game.roll < N_ROLLS - 1 else spaces.FIRST_BOX_ACTION + int(box[0])


SeatPolicy = Callable[[YahtzeeAECEnv, str], int]


def play_match(env: YahtzeeAECEnv, seats: Mapping[str, SeatPolicy], seed: int | None = None) -> dict[str, int]:
    """Play one whole match through the AEC API (``agent_iter``, ``last``, ``step``): ``seats`` maps
    every agent to a callable ``(env, agent) -> action`` (a ``Seat``, or any function of the
    observation). Returns each seat's final score."""
    missing = sorted(set(env.possible_agents) - set(seats))
    if missing:
        raise ValueError(f"no player for seat(s) {missing}")
    env.reset(seed=seed)
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else seats[agent](env, agent))
    return {a: g.score for a, g in env.games.items()}
