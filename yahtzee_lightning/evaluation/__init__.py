"""The evaluation protocol, its report, and two-player matches."""

from .protocol import THRESHOLDS, evaluate, play_games, play_single_turns, summarize, to_json

__all__ = ["THRESHOLDS", "evaluate", "play_games", "play_single_turns", "summarize", "to_json"]
