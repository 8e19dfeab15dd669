"""What the verbs share: the parser that words its errors in one line, bounds on counts and seeds
from the command line, and the rules and device flags."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from ..game import Rules
    from ..players import Player


def plain(doc: str | None) -> str:
    """A module docstring as a verb's ``--help`` description: without reST's double backticks."""
    return (doc or "").replace("``", "")


class VerbParser(argparse.ArgumentParser):
    """A verb's parser: a bad or missing value ends in one line that names it and says where the
    usage is (``VERB --help``), not in the usage block itself."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (usage: {self.prog} --help)\n")


#: The largest counts the verbs take, each with why: every game's record is kept in memory (scores,
#: boxes, regrets), a batch of matches is played at once, a match's turns grow with its seats.
MAX_GAMES = 10_000_000
MAX_BATCH = 1 << 16
MAX_PLAYERS = 8
WHY_GAMES = "every game's record is kept in memory; for more, play several seeds"
WHY_BATCH = "a batch of games is held in memory at once"
WHY_PLAYERS = "a match's length and memory grow with its seats"


def check_count(parser: argparse.ArgumentParser, option: str, value: int, low: int, high: int, why: str) -> None:
    """A count from the command line, within ``low..high``; past ``high``, one line that says why."""
    if value < low:
        parser.error(f"{option} must be >= {low}, got {value}")
    if value > high:
        parser.error(f"{option} must be at most {high:,} ({why}), got {value:,}")


def check_seed(seed: int, parser: argparse.ArgumentParser) -> None:
    """Seeds are offset per game and per rank: keep them well inside torch's 64-bit range."""
    if not 0 <= seed < 2**32:
        parser.error(f"--seed must be in 0..2**32-1, got {seed}")


def add_rules_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--joker", "--rules-joker", default=None, choices=["free", "forced", "off"], help="joker rule (default: free)"
    )
    parser.add_argument("--no-yahtzee-bonus", action="store_true", help="no +100 Yahtzee bonus (and no joker)")
    parser.add_argument("--boxes", type=int, nargs="+", default=None, help="boxes in play (default: all 13)")


def rules_from_args(
    args: argparse.Namespace, parser: argparse.ArgumentParser | None = None, base: Rules | None = None
) -> Rules:
    """The rule variant of the command line: the rules flags given, over ``base`` (default: the
    standard rules). With ``parser``, bad rules end as a usage error."""
    from ..game import Rules

    rules = (base or Rules()).to_dict()
    if args.joker is not None:
        rules["joker"] = args.joker
    if args.no_yahtzee_bonus:
        rules.update(joker="off", yahtzee_bonus=False)
    if args.boxes:
        rules["boxes"] = args.boxes
    try:
        return Rules.from_dict(rules)
    except ValueError as e:
        if parser is None:
            raise
        parser.error(str(e))


def device_from_args(device: str, parser: argparse.ArgumentParser) -> str:
    """``--device`` as given, or a usage error when it is not a device torch can use on this machine."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as e:
        parser.error(f"--device {device!r} is not a device ({e})")
    if dev.type == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device {device}: CUDA is not available on this machine")
    if dev.type == "cuda" and (dev.index or 0) >= torch.cuda.device_count():
        parser.error(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        parser.error(f"--device {device}: MPS is not available on this machine")
    return device


def player_rules(player: Player, name: str, args: argparse.Namespace, parser: argparse.ArgumentParser) -> Rules:
    """The rules to evaluate ``player`` under: its own (a trained agent's: those it was trained
    under), which the rules flags may restate but not change: that is a usage error."""
    wanted = rules_from_args(args, parser, base=player.rules)
    if wanted != player.rules:
        parser.error(
            f"{name!r} was trained under rules {player.rules.tag()}, but the rules flags ask for {wanted.tag()}; "
            "leave them out (--joker, --no-yahtzee-bonus, --boxes) to evaluate it under its own rules"
        )
    return wanted


def check_agent_source(name: str, parser: argparse.ArgumentParser, option: str = "--agent") -> None:
    """A hub id inside a player name (``user/agent``, ``lookahead:user/agent``) fetched, or found in the
    cache, before the players and TorchRL load: an unknown repo or an unreachable hub is one line
    within a fraction of a second, not after seconds of imports. Built-in names, local folders and
    shipped agents pass untouched (the player's own loading checks them)."""
    import re

    source = name
    while re.match(r"^[a-z]+:", source) and not source.startswith("sb3:"):  # lookahead:, endgame:, ...
        source = source.split(":", 1)[1]
    if source.startswith("sb3:") or "/" not in source or Path(source).exists():
        return
    from ..shipped import agent as shipped_agent

    if shipped_agent(source) is not None:
        return
    from ..hub.download import hub_errors, hub_failure, resolve_folder

    try:
        resolve_folder(source)
    except ValueError as e:  # no such folder nor repo, or a damaged download: the loader's own words
        parser.error(f"{option} {name}: {e}" if source != name else str(e))
    except hub_errors() as e:
        parser.error(hub_failure(source, e))


def copy_hint(name: str) -> str:
    """For a verb that writes into an agent folder given a shipped agent's name: how to get a copy of
    one's own (the package's folder is not the user's to change)."""
    from ..shipped import agent as shipped_agent

    if Path(name).exists() or shipped_agent(name) is None:
        return ""
    return f"; {name} is a shipped agent: copy it first (yahtzee-lightning pull {name} my-agent) and give my-agent"
