"""The file of a paper's published rows (``conf/paper/published.json``) and the checks on reading it.

Per row its table's ``mean``, ``variance``, ``bonus_rate``, ``yahtzee_rate``, ``share_250``,
``games``, and its evaluation log's ``per_box`` ``[mean, variance]`` pairs (13 boxes, the upper
bonus, the total); optionally its ``fill_turn`` (median turns), ``top_by_turn`` (the boxes used most
at each turn) and ``curve`` (its evaluations during training). A file that lacks what the comparison
reads, or holds it in another shape, is refused in one line that names the row and the field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ...game import BOX_NAMES
from ..model import StudyError

#: The table's quantities: its column, our results' column and how a report prints it.
QUANTITIES = (
    ("mean", "mean_score", "mean", 1.0, 2),
    ("variance", "variance", "variance", 1.0, 1),
    ("bonus_rate", "upper_bonus_rate", "bonus %", 100.0, 2),
    ("yahtzee_rate", "yahtzee_rate", "Yahtzee %", 100.0, 2),
    ("share_250", "share_at_least_250", ">= 250 %", 100.0, 2),
)


def load_published(path: str | Path) -> dict[str, Any]:
    """The published rows, checked for what the comparison reads (one line naming what is missing)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
        rows = data["rows"]
        for name, row in rows.items():
            missing = [k for k, *_ in QUANTITIES if not isinstance(row.get(k), (int, float))]
            if missing or len(row.get("per_box", [])) != len(BOX_NAMES) + 2:
                raise StudyError(f"{path}: row {name!r} lacks {missing or 'per_box (13 boxes, bonus, total)'}")
            if "fill_turn" in row and not _is_fill_turns(row["fill_turn"]):
                raise StudyError(f"{path}: row {name!r}: fill_turn must be 13 median turns, each in 1..13")
            if "top_by_turn" in row and not _is_top_by_turn(row["top_by_turn"]):
                raise StudyError(
                    f"{path}: row {name!r}: top_by_turn must be 13 turns, each a list of [box name, share in 0..1]"
                )
            if "curve" in row and not _is_curve(row["curve"]):
                raise StudyError(
                    f"{path}: row {name!r}: curve must be [games, mean score] pairs, games positive and increasing"
                )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        if isinstance(e, StudyError):
            raise
        raise StudyError(f"{path}: not a file of published rows ({type(e).__name__}: {e})") from e
    return data


def _is_fill_turns(turns: Any) -> bool:
    """13 median turns, each in 1..13 (the published logs count the first turn as 1)."""
    n = len(BOX_NAMES)
    return (
        isinstance(turns, list) and len(turns) == n and all(isinstance(t, (int, float)) and 1 <= t <= n for t in turns)
    )


def _is_top_by_turn(turns: Any) -> bool:
    """13 turns, each ``[[box, share], ...]``: a box of ours by name, its share of games in 0..1."""
    return (
        isinstance(turns, list)
        and len(turns) == len(BOX_NAMES)
        and all(
            isinstance(turn, list)
            and all(
                isinstance(pair, list)
                and len(pair) == 2
                and pair[0] in BOX_NAMES
                and isinstance(pair[1], (int, float))
                and 0 <= pair[1] <= 1
                for pair in turn
            )
            for turn in turns
        )
    )


def _is_curve(curve: Any) -> bool:
    """``[[games, mean], ...]``: numbers, games positive and increasing, means finite."""
    if not isinstance(curve, list) or not curve:
        return False
    pairs = [p for p in curve if isinstance(p, list) and len(p) == 2 and all(isinstance(v, (int, float)) for v in p)]
    if len(pairs) != len(curve) or not all(math.isfinite(m) for _, m in pairs):
        return False
    games = [g for g, _ in pairs]
    return games[0] > 0 and all(a < b for a, b in zip(games, games[1:], strict=False))
