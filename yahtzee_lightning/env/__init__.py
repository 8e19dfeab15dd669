"""The TorchRL environment over the rules engine, its observation features and a Gym view."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from . import keys
    from .yahtzee_env import YahtzeeEnv

__all__ = ["YahtzeeEnv", "keys"]
__getattr__ = lazy_exports(__name__, {"YahtzeeEnv": ".yahtzee_env"})
