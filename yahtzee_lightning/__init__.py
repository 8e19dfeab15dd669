"""yahtzee_lightning: train, benchmark and share deep-RL Yahtzee agents."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

from .game import Rules

__all__ = ["Rules", "YahtzeeEnv", "__version__"]


def __getattr__(name: str) -> Any:
    # The environment pulls in TorchRL; import it only when asked for.
    if name == "YahtzeeEnv":
        from .env import YahtzeeEnv

        return YahtzeeEnv
    raise AttributeError(f"module 'yahtzee_lightning' has no attribute {name!r}")
