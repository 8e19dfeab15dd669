"""One game for a person, alone or against an agent, with the optimum's verdict on every choice.

The game runs on the package's own environments: ``YahtzeeEnv`` for solitaire, and
``MultiPlayerYahtzeeEnv`` with the person in the learner's seat (first) and the agent as the
opponent, who plays its whole turn inside the person's scoring step. The terminal (``play``) and
the web page (``serve``) both drive this class, so they play and judge the same way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from ..env import keys as K
from ..env.games import Games, Observation
from ..game import BOX_NAMES, N_BOXES, OPEN, Rules
from ..game.rules import N_ROLLS
from ..players.base import Player
from ..solver import OptimalTable
from .advice import KEEP_ALL, Choice, Coach

REGRET_EPS = 1e-9  # below this a choice ties the best one


@dataclass
class Decision:
    """One choice made in the game and the optimum's verdict on it."""

    who: str  # "you" or the agent's name
    dice: tuple[int, ...]
    roll: int
    card: tuple[int, ...]  # before the choice, -1 open
    chosen: Choice
    best: Choice

    @property
    def regret(self) -> float:
        return max(self.best.value - self.chosen.value, 0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "who": self.who,
            "dice": list(self.dice),
            "roll": self.roll,
            "card": list(self.card),
            "chosen": asdict(self.chosen),
            "best": asdict(self.best),
            "regret": self.regret,
        }


def _dice(td: Observation) -> tuple[int, ...]:
    return tuple(int(v) for v in td[K.DICE].reshape(-1))


class _Match:
    """The two-player env stepped as ``Games`` is: the agent's turn runs inside the person's
    scoring step. TorchRL and TensorDict load here, for a game against an agent only."""

    def __init__(self, opponent: Player, rules: Rules, seed: int | None) -> None:
        from ..env.multiplayer import MultiPlayerYahtzeeEnv

        self.env = MultiPlayerYahtzeeEnv(1, opponents=opponent, rules=rules, reward="score", seed=seed)
        self.td: Any = None

    def reset(self) -> Observation:
        self.td = self.env.reset()
        return self.td

    def step(self, keep: torch.Tensor, box: torch.Tensor) -> tuple[Observation, torch.Tensor, torch.Tensor]:
        from tensordict import TensorDict

        action = TensorDict({K.KEEP: keep, K.BOX: box}, batch_size=[1])
        self.td = self.env.step(self.td.clone().update(action))["next"]
        return self.td, self.td[K.REWARD].squeeze(-1), self.td[K.DONE].squeeze(-1)


class _Judged(Player):
    """Wraps the agent: every action it takes inside the environment is judged and logged."""

    def __init__(self, inner: Player, coach: Coach, log: list[Decision]) -> None:
        super().__init__(inner.rules)
        self.inner, self.coach, self.log = inner, coach, log
        self.name = getattr(inner, "name", "agent")

    def act(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor]:
        keep, box = self.inner.act(obs)
        roll = int(obs[K.ROLL].reshape(-1)[0])
        action = int((keep if roll < N_ROLLS - 1 else box).reshape(-1)[0])
        dice, card = _dice(obs), obs[K.CARD].reshape(N_BOXES)
        chosen, best = self.coach.judge(dice, roll, card, action)
        self.log.append(Decision(self.name, dice, roll, tuple(card.tolist()), chosen, best))
        return keep, box


@dataclass
class Side:
    """One player's running totals."""

    name: str
    log: list[Decision] = field(default_factory=list)

    @property
    def regret(self) -> float:
        return sum(d.regret for d in self.log)


class CoachedGame:
    """A game of Yahtzee for one person (and optionally an agent), one decision at a time.

    ``keep(pattern)`` while ``roll < 2``, ``score(box)`` any time: before the third roll it is one
    decision, scoring now with the rolls left unused, judged against the best choice at that roll.
    Each call returns the decisions it made: the person's, then the agent's whole turn after the
    person scored; ``history`` holds every decision of the game in the order it was made.
    """

    def __init__(
        self, rules: Rules, table: OptimalTable, opponent: Player | None = None, seed: int | None = None
    ) -> None:
        if opponent is not None and opponent.rules != rules:
            raise ValueError(f"the agent plays under rules {opponent.rules.tag()}, the game under {rules.tag()}")
        self.rules = rules
        self.coach = Coach(rules, table)
        self.you = Side("you")
        self.agent: Side | None = None
        self.games: Games | _Match
        if opponent is None:
            self.games = Games(1, rules=rules, seed=seed)
        else:
            self.agent = Side(getattr(opponent, "name", "agent"))
            self.games = _Match(_Judged(opponent, Coach(rules, table), self.agent.log), rules, seed)
        self.td: Observation = self.games.reset()
        self.over = False
        self.history: list[Decision] = []

    # ----------------------------------------------------------- position
    @property
    def dice(self) -> tuple[int, ...]:
        return _dice(self.td)

    @property
    def roll(self) -> int:
        return int(self.td[K.ROLL][0])

    @property
    def card(self) -> torch.Tensor:
        return self.td[K.CARD][0]

    @property
    def total(self) -> int:
        """The person's score so far."""
        return int(self.td[K.SCORE][0])

    @property
    def agent_card(self) -> torch.Tensor | None:
        return None if self.agent is None else self.td[K.OPPONENT_CARDS][0, 0]

    @property
    def agent_total(self) -> int | None:
        return None if self.agent is None else int(self.td[K.OPPONENT_SCORES][0, 0])

    @property
    def legal_boxes(self) -> list[int]:
        return [b for b in range(N_BOXES) if bool(self.td[K.BOX_MASK][0, b])]

    def advice(self) -> list[Choice]:
        """The choices of the current position, best first."""
        self._check_playing()
        return self.coach.choices(self.dice, self.roll, self.card)

    # ------------------------------------------------------------ choices
    def keep(self, pattern: int) -> list[Decision]:
        """Keep the dice of ``pattern`` (bit i keeps sorted die i) and roll the others."""
        self._check_playing()
        if self.roll >= N_ROLLS - 1:
            raise ValueError("no roll is left this turn: choose a box to score")
        made = [self._step(pattern, 0)]
        self.history += made
        return made

    def score(self, box: int) -> list[Decision]:
        """Score ``box`` with the dice as they are (after keeping all the rolls left)."""
        self._check_playing()
        if box not in self.legal_boxes:
            why = "is already filled" if int(self.card[box]) != OPEN else "may not take these dice now"
            raise ValueError(f"box {BOX_NAMES[box]} {why}")
        dice, roll, card = self.dice, self.roll, self.card
        chosen, best = self.coach.judge_score_now(dice, roll, card, box)
        decision = Decision(self.you.name, dice, roll, tuple(card.tolist()), chosen, best)
        self.you.log.append(decision)
        for _ in range(roll, N_ROLLS - 1):  # the rolls left unused: the dice kept as they are
            self._advance(KEEP_ALL, 0)
        mark = len(self.agent.log) if self.agent is not None else 0
        self._advance(0, box)
        made = [decision] + (self.agent.log[mark:] if self.agent is not None else [])
        self.history += made
        return made

    def _step(self, keep: int, box: int) -> Decision:
        dice, roll, card = self.dice, self.roll, self.card
        chosen, best = self.coach.judge(dice, roll, card, keep if roll < N_ROLLS - 1 else box)
        decision = Decision(self.you.name, dice, roll, tuple(card.tolist()), chosen, best)
        self.you.log.append(decision)
        self._advance(keep, box)
        return decision

    def _advance(self, keep: int, box: int) -> None:
        """One step of the games with the person's action (the agent's turn runs inside a scoring step)."""
        self.td, _, done = self.games.step(torch.tensor([keep]), torch.tensor([box]))
        self.over = bool(done.all())

    def _check_playing(self) -> None:
        if self.over:
            raise ValueError("the game is over")

    # ------------------------------------------------------------- views
    def to_json(self) -> dict[str, Any]:
        """The game as the web page sees it."""
        state: dict[str, Any] = {
            "rules": self.rules.tag(),
            "boxes": list(BOX_NAMES),
            "in_play": list(self.rules.boxes),
            "dice": list(self.dice),
            "roll": self.roll,
            "card": [int(v) for v in self.card],
            "score": self.total,
            "legal": self.legal_boxes if not self.over else [],
            "over": self.over,
            "regret": self.you.regret,
            "agent": None,
        }
        if self.agent is not None:
            state["agent"] = {
                "name": self.agent.name,
                "card": [int(v) for v in self.agent_card],
                "score": self.agent_total,
                "regret": self.agent.regret,
            }
        return state


def verdict(d: Decision) -> str:
    """One line on a decision: what was chosen, what the optimum does, the expected points lost."""
    what = d.chosen.label if d.chosen.kind == "keep" else f"score {d.chosen.label}"
    if d.chosen.kind == "box" and d.roll < N_ROLLS - 1:
        what += f" after roll {d.roll + 1}"  # scored early: the rolls left unused
    head = f"{d.who}: {what} (dice {' '.join(map(str, d.dice))}) -> {d.chosen.value:.2f} expected to come"
    if d.regret <= REGRET_EPS:
        return f"{head}; optimal"
    best = d.best.label if d.best.kind == "keep" else f"score {d.best.label}"
    return f"{head}; the optimum would {best} ({d.best.value:.2f}): lost {d.regret:.2f}"


def summary(game: CoachedGame) -> list[str]:
    """The end of a game in words: each side's total regret and, against an agent, the result."""
    lines = [f"your total regret: {game.you.regret:.2f} expected points lost"]
    if game.agent is not None:
        a, name = game.agent_total, game.agent.name
        lines.append(f"{name}'s total regret: {game.agent.regret:.2f} expected points lost")
        result = "you win" if game.total > a else ("a draw" if game.total == a else f"{name} wins")
        lines.append(f"{game.total} to {a}: {result}")
    else:
        lines.append(f"your score: {game.total}")
    return lines


__all__ = ["CoachedGame", "Decision", "summary", "verdict"]
