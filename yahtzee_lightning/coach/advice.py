"""What a person types and what the exact optimum says about it.

Parsing of keeps (the dice values to keep, ``66 4``), boxes (names, unambiguous prefixes,
aliases) and hand-typed cards, and ``Coach``: every choice of a position ranked by its
expected points to come under the optimal table. Scores, legality and values all come from the
rules engine and the solver; nothing here scores dice.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import torch

from ..game import BOX_NAMES, N_BOXES, N_DICE, N_KEEPS, OPEN, Rules, dice_index, tables
from ..game.rules import N_ROLLS
from ..solver import OptimalTable, TurnOracle

KEEP_ALL = N_KEEPS - 1  # every bit set: the dice stay

# Short names people use for boxes, on top of any unambiguous prefix of the box names.
ALIASES: dict[str, str] = {
    "aces": "ones",
    **{str(face): name for face, name in enumerate(BOX_NAMES[:6], start=1)},
    "3k": "three_of_a_kind",
    "3oak": "three_of_a_kind",
    "toak": "three_of_a_kind",
    "4k": "four_of_a_kind",
    "4oak": "four_of_a_kind",
    "foak": "four_of_a_kind",
    "fh": "full_house",
    "ss": "small_straight",
    "sm": "small_straight",
    "ls": "large_straight",
    "lg": "large_straight",
    "yz": "yahtzee",
}


def _normal(text: str) -> str:
    return "_".join(text.strip().lower().replace("-", " ").replace("_", " ").split())


def parse_box(text: str) -> int:
    """Box index of a name, alias or unambiguous prefix (``sixes``, ``6``, ``fh``, ``full``, ``lar``)."""
    word = _normal(text)
    if not word:
        raise ValueError("no box named; type a box name such as 'sixes', 'full_house' or 'chance'")
    if word in ALIASES:
        word = ALIASES[word]
    matches = [name for name in BOX_NAMES if name == word] or [name for name in BOX_NAMES if name.startswith(word)]
    if len(matches) == 1:
        return BOX_NAMES.index(matches[0])
    if matches:
        raise ValueError(f"{text.strip()!r} is ambiguous: it could be {', '.join(matches)}")
    raise ValueError(f"no box called {text.strip()!r}; boxes: {', '.join(BOX_NAMES)}")


def parse_dice(values: list[str] | str) -> tuple[int, ...]:
    """Five face values 1..6 (``"6 6 4 2 1"``, ``"66421"`` or a list of strings), sorted."""
    text = values if isinstance(values, str) else " ".join(values)
    digits = [c for c in text if not c.isspace() and c != ","]
    if not all(c.isdigit() and "1" <= c <= "6" for c in digits):
        raise ValueError(f"dice must be face values 1..6, got {text.strip()!r}")
    if len(digits) != N_DICE:
        raise ValueError(f"need {N_DICE} dice, got {len(digits)} ({text.strip()!r})")
    return tuple(sorted(int(c) for c in digits))


def keep_pattern(text: str, dice: tuple[int, ...]) -> int:
    """The keep pattern (0..31, bit i keeps sorted die i) of the typed dice values to keep.

    ``66 4`` keeps two sixes and a four; ``all`` keeps every die; ``none`` or ``-`` re-rolls all.
    """
    word = text.strip().lower()
    if word == "all":
        return KEEP_ALL
    if word in ("none", "-", "0"):
        return 0
    if not word:
        raise ValueError("type the dice to keep, e.g. '66 4', or 'none' to re-roll all, 'all' to keep all")
    if not all(c.isdigit() or c.isspace() or c == "," for c in word):
        raise ValueError(f"{text.strip()!r} is not a keep: type the dice values to keep, e.g. '66 4'")
    wanted = [int(c) for c in word if c.isdigit()]
    pattern, free = 0, list(range(len(dice)))
    for value in wanted:
        i = next((i for i in free if dice[i] == value), None)
        if i is None:
            have = " ".join(map(str, dice))
            raise ValueError(f"cannot keep {' '.join(map(str, sorted(wanted)))}: the dice are {have}")
        free.remove(i)
        pattern |= 1 << i
    return pattern


def kept_dice(pattern: int, dice: tuple[int, ...]) -> tuple[int, ...]:
    """The dice values a keep pattern keeps."""
    return tuple(d for i, d in enumerate(dice) if (pattern >> i) & 1)


def describe_keep(pattern: int, dice: tuple[int, ...]) -> str:
    kept = kept_dice(pattern, dice)
    if len(kept) == len(dice):
        return "keep all"
    return "keep " + " ".join(map(str, kept)) if kept else "re-roll all"


@cache
def _possible_scores(box: int) -> frozenset[int]:
    """Every score the engine can write in ``box`` (base and joker rows), for checking typed cards."""
    return frozenset(int(v) for v in tables().score_rows[:, box].unique()) | {0}


def parse_card(text: str, rules: Rules) -> torch.Tensor:
    """A card ``(13,)`` from ``"ones=3 sixes=24 yahtzee=50"``: boxes not named are open.

    Boxes out of play under ``rules`` are filled with 0 and may not be named.
    """
    card = torch.full((N_BOXES,), OPEN, dtype=torch.int64)
    for b in rules.boxes_out_of_play:
        card[b] = 0
    for item in text.replace(",", " ").split():
        name, sep, value = item.partition("=")
        if not sep or not value.strip().lstrip("-").isdigit():
            raise ValueError(f"card entry {item!r} is not BOX=SCORE (e.g. sixes=24)")
        box, score = parse_box(name), int(value)
        if box in rules.boxes_out_of_play:
            raise ValueError(f"box {BOX_NAMES[box]} is not in play under rules {rules.tag()}")
        if card[box] != OPEN:
            raise ValueError(f"box {BOX_NAMES[box]} is given twice")
        if score not in _possible_scores(box):
            raise ValueError(f"{BOX_NAMES[box]}={score} is impossible: {BOX_NAMES[box]} never scores {score}")
        card[box] = score
    if bool((card != OPEN).all()):
        raise ValueError("the card is full: no choice is left to advise on")
    return card


@dataclass(frozen=True)
class Choice:
    """One choice of a position and its expected points to come (this turn's points included)."""

    kind: str  # "keep" or "box"
    action: int  # keep pattern 0..31 or box 0..12
    label: str  # "keep 6 6", "sixes"
    value: float


class Coach:
    """Ranks the choices of positions by the exact optimum's expected points to come.

    Keeps that leave the same dice (``6`` from either six) are one choice. One coach per player
    keeps the oracle's per-turn cache warm.
    """

    def __init__(self, rules: Rules, table: OptimalTable) -> None:
        self.rules = rules
        self.oracle = TurnOracle(rules, table)

    def choices(self, dice: tuple[int, ...], roll: int, card: torch.Tensor) -> list[Choice]:
        """Every legal choice at ``roll`` (keeps at 0 and 1, boxes at 2), best first."""
        d = torch.tensor([dice], dtype=torch.int64)
        keep_values, box_values = self.oracle.action_values(d, torch.tensor([roll]), card.reshape(1, N_BOXES))
        if roll < N_ROLLS - 1:
            kept = tables().keep_to_kept[dice_index(d)[0]]
            seen: dict[int, Choice] = {}
            for pattern in range(N_KEEPS):
                m = int(kept[pattern])
                if m not in seen:
                    seen[m] = Choice("keep", pattern, describe_keep(pattern, dice), float(keep_values[0, pattern]))
            out = list(seen.values())
        else:
            values = box_values[0]  # -inf where the box may not take these dice
            out = [Choice("box", b, BOX_NAMES[b], float(v)) for b, v in enumerate(values) if bool(v.isfinite())]
        return sorted(out, key=lambda c: -c.value)

    def judge(self, dice: tuple[int, ...], roll: int, card: torch.Tensor, action: int) -> tuple[Choice, Choice]:
        """``(chosen, best)`` for the action taken at this position; regret = best.value - chosen.value."""
        ranked = self.choices(dice, roll, card)
        kind = "keep" if roll < N_ROLLS - 1 else "box"
        if kind == "keep":
            kept = tables().keep_to_kept[dice_index(torch.tensor(dice))]
            chosen = next(c for c in ranked if int(kept[c.action]) == int(kept[action]))
        else:
            chosen = next((c for c in ranked if c.action == action), None)
            if chosen is None:
                raise ValueError(f"box {BOX_NAMES[action]} cannot be scored now")
        return chosen, ranked[0]

    def judge_score_now(self, dice: tuple[int, ...], roll: int, card: torch.Tensor, box: int) -> tuple[Choice, Choice]:
        """``(chosen, best)`` for scoring ``box`` with these dice at ``roll``, rolls left unused: one
        decision, worth the box's value with these dice, against the best choice at this roll."""
        if roll >= N_ROLLS - 1:
            return self.judge(dice, roll, card, box)
        chosen = self.judge(dice, N_ROLLS - 1, card, box)[0]
        return chosen, self.choices(dice, roll, card)[0]


def format_choices(choices: list[Choice], limit: int | None = None) -> str:
    """The ranked choices as a small table: rank, choice, expected points to come, loss against the best."""
    best = choices[0].value if choices else 0.0
    rows = [f"  {'#':>2}  {'choice':<22}{'expected':>10}{'loss':>8}"]
    for i, c in enumerate(choices[:limit], start=1):
        rows.append(f"  {i:>2}  {c.label:<22}{c.value:>10.2f}{best - c.value:>8.2f}")
    return "\n".join(rows)
