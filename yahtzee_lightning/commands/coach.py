"""``yahtzee-lightning play | advise | serve``: play against an agent and learn from the exact optimum."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, TextIO

from .args import VerbParser, add_rules_arguments, check_agent_source, check_seed, player_rules, rules_from_args

if TYPE_CHECKING:  # torch, the solver and the players load after parsing, so that --help answers at once
    from ..game import Rules
    from ..players.base import Player
    from ..solver import OptimalTable


def _table(rules: Rules) -> OptimalTable:
    from ..solver import load_or_solve, table_path

    if not table_path(rules).exists():
        print(f"solving the optimal table for {rules.tag()} once (a few seconds; cached after)...", file=sys.stderr)
    return load_or_solve(rules, progress=False)


def _setup(args: argparse.Namespace, parser: argparse.ArgumentParser) -> tuple[Rules, OptimalTable, Player | None]:
    """The game's rules (an agent's own), the optimal table and the opponent, or a usage error."""
    if args.seed is not None:  # a negative seed would otherwise fail deep inside torch, or not at all
        check_seed(args.seed, parser)
    rules = rules_from_args(args, parser)
    opponent = None
    if args.opponent:
        from ..resolve import resolve_player

        try:
            opponent = resolve_player(args.opponent, rules=rules)
        except (ValueError, OSError) as e:
            parser.error(str(e))
        rules = player_rules(opponent, args.opponent, args, parser)
    from ..solver.cache import check_table_cache

    try:
        check_table_cache(rules)
    except ValueError as e:
        parser.error(str(e))
    return rules, _table(rules), opponent


def _game_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--opponent", default=None, help="optimal, greedy, random, an agent folder or a hub id")
    parser.add_argument("--seed", type=int, default=None, help="repeat a game (default: fresh random dice)")
    add_rules_arguments(parser)


def play_main(argv: list[str] | None = None, inp: TextIO | None = None, out: TextIO | None = None) -> int:
    """A game in the terminal; exit 0 at the end or on 'quit'/end of input, 130 on Ctrl-C."""
    parser = VerbParser(
        prog="yahtzee-lightning play",
        description="Play Yahtzee in the terminal, alone or against an agent; after every choice the exact "
        "optimum says what it would do and how many expected points the choice lost.",
    )
    _game_arguments(parser)
    args = parser.parse_args(argv)
    if args.opponent:  # a hub id that cannot be had: one line before the game's imports
        check_agent_source(args.opponent, parser, "--opponent")
    from ..coach.game import CoachedGame
    from ..coach.terminal import Quit, play

    inp, out = inp or sys.stdin, out or sys.stdout
    try:
        rules, table, opponent = _setup(args, parser)
        play(CoachedGame(rules, table, opponent, seed=args.seed), inp, out)
    except KeyboardInterrupt:
        out.write("\nleft the game (Ctrl-C)\n")
        return 130
    except (EOFError, Quit):
        out.write("\nleft the game\n")
    return 0


def _agent_table(name: str, rules: Rules, card: str) -> OptimalTable:
    """The turn-start values a look-ahead player searches against at ``card`` (its own, never the
    exact table), read for that card's turn."""
    from ..coach.advice import parse_card
    from ..players import LookaheadPlayer
    from ..resolve import resolve_player

    player = resolve_player(name, rules=rules)
    if not isinstance(player, LookaheadPlayer):
        raise ValueError(f"--agent {name}: only a look-ahead player (lookahead:AGENT) has values of its own to rank by")
    player.prepare(parse_card(card, player.rules).view(1, -1))
    return player.oracle.table


def advise_main(argv: list[str] | None = None) -> int:
    """Ranked choices of a position typed by hand; bad input is one line on stderr and exit 2."""
    parser = VerbParser(
        prog="yahtzee-lightning advise",
        description="Rank every choice of a position by its expected points to come under optimal play "
        "(this turn's points included), or, with --agent lookahead:AGENT, under that agent's own turn-start value.",
        epilog='example: yahtzee-lightning advise --card "ones=3 sixes=24" --dice 6 6 4 2 1 --roll 1',
    )
    parser.add_argument("--card", default="", help='filled boxes as BOX=SCORE, e.g. "ones=3 sixes=24" (default: empty)')
    parser.add_argument("--dice", nargs="+", required=True, help="the five dice, e.g. 6 6 4 2 1")
    parser.add_argument(
        "--roll", type=int, required=True, choices=[0, 1, 2], help="0/1: after the first/second roll (keeps), 2: score"
    )
    parser.add_argument("--top", type=int, default=None, help="show only the best N choices")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--agent",
        default=None,
        help="lookahead:AGENT: rank by the agent's own values (the exact rest of the turn, its learned "
        "turn-start value at the end) instead of the exact optimum's",
    )
    add_rules_arguments(parser)
    args = parser.parse_args(argv)
    if args.top is not None and args.top < 1:
        parser.error(f"--top must be >= 1, got {args.top}")
    if args.agent:  # a hub id that cannot be had: one line before torch loads
        check_agent_source(args.agent, parser)
    rules = rules_from_args(args, parser)
    from ..coach.advice import Coach, format_choices, parse_card, parse_dice
    from ..solver.cache import check_table_cache

    table = None
    try:
        if args.agent:
            table = _agent_table(args.agent, rules, args.card)
            rules = table.rules
        card = parse_card(args.card, rules)
        dice = parse_dice(args.dice)
        if table is None:
            check_table_cache(rules)
    except (ValueError, OSError) as e:
        print(f"yahtzee-lightning advise: {e}", file=sys.stderr)
        return 2
    choices = Coach(rules, table or _table(rules)).choices(dice, args.roll, card)
    if not choices:
        print("yahtzee-lightning advise: no box may take these dice on this card", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([asdict(c) for c in choices[: args.top]], indent=2))
    else:
        what = "keeps" if args.roll < 2 else "boxes"
        whose = f"{args.agent}'s own values (its learned turn-start value)" if args.agent else "the exact optimum"
        print(f"{what} for dice {' '.join(map(str, dice))} at roll {args.roll} ({rules.tag()}), ranked by {whose}:")
        print(format_choices(choices, args.top))
    return 0


def serve_main(argv: list[str] | None = None) -> int:
    """Serve the game page on 127.0.0.1 until Ctrl-C."""
    parser = VerbParser(
        prog="yahtzee-lightning serve",
        description="Play the coached game in a browser: a local page on 127.0.0.1 with clickable dice.",
    )
    parser.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0: any free port)")
    _game_arguments(parser)
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0..65535, got {args.port}")
    if args.opponent:
        check_agent_source(args.opponent, parser, "--opponent")
    from ..coach.game import CoachedGame
    from ..coach.server import CoachServer

    rules, table, opponent = _setup(args, parser)

    def new_game(seed: int | None) -> CoachedGame:
        return CoachedGame(rules, table, opponent, seed=args.seed if seed is None else seed)

    try:
        server = CoachServer(new_game, args.port)
    except OSError as e:
        print(f"yahtzee-lightning serve: cannot listen on 127.0.0.1:{args.port}: {e.strerror}", file=sys.stderr)
        return 2
    print(f"open {server.url} in a browser (Ctrl-C stops the server)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("\nstopped")
    finally:
        server.server_close()
    return 0
