"""The exact optimal player's dynamic programming: turn-start table and within-turn values."""

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
