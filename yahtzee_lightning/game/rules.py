"""Rule variants of solitaire Yahtzee, as configuration rather than forks."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

BOX_NAMES: tuple[str, ...] = (
    "ones",
    "twos",
    "threes",
    "fours",
    "fives",
    "sixes",
    "three_of_a_kind",
    "four_of_a_kind",
    "full_house",
    "small_straight",
    "large_straight",
    "yahtzee",
    "chance",
)
N_BOXES = 13
N_DICE = 5
N_FACES = 6
N_KEEPS = 32  # keep patterns: bit i keeps die i (dice sorted ascending)
N_ROLLS = 3  # decisions per turn: keep, keep, score
#: What an episode is: a whole game of 13 turns, or one turn (the single-turn task).
TASKS = ("full_game", "single_turn")
UPPER_BONUS_THRESHOLD = 63
UPPER_BONUS = 35
YAHTZEE_BONUS = 100
YAHTZEE_BOX = 11
FULL_HOUSE, SMALL_STRAIGHT, LARGE_STRAIGHT = 8, 9, 10
JOKER_VALUES = {FULL_HOUSE: 25, SMALL_STRAIGHT: 30, LARGE_STRAIGHT: 40}
JOKER_MODES = ("free", "forced", "off")


def episode_unit(task: str) -> str:
    """What a task's training counts: a single-turn episode is one turn, and calling it a game
    reads as thirteen times the training."""
    return "turns" if task == "single_turn" else "games"


def episodes_text(count: float, task: str) -> str:
    """A count of episodes in the task's own unit: ``3,380,000 turns``, ``250,000 games``."""
    return f"{count:,.0f} {episode_unit(task)}"


@dataclass(frozen=True)
class Rules:
    """Which official-rule options are on.

    joker: ``free`` (any open box; full house and the straights score 25/30/40 only once the
    Yahtzee's own upper box is filled: the rule behind the published 254.5896), ``forced`` (own
    upper box first, then lower boxes at joker values, then upper boxes for 0) or ``off``.
    yahtzee_bonus: +100 for each further Yahtzee while the Yahtzee box holds 50;
    with it off there is no joker either. boxes: the box indices in play (the others start
    filled with 0), for studies of reduced games.
    """

    joker: str = "free"
    yahtzee_bonus: bool = True
    boxes: tuple[int, ...] = field(default=tuple(range(N_BOXES)))

    def __post_init__(self) -> None:
        if self.joker not in JOKER_MODES:
            raise ValueError(f"Rules.joker must be one of {JOKER_MODES}, got {self.joker!r}")
        if not isinstance(self.yahtzee_bonus, bool):
            raise ValueError(f"Rules.yahtzee_bonus must be a bool, got {self.yahtzee_bonus!r}")
        boxes = tuple(sorted(set(int(b) for b in self.boxes)))
        if not boxes or any(b < 0 or b >= N_BOXES for b in boxes):
            raise ValueError(f"Rules.boxes must be a non-empty subset of 0..12, got {self.boxes!r}")
        object.__setattr__(self, "boxes", boxes)

    @property
    def joker_active(self) -> bool:
        """A joker exists only with the Yahtzee bonus on and the joker rule not off."""
        return self.yahtzee_bonus and self.joker != "off"

    @property
    def n_turns(self) -> int:
        return len(self.boxes)

    @property
    def boxes_out_of_play(self) -> tuple[int, ...]:
        return tuple(b for b in range(N_BOXES) if b not in self.boxes)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["boxes"] = list(self.boxes)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Rules:
        if d is None:
            return cls()
        unknown = set(d) - {"joker", "yahtzee_bonus", "boxes"}
        if unknown:
            raise ValueError(f"unknown rule keys {sorted(unknown)}; known: joker, yahtzee_bonus, boxes")
        kw = dict(d)
        if "boxes" in kw and kw["boxes"] is not None:
            kw["boxes"] = tuple(kw["boxes"])
        elif "boxes" in kw:
            kw.pop("boxes")
        return cls(**kw)

    def tag(self) -> str:
        """A short, stable name for file names and metadata."""
        t = f"joker-{self.joker}_bonus-{'on' if self.yahtzee_bonus else 'off'}"
        if self.boxes != tuple(range(N_BOXES)):
            t += "_boxes-" + "-".join(str(b) for b in self.boxes)
        return t
