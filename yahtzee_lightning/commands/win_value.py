"""``yahtzee-lightning win-value``: learn an agent's chance of winning a two-player match, for ``winlookahead:``.

The agent's look-ahead (``lookahead:AGENT``: it must carry a turn-start value) plays ``games`` games;
any two of them are a match it could have played (it ignores the opponent), so ``pairings`` random
pairings give matches, and at every end of a turn a small network learns the result the match went
on to have (cross-entropy); with ``own_matches``, the new ``winlookahead:`` player then plays that
many matches against itself in the two-player env and the value is fitted again on all. The value
goes into the agent folder (its file, config.json and the card, with a sha256 checked on load). No
solver table and no oracle label enters any loss or any decision.
"""

from __future__ import annotations

import dataclasses
import shlex
import sys
from pathlib import Path

from ..machine import describe_machine
from .args import MAX_GAMES, WHY_GAMES, VerbParser, check_count, check_seed, copy_hint, plain
from .turn_value import load_average

SETTINGS_HELP = {
    "games": "solitaire games of the agent's look-ahead (default 20000)",
    "pairings": "random pairings of those games into matches (default 2)",
    "seed": "seed of the games, pairings and fit (default 0)",
    "hidden": "width of the value's MLP (default 64)",
    "layers": "hidden layers of the value's MLP (default 2)",
    "features": "the value's inputs: compact (a few numbers a side) or full (the whole card too) (default compact)",
    "epochs": "epochs of each fit (default 4)",
    "lr": "Adam's learning rate, decayed to 0 by a cosine (default 0.002)",
    "batch_size": "examples a step (default 4096)",
    "holdout": "share of the examples held out of the fit, where its log loss is measured (default 0.05)",
    "own_matches": "then matches of the win look-ahead against itself, and a second fit on all (default 0)",
}
SETTINGS_TYPES: dict[str, type] = {"lr": float, "holdout": float, "features": str}


def main(argv: list[str] | None = None) -> int:
    parser = VerbParser(
        prog="yahtzee-lightning win-value",
        description=plain(__doc__),
        epilog="example: yahtzee-lightning win-value --config conf/win_value/a2c_best_stage2.yaml",
    )
    parser.add_argument("--agent", default=None, help="a local agent folder with a turn-start value")
    parser.add_argument("--config", default=None, help="a YAML of these settings (flags override it)")
    for name, text in SETTINGS_HELP.items():
        kind = SETTINGS_TYPES.get(name, int)
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, default=None, help=text)
    args = parser.parse_args(argv)
    values: dict = {}
    if args.config:
        from ..untrusted import read_yaml

        try:
            values = read_yaml(args.config, f"--config {args.config}") or {}
        except (OSError, ValueError) as e:
            parser.error(f"--config {args.config}: cannot read it ({e})")
        if not isinstance(values, dict):
            parser.error(f"--config {args.config}: a mapping of settings is expected")
        if unknown := sorted(set(values) - {*SETTINGS_HELP, "agent"}):
            parser.error(
                f"--config {args.config}: unknown settings {unknown}; known: {sorted({*SETTINGS_HELP, 'agent'})}"
            )
    values.update({k: v for k, v in vars(args).items() if v is not None and k in (*SETTINGS_HELP, "agent")})
    agent_dir = values.pop("agent", None)
    if agent_dir is None or not Path(agent_dir).is_dir():
        parser.error(
            f"--agent {agent_dir}: a local agent folder is required (the value is written into it)"
            + copy_hint(agent_dir)
        )
    check_count(parser, "games", values.get("games", 1), 1, MAX_GAMES, WHY_GAMES)
    check_count(parser, "own_matches", values.get("own_matches", 0), 0, MAX_GAMES, WHY_GAMES)
    check_seed(values.get("seed", 0), parser)

    from ..hub import YahtzeeAgent
    from ..hub.win_value import save_win_value
    from ..players.lookahead import lookahead_player
    from ..players.win_lookahead import WinSettings, learn_win_value

    try:
        settings = WinSettings(**values)
        agent = YahtzeeAgent.from_pretrained(agent_dir)
        base = agent.player()
        lookahead = lookahead_player(base, agent_dir)
    except ValueError as e:
        parser.error(str(e))
    load_at_start = load_average()
    net, info = learn_win_value(base, lookahead, settings, agent_dir, log=lambda line: print(line, file=sys.stderr))
    info["command"] = "yahtzee-lightning win-value " + shlex.join(sys.argv[2:] if argv is None else argv)
    info["machine"] = (
        f"{describe_machine()}; load average {load_at_start:.1f} at the start, {load_average():.1f} at the end"
    )
    save_win_value(agent_dir, net, info)
    print(f"wrote the win value into {agent_dir} ({dataclasses.asdict(settings)})")
    return 0
