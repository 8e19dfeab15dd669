"""The evaluation protocol, its report, and two-player matches."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .protocol import THRESHOLDS, evaluate, play_games, play_single_turns, summarize, to_json

__all__ = ["THRESHOLDS", "evaluate", "play_games", "play_single_turns", "summarize", "to_json"]
__getattr__ = lazy_exports(__name__, dict.fromkeys(__all__, ".protocol"))
