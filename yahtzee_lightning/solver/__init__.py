"""The exact optimal player's dynamic programming: turn-start table and within-turn values."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .cache import load_or_solve, table_path
    from .oracle import TurnOracle, choice_regret, turn_state
    from .table import FORMAT_VERSION, OptimalTable, reachable_uppers, solve

__all__ = [
    "FORMAT_VERSION",
    "OptimalTable",
    "TurnOracle",
    "choice_regret",
    "load_or_solve",
    "reachable_uppers",
    "solve",
    "table_path",
    "turn_state",
]
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(["load_or_solve", "table_path"], ".cache"),
        **dict.fromkeys(["TurnOracle", "choice_regret", "turn_state"], ".oracle"),
        **dict.fromkeys(["FORMAT_VERSION", "OptimalTable", "reachable_uppers", "solve"], ".table"),
    },
)
