"""yahtzee_lightning: train, benchmark and share deep-RL Yahtzee agents."""

from __future__ import annotations

from importlib.util import find_spec
from typing import TYPE_CHECKING

from ._lazy import lazy_exports
from ._version import __version__

if TYPE_CHECKING:
    from .env import YahtzeeEnv
    from .game import Rules
    from .hub import YahtzeeAgent

# The Gymnasium ids (gymnasium only: torch loads when an env is made), so gymnasium.make finds them;
# where the gym extra is installed (the base install has no gymnasium).
if find_spec("gymnasium") is not None:
    from .gym import register_envs

    register_envs()

__all__ = ["Rules", "YahtzeeAgent", "YahtzeeEnv", "__version__"]

# Torch, TorchRL and the hub client load only when one of these is first used.
__getattr__ = lazy_exports(__name__, {"Rules": ".game", "YahtzeeEnv": ".env", "YahtzeeAgent": ".hub"})
