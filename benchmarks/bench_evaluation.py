"""Evaluation speed: 10,000 games of the optimal, greedy and random players (and an agent folder).

python benchmarks/bench_evaluation.py [--games 10000] [--agent checkpoints/NAME] [--json out.json]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from yahtzee_lightning.evaluation import play_games, summarize
from yahtzee_lightning.game import Rules
from yahtzee_lightning.resolve import resolve_player
from yahtzee_lightning.solver import load_or_solve

sys.path.insert(0, str(Path(__file__).parent))
from _common import write_json  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--agent", action="append", default=[], help="an agent folder or hub id (repeatable)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rules = Rules()
    load_or_solve(rules, args.device, progress=False)  # the table is built once, not timed here
    rows = []
    print(f"{'player':<28} {'seconds':>8} {'games/s':>9} {'mean':>8}")
    for name in ["random", "greedy", "optimal", *args.agent]:
        player = resolve_player(name, rules, args.device)
        start = time.perf_counter()
        s = summarize(play_games(player, args.games, 0, rules, args.device), rules)
        seconds = time.perf_counter() - start
        rows.append(
            {"player": name, "seconds": seconds, "games_per_s": args.games / seconds, "mean": s["score"]["mean"]}
        )
        print(f"{name:<28} {seconds:>8.2f} {args.games / seconds:>9.0f} {s['score']['mean']:>8.2f}", flush=True)
    write_json(args.json, "evaluation", rows, games=args.games, device=args.device)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
