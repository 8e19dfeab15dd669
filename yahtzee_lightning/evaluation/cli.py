"""``yahtzee-lightning evaluate``: any player side by side with the exact optimum."""

from __future__ import annotations

import argparse
import json

from ..game import Rules


def add_rules_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--joker", "--rules-joker", default="free", choices=["free", "forced", "off"], help="joker rule"
    )
    parser.add_argument("--no-yahtzee-bonus", action="store_true", help="no +100 Yahtzee bonus (and no joker)")
    parser.add_argument("--boxes", type=int, nargs="+", default=None, help="boxes in play (default: all 13)")


def rules_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> Rules:
    """The rule variant of the command line; with ``parser``, bad rules end as a usage error."""
    joker = "off" if args.no_yahtzee_bonus else args.joker
    boxes = tuple(args.boxes) if args.boxes else tuple(range(13))
    try:
        return Rules(joker=joker, yahtzee_bonus=not args.no_yahtzee_bonus, boxes=boxes)
    except ValueError as e:
        if parser is None:
            raise
        parser.error(str(e))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="yahtzee-lightning evaluate", description=__doc__)
    parser.add_argument("--agent", default="optimal", help="optimal, greedy, random, an agent folder or a hub id")
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    add_rules_arguments(parser)
    parser.add_argument("--no-optimal", action="store_true", help="skip the optimal player's column")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--report", default=None, metavar="DIR", help="write JSON, Markdown and PNG plots here")
    parser.add_argument("--players", type=int, default=1, help="2 or more: matches against --opponent")
    parser.add_argument("--opponent", default="random", help="opponent player for --players >= 2")
    args = parser.parse_args(argv)
    if args.games < 1:
        parser.error(f"--games must be >= 1, got {args.games}")
    rules = rules_from_args(args, parser)

    from ..players import make_player

    try:  # an unknown name or a broken agent folder is a usage error, not a traceback
        player = make_player(args.agent, rules=rules, device=args.device)
        opponent = make_player(args.opponent, rules=rules, device=args.device) if args.players >= 2 else None
    except ValueError as e:
        parser.error(str(e))
    if args.players >= 2:
        from .match import format_match, play_matches

        result = play_matches(player, opponent, args.games, args.seed, rules, args.players, device=args.device)
        print(json.dumps(result, indent=2) if args.json else format_match(result))
        return 0

    from .protocol import evaluate, to_json
    from .report import format_text, write_report

    result = evaluate(
        player, args.games, args.seed, rules, args.device, with_optimal=not args.no_optimal, progress=True
    )
    print(json.dumps(to_json(result), indent=2) if args.json else format_text(result))
    if args.report:
        for path in write_report(result, args.report):
            print(f"wrote {path}")
    return 0
