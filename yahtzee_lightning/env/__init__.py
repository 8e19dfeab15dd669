"""The TorchRL environment over the rules engine, its observation features and a Gym view."""

from . import keys
from .yahtzee_env import YahtzeeEnv

__all__ = ["YahtzeeEnv", "keys"]
