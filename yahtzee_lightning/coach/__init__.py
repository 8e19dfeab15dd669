"""Play and advise: a person plays Yahtzee (alone or against an agent) and learns from the exact optimum.

``CoachedGame`` is the game both front ends drive (the terminal's ``play`` and the web
page of ``serve``); ``Coach`` ranks the choices of any position (``advise``). The game
module (it needs the environments) is imported on first use, so ``advise`` stays light.
"""

from typing import Any

from .advice import Choice, Coach, keep_pattern, parse_box, parse_card, parse_dice

__all__ = ["Choice", "Coach", "CoachedGame", "Decision", "keep_pattern", "parse_box", "parse_card", "parse_dice"]


def __getattr__(name: str) -> Any:
    if name in ("CoachedGame", "Decision"):
        from . import game

        return getattr(game, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
