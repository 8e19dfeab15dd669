"""Names to players: the one place where a player name, an agent folder or a hub id becomes a player.

It sits above the hub (it loads agents) and below what reads names from a config or a command
line (the algorithms' opponents, the CLIs), so that the env and the players need know neither.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch

from . import shipped
from .game import Rules
from .players import PLAYERS, Player, make_player

SB3_PREFIX = "sb3:"  # a Stable-Baselines3 model zip: yahtzee_lightning.gym.policy.sb3_player


def agent_source(name_or_path: str) -> str:
    """Where an agent named by a user lives: the path as given where it exists, else the shipped agent
    of that name (from any folder, or an installed package), else the name (a hub id)."""
    if not Path(name_or_path).exists() and (ours := shipped.agent(name_or_path)) is not None:
        return str(ours)
    return name_or_path


def load_agent(name_or_path: str, device: torch.device | str = "cpu", rules: Rules | None = None) -> Player:
    """A trained agent's player from a local agent folder or a hub id (``user/name``), or
    ``sb3:PATH``: a Stable-Baselines3 model zip, played under ``rules`` (it knows none of its own).
    An SB3 zip holds pickled parts, so it is only ever loaded from a path the user names."""
    if name_or_path.startswith(SB3_PREFIX):
        from .gym.policy import sb3_player

        return sb3_player(name_or_path.removeprefix(SB3_PREFIX), rules, device)
    name_or_path = agent_source(name_or_path)
    if Path(name_or_path).exists() or "/" in name_or_path:
        from .hub import YahtzeeAgent  # networks and TensorDict load with the first agent

        return YahtzeeAgent.from_pretrained(name_or_path).player(device=device)
    raise ValueError(
        f"unknown player {name_or_path!r}: not one of {sorted(PLAYERS)}, a folder, a hub id nor {SB3_PREFIX}PATH; "
        f"shipped agents: {', '.join(shipped.agent_names())}"
    )


def resolve_player(name_or_path: str, rules: Rules | None = None, device: torch.device | str = "cpu") -> Player:
    """``optimal``, ``greedy``, ``random``, ``winseeking``, ``endgame:NAME``, ``lookahead:AGENT`` (see
    ``make_player``), a trained agent (a local agent folder or a hub
    id), or ``sb3:PATH`` (a Stable-Baselines3 model zip on the Gymnasium layout)."""
    return make_player(name_or_path, rules, device, load=partial(load_agent, rules=rules))


def player_factory(name_or_path: str, rules: Rules, device: torch.device | str) -> Callable[[], Player]:
    """A callable that makes a fresh player of that name each time: one per opponent seat of an env."""
    return partial(resolve_player, name_or_path, rules, device)


__all__ = ["agent_source", "load_agent", "player_factory", "resolve_player"]
