"""The exact optimal player's dynamic programming: turn-start table and within-turn values."""

from .table import FORMAT_VERSION, OptimalTable, reachable_uppers, solve

__all__ = ["FORMAT_VERSION", "OptimalTable", "reachable_uppers", "solve"]
