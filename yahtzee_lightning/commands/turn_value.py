"""``yahtzee-lightning turn-value``: learn an agent's turn-start value from its own games, for ``lookahead:``.

The agent plays ``games`` games; a small network learns the points that followed each turn start
(then, with ``td_rounds``, its own one-turn backups); the value goes into the agent folder (its
file, config.json and the card, with a sha256 checked on load). No solver table and no oracle
label enters any loss: the exact table is read afterwards only for the diagnostic (``--no-diagnostic``
skips it), and by ``--evaluate N`` for the regret of the look-ahead player against the network alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from ..machine import describe_machine
from ..shipped import agent as shipped_agent
from .args import MAX_GAMES, WHY_GAMES, VerbParser, check_count, check_seed, copy_hint, plain

#: The learning settings (``ValueSettings``' fields), each a flag and a YAML key, with what it sets.
SETTINGS_HELP = {
    "games": "self-play games of the agent (default 50000)",
    "seed": "seed of the self-play games and of the fit (default 0)",
    "hidden": "width of the value's MLP (default 256)",
    "layers": "hidden layers of the value's MLP (default 2)",
    "epochs": "epochs of the regression on the points that followed each turn start (default 10)",
    "lr": "Adam's learning rate, decayed to 0 by a cosine in each fit (default 0.001)",
    "batch_size": "states a step (default 2048)",
    "td_rounds": "then rounds of one-turn TD: the value fitted to its own backups (default 16)",
    "td_epochs": "epochs of each TD round (default 6)",
    "td_holdout": "share of the games held out of every fit, where each round's error to its own backups is "
    "measured (default 0: none)",
    "td_keep": "'last' round's value, or the 'best': lowest held-out error to its own backups (default last)",
    "play": "how the agent plays its self-play games: 'mode' (its most likely action) or 'sample' (drawn from "
    "its policy: more varied turn starts) (default mode)",
    "warm_start": "begin the TD rounds from the value the agent carries, of the same width (more rounds, on "
    "fresh games where the seed differs), instead of the returns regression (default: no)",
}
#: The settings that are not integers.
SETTINGS_TYPES: dict[str, type] = {"lr": float, "td_holdout": float, "td_keep": str, "play": str, "warm_start": bool}
SETTINGS_FLAGS = tuple(SETTINGS_HELP)


def read_config(path: str, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The YAML's settings (``ValueSettings`` fields, ``agent``, ``diagnostic_games``, ``evaluate``), or a
    usage error naming the file and the unknown keys."""
    from ..untrusted import read_yaml

    try:
        data = read_yaml(path, f"--config {path}") or {}
    except (OSError, ValueError) as e:
        parser.error(f"--config {path}: cannot read it ({e})")
    if not isinstance(data, dict):
        parser.error(f"--config {path}: a mapping of settings is expected")
    known = {*SETTINGS_FLAGS, "agent", "games_from", "diagnostic_games", "evaluate"}
    if unknown := sorted(set(data) - known):
        parser.error(f"--config {path}: unknown settings {unknown}; known: {sorted(known)}")
    return data


def diagnostic(value, player, games: int, seed: int) -> dict[str, Any]:
    """The value against the exact table (a diagnostic, never a label): error over the turn starts of
    ``games`` fresh self-play games, and at the empty card."""
    from ..players.lookahead import self_play_turns
    from ..solver import load_or_solve
    from ..solver.value import value_table

    exact = load_or_solve(player.rules, progress=False)
    learned = value_table(value, player.rules)
    states, _ = self_play_turns(player, games, seed, player.rules)
    m, u, f = states.unbind(-1)
    err = learned[m, u, f] - exact.values[m, u, f]
    start = exact.start_mask
    return {
        "against": "the exact table (diagnostic only, read after learning)",
        "states": f"turn starts of {games:,} fresh self-play games (seed {seed})",
        "bias": round(float(err.mean()), 3),
        "rmse": round(float(err.square().mean().sqrt()), 3),
        "mean_abs": round(float(err.abs().mean()), 3),
        "empty_card": round(float(learned[start, 0, 0]), 3),
        "optimum": round(exact.optimum, 3),
    }


def rounds_file(agent_dir: str) -> Path:
    """Where a value being learned for ``agent_dir`` is kept between TD rounds: a hidden file beside
    the folder (not in it: the folder holds the agent's own files only)."""
    folder = Path(agent_dir).resolve()
    return folder.parent / f".{folder.name}.turn-value-rounds.safetensors"


def load_average() -> float:
    """The machine's one-minute load average (0 where the system gives none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def main(argv: list[str] | None = None) -> int:
    parser = VerbParser(
        prog="yahtzee-lightning turn-value",
        description=plain(__doc__),
        epilog="example: yahtzee-lightning turn-value --config conf/turn_value/a2c_best_stage2.yaml",
    )
    parser.add_argument(
        "--agent", default=None, help="a local agent folder: it plays, and the value is written into it"
    )
    parser.add_argument(
        "--games-from",
        default=None,
        help="the agent folder whose self-play games the value learns from (default: --agent itself), for an "
        "agent that carries the value of the agent it was taught from",
    )
    parser.add_argument("--config", default=None, help="a YAML of these settings (flags override it)")
    for name in SETTINGS_FLAGS:
        kind = SETTINGS_TYPES.get(name, int)
        flag = f"--{name.replace('_', '-')}"
        if kind is bool:  # --warm-start / --no-warm-start: either overrides the YAML; neither leaves it
            parser.add_argument(
                flag, dest=name, action=argparse.BooleanOptionalAction, default=None, help=SETTINGS_HELP[name]
            )
        else:
            parser.add_argument(flag, dest=name, type=kind, default=None, help=SETTINGS_HELP[name])
    parser.add_argument("--diagnostic-games", type=int, default=None, help="games for the diagnostic (default 2000)")
    parser.add_argument("--no-diagnostic", action="store_true", help="never read the exact table")
    parser.add_argument("--evaluate", type=int, default=None, help="then evaluate lookahead and the network alone")
    parser.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    args = parser.parse_args(argv)
    values = read_config(args.config, parser) if args.config else {}
    named = (*SETTINGS_FLAGS, "agent", "games_from")
    values.update({k: v for k, v in vars(args).items() if v is not None and k in named})
    for key in ("diagnostic_games", "evaluate"):
        if getattr(args, key) is not None:
            values[key] = getattr(args, key)
    agent_dir = values.pop("agent", None)
    if agent_dir is None:
        parser.error("--agent (or agent: in --config) is required: the agent folder that plays")
    if not Path(agent_dir).is_dir():
        parser.error(
            f"--agent {agent_dir}: not a local agent folder (the value is written into it){copy_hint(agent_dir)}"
        )
    games_from = values.pop("games_from", None)
    if games_from is not None and not Path(games_from).is_dir() and shipped_agent(games_from) is None:
        parser.error(f"--games-from {games_from}: not a local agent folder, nor a shipped agent's name")
    diagnostic_games, evaluate_games = values.pop("diagnostic_games", 2000), values.pop("evaluate", 0)
    check_count(parser, "diagnostic_games", diagnostic_games, 1, MAX_GAMES, WHY_GAMES)
    check_count(parser, "evaluate", evaluate_games, 0, MAX_GAMES, WHY_GAMES)
    check_count(parser, "games", values.get("games", 1), 1, MAX_GAMES, WHY_GAMES)
    check_seed(values.get("seed", 0), parser)

    from ..digest import VALUE_DIGEST
    from ..evaluation.protocol import lookahead_comparison
    from ..hub import YahtzeeAgent
    from ..players.lookahead import ValueSettings, learn_turn_value, lookahead_player
    from .args import device_from_args

    device_from_args(args.device, parser)
    try:
        agent = YahtzeeAgent.from_pretrained(agent_dir)
        if values.get("warm_start"):
            if agent.turn_value is None:
                parser.error(
                    f"--warm-start: {agent_dir} carries no turn-start value to start from "
                    f"(learn one first: yahtzee-lightning turn-value --agent {agent_dir})"
                )
            # The value's own shape, unless given (then a mismatch is refused, naming both).
            values = {"hidden": agent.turn_value.hidden, "layers": agent.turn_value.layers, **values}
        settings = ValueSettings(**values)
        games_agent = YahtzeeAgent.from_pretrained(games_from) if games_from is not None else agent
    except ValueError as e:
        parser.error(str(e))
    player = agent.player(device=args.device)
    playing = games_agent.player(device=args.device, greedy=settings.play == "mode")  # its self-play games
    if playing.rules != player.rules:
        parser.error(f"--games-from {games_from}: it plays rules {playing.rules.tag()}, the agent {player.rules.tag()}")
    load_at_start = load_average()
    rounds = rounds_file(agent_dir)
    print(f"the value is saved after every TD round in {rounds}: run the same command again to resume", file=sys.stderr)
    try:
        value, info = learn_turn_value(
            playing,
            settings,
            args.device,
            log=lambda line: print(line, file=sys.stderr),
            init=agent.turn_value,
            rounds_file=rounds,
            games_of=str(Path(games_from or agent_dir).resolve()),
        )
    except ValueError as e:
        parser.error(str(e))
    if games_from is not None:
        info["games_from"] = games_from
    before = agent.turn_value_info or {}
    if "taught_by" in before:  # an expert-iteration agent: its value is still its teacher's, learned further
        info["taught_by"] = before["taught_by"]
    if settings.warm_start:
        keep = ("method", "command", "seconds", "turn_starts", "td_residual", "kept_round", VALUE_DIGEST)
        info["warm_start_from"] = {k: before[k] for k in keep if k in before}
    info["command"] = "yahtzee-lightning turn-value " + shlex.join(sys.argv[2:] if argv is None else argv)
    if not args.no_diagnostic:
        info["diagnostic"] = diagnostic(value, player, diagnostic_games, settings.seed + 1)
        print(f"against the exact table (diagnostic): {info['diagnostic']}", file=sys.stderr)
    agent.turn_value, agent.turn_value_info = value, info
    player = agent.player(device=args.device)
    if evaluate_games:
        info["evaluation"] = lookahead_comparison(
            player, lambda: lookahead_player(player, agent_dir, args.device), evaluate_games
        )
    # Its seconds and the look-ahead's time a game mean little without the machine and how busy it was.
    info["machine"] = (
        f"{describe_machine()}; load average {load_at_start:.1f} at the start, {load_average():.1f} at the end"
    )
    agent.save_turn_value(agent_dir)
    print(f"wrote the turn-start value into {agent_dir} ({dataclasses.asdict(settings)})")
    return 0
