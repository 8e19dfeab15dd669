"""One interface for every player, and a factory by name or path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from ..game import Rules
from .base import Player
from .endgame import EndgamePlayer
from .reference import GreedyPlayer, OptimalPlayer, OraclePlayer, RandomPlayer
from .winseeking import WinSeekingPlayer

ENDGAME_PREFIX = "endgame:"
PLAYERS: dict[str, Callable[..., Player]] = {
    "optimal": OptimalPlayer,
    "greedy": GreedyPlayer,
    "random": RandomPlayer,
    "winseeking": WinSeekingPlayer,
}


def make_player(name_or_path: str, rules: Rules | None = None, device: torch.device | str = "cpu") -> Player:
    """``optimal``, ``greedy``, ``random``, ``winseeking`` (matches only: the optimal player's moves
    re-weighed for the chance of winning), or a trained agent: a local agent folder or a hub id.

    ``endgame:NAME`` is NAME's player switching to the exact win-maximising move on its last turn
    of a match (:class:`EndgamePlayer`).
    """
    rules = rules or Rules()
    if name_or_path.startswith(ENDGAME_PREFIX):
        return EndgamePlayer(make_player(name_or_path.removeprefix(ENDGAME_PREFIX), rules, device))
    if name_or_path in PLAYERS:
        return PLAYERS[name_or_path](rules=rules, device=device)
    try:
        from ..hub import YahtzeeAgent
    except ImportError as e:  # pragma: no cover - the hub package ships with the library
        raise ValueError(f"unknown player {name_or_path!r}; known: {sorted(PLAYERS)}") from e
    if Path(name_or_path).exists() or "/" in name_or_path:
        agent = YahtzeeAgent.from_pretrained(name_or_path)
        return agent.player(device=device)
    raise ValueError(f"unknown player {name_or_path!r}: not one of {sorted(PLAYERS)}, a folder, nor a hub id")


__all__ = [
    "PLAYERS",
    "EndgamePlayer",
    "GreedyPlayer",
    "OptimalPlayer",
    "OraclePlayer",
    "Player",
    "RandomPlayer",
    "WinSeekingPlayer",
    "make_player",
]
