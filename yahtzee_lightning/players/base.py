"""One interface for every player: optimal, greedy, random and trained agents.

The interface itself is defined with the env (``yahtzee_lightning.env.player``), which takes
players for the other seats of a match; it is importable from here, where the players live.
"""

from ..env.player import Player

__all__ = ["Player"]
