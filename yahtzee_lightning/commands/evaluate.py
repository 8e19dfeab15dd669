"""``yahtzee-lightning evaluate``: any player side by side with the exact optimum."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from .args import (
    MAX_BATCH,
    MAX_GAMES,
    MAX_PLAYERS,
    WHY_BATCH,
    WHY_GAMES,
    WHY_PLAYERS,
    VerbParser,
    add_rules_arguments,
    check_agent_source,
    check_count,
    check_seed,
    device_from_args,
    plain,
    player_rules,
    rules_from_args,
)

if TYPE_CHECKING:  # torch loads after parsing, so that --help answers at once
    pass


def _sees_opponents(player: object) -> bool:
    """A trained agent whose features include the opponents' cards (two-player features)."""
    net = getattr(player, "net", None)
    if net is None:
        return False
    from ..env.features import sees_opponents  # a network's module: TorchRL's imports are paid already

    return sees_opponents(net.feature_names)


def main(argv: list[str] | None = None) -> int:
    parser = VerbParser(
        prog="yahtzee-lightning evaluate",
        description=plain(__doc__),
        epilog="A trained agent is evaluated under the rules it was trained under; rules flags may restate them.",
    )
    parser.add_argument(
        "--agent",
        default="optimal",
        help="optimal, greedy, random, winseeking (matches only), an agent folder or a hub id; endgame:NAME "
        "plays NAME with the exact win-maximising last turn of a match; lookahead:AGENT plays the rest of each "
        "turn exactly against the agent's learned turn-start value (docs/lookahead.md); sb3:PATH plays a "
        "Stable-Baselines3 "
        "model zip trained on the Gymnasium env (yahtzee_lightning/Yahtzee-v0): loading it unpickles parts of "
        "that file, so name only files you trust",
    )
    parser.add_argument("--games", type=int, default=10_000, help="games to play (default: 10000)")
    parser.add_argument("--seed", type=int, default=0, help="the same seed plays the same dice (default: 0)")
    parser.add_argument("--device", default="cpu", help="torch device to play on: cpu, cuda, cuda:1 ... (default: cpu)")
    add_rules_arguments(parser)
    parser.add_argument("--no-optimal", action="store_true", help="skip the optimal player's column")
    parser.add_argument(
        "--no-regret",
        action="store_true",
        help="skip the regret rows; with --no-optimal too, the exact table is neither read nor solved",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument(
        "--report", default=None, metavar="DIR", help="write JSON, Markdown and PNG plots here (the study extra)"
    )
    parser.add_argument("--players", type=int, default=1, help="2 or more: matches against --opponent")
    parser.add_argument("--opponent", default="random", help="opponent player for --players >= 2 (names as --agent)")
    parser.add_argument(
        "--seat",
        default="alternate",
        choices=["alternate", "first", "second", "random"],
        help="the agent's seat in matches: alternate (default) plays each seat equally often",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=4096,
        help="matches played at a time (default: 4096); the dice depend on it, so compare runs at the same size",
    )
    parser.add_argument(
        "--endgame-check",
        action="store_true",
        help="in matches, also count how often the agent's last-turn keeps agree with the exact win-maximising ones",
    )
    args = parser.parse_args(argv)
    check_count(parser, "--games", args.games, 1, MAX_GAMES, WHY_GAMES)
    check_count(parser, "--batch-size", args.batch_size, 1, MAX_BATCH, WHY_BATCH)
    # 0 or fewer players would otherwise be read as a solo evaluation
    check_count(parser, "--players", args.players, 1, MAX_PLAYERS, WHY_PLAYERS)
    check_seed(args.seed, parser)
    if args.report:  # before the games are played: a file of the user's there is never overwritten
        from ..evaluation.report import report_clashes
        from ..extras import require

        require("study", "--report (its plots)", ("matplotlib",))

        if Path(args.report).is_symlink() or (Path(args.report).exists() and not Path(args.report).is_dir()):
            parser.error(f"--report {args.report}: not a folder (a file or a symbolic link is there)")
        if clash := report_clashes(args.report):
            parser.error(
                f"--report {args.report}: {', '.join(clash)} there was not written by an evaluation report (or was "
                "changed since); choose another folder or move it away"
            )
    check_agent_source(args.agent, parser)  # a hub id that cannot be had: one line before torch loads
    if args.players >= 2:
        check_agent_source(args.opponent, parser, "--opponent")
    device_from_args(args.device, parser)
    rules = rules_from_args(args, parser)

    from ..hub.download import hub_errors, hub_failure
    from ..resolve import resolve_player
    from ..solver.cache import check_table_cache

    try:  # an unknown name, a broken agent folder or an unreachable hub is a usage error, not a traceback
        player = resolve_player(args.agent, rules=rules, device=args.device)
        rules = player_rules(player, args.agent, args, parser)  # a trained agent: its own rules
        opponent = resolve_player(args.opponent, rules=rules, device=args.device) if args.players >= 2 else None
        if args.players < 2 and not (args.no_optimal and args.no_regret):  # what reads the exact table
            check_table_cache(rules)
    except ValueError as e:
        parser.error(str(e))
    except hub_errors() as e:
        parser.error(hub_failure(args.agent, e))
    if args.players < 2 and (player.matches_only or _sees_opponents(player)):
        parser.error(f"{args.agent!r} sees an opponent (two-player features): evaluate it in matches, --players 2")
    if opponent is not None and opponent.rules != rules:
        parser.error(
            f"opponent {args.opponent!r} was trained under rules {opponent.rules.tag()}, "
            f"but {args.agent!r} plays under {rules.tag()}"
        )
    if args.players >= 2:
        from ..evaluation.match import format_match, play_matches

        result = play_matches(
            player,
            opponent,
            args.games,
            args.seed,
            rules,
            args.players,
            learner_seat=args.seat,
            device=args.device,
            batch_size=args.batch_size,
            progress=True,
            endgame_check=args.endgame_check,
        )
        print(json.dumps(result, indent=2) if args.json else format_match(result))
        return 0

    from ..evaluation.protocol import evaluate, to_json
    from ..evaluation.report import format_text, write_report

    result = evaluate(
        player,
        args.games,
        args.seed,
        rules,
        args.device,
        with_optimal=not args.no_optimal,
        regret=not args.no_regret,
        progress=True,
    )
    print(json.dumps(to_json(result), indent=2) if args.json else format_text(result))
    if args.report:
        for path in write_report(result, args.report):
            print(f"wrote {path}")
    return 0
