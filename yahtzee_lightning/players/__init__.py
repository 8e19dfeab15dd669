"""One interface for every player, and a factory by name.

Agent folders and hub ids are resolved a layer above, where the hub is known
(``yahtzee_lightning.resolve.resolve_player``): the players know no hub.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..game import Rules
from .base import Player
from .endgame import EndgamePlayer
from .lookahead import LOOKAHEAD_PREFIX, LookaheadPlayer, lookahead_player
from .reference import GreedyPlayer, OptimalPlayer, OraclePlayer, RandomPlayer
from .win_lookahead import WIN_LOOKAHEAD_PREFIX, WinLookaheadPlayer, win_lookahead_player
from .winseeking import WinSeekingPlayer

ENDGAME_PREFIX = "endgame:"
PLAYERS: dict[str, Callable[..., Player]] = {
    "optimal": OptimalPlayer,
    "greedy": GreedyPlayer,
    "random": RandomPlayer,
    "winseeking": WinSeekingPlayer,
}


def make_player(
    name_or_path: str,
    rules: Rules | None = None,
    device: torch.device | str = "cpu",
    load: Callable[[str, torch.device | str], Player] | None = None,
) -> Player:
    """``optimal``, ``greedy``, ``random``, ``winseeking`` (matches only: the optimal player's moves
    re-weighed for the chance of winning); any other name goes to ``load`` (``resolve.load_agent``:
    an agent folder or a hub id), and without it is refused.

    ``endgame:NAME`` is NAME's player switching to the exact win-maximising move on its last turn
    of a match (``EndgamePlayer``). ``lookahead:AGENT`` plays every keep and box by the exact
    expectation over the rest of the turn with the agent's learned turn-start value at its end
    (``LookaheadPlayer``; the agent must carry one). ``winlookahead:AGENT`` (two-player
    matches) does the same with the agent's learned chance of winning at the turn's end
    (``WinLookaheadPlayer``; the agent must carry a turn-start value and a win value).
    """
    rules = rules or Rules()
    if name_or_path.startswith(ENDGAME_PREFIX):
        return EndgamePlayer(make_player(name_or_path.removeprefix(ENDGAME_PREFIX), rules, device, load))
    if name_or_path.startswith(WIN_LOOKAHEAD_PREFIX):
        name = name_or_path.removeprefix(WIN_LOOKAHEAD_PREFIX)
        return win_lookahead_player(make_player(name, rules, device, load), name, device)
    if name_or_path.startswith(LOOKAHEAD_PREFIX):
        name = name_or_path.removeprefix(LOOKAHEAD_PREFIX)
        return lookahead_player(make_player(name, rules, device, load), name, device)
    if name_or_path in PLAYERS:
        return PLAYERS[name_or_path](rules=rules, device=device)
    if load is None:
        raise ValueError(
            f"unknown player {name_or_path!r}: not one of {sorted(PLAYERS)} "
            "(agent folders and hub ids: yahtzee_lightning.resolve.resolve_player)"
        )
    return load(name_or_path, device)


__all__ = [
    "PLAYERS",
    "EndgamePlayer",
    "GreedyPlayer",
    "LookaheadPlayer",
    "OptimalPlayer",
    "OraclePlayer",
    "Player",
    "RandomPlayer",
    "WinLookaheadPlayer",
    "WinSeekingPlayer",
    "make_player",
]
