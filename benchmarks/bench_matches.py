"""Match players against the same opponent on the same matches, with paired intervals.

python benchmarks/bench_matches.py --player winlookahead:checkpoints/a2c-best-stage2-128x2 \
    --player lookahead:checkpoints/a2c-best-stage2-128x2 --opponent optimal --games 40000 [--json out.json]

Each player plays exactly the matches of ``yahtzee-lightning evaluate --agent PLAYER --players 2
--opponent OPP --games N --seed S --batch-size B`` (the same env seeds, seats alternated), one
match's result kept each, so that beside each win rate (wins only, and wins + draws / 2, each with
a 95 % normal interval) the difference of every player from the first is paired match by match.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

from yahtzee_lightning.env import keys as K
from yahtzee_lightning.env.multiplayer import MultiPlayerYahtzeeEnv
from yahtzee_lightning.game import Rules
from yahtzee_lightning.game.rules import N_ROLLS
from yahtzee_lightning.resolve import player_factory, resolve_player

sys.path.insert(0, str(Path(__file__).parent))
from _common import write_json  # noqa: E402


def diffs(player, opponent, games: int, seed: int, rules: Rules, batch_size: int) -> torch.Tensor:
    """The player's final lead in each match, as ``evaluation.match.play_matches`` plays them."""
    out, chunk = [], 0
    for start in range(0, games, batch_size):
        n = min(batch_size, games - start)
        env = MultiPlayerYahtzeeEnv(
            n, opponents=opponent, rules=rules, learner_seat="alternate", seed=seed * 1_000_003 + chunk
        )
        torch.manual_seed(seed * 1_000_003 + chunk)
        td = env.reset()
        for _ in range(N_ROLLS * rules.n_turns):
            keep, box = player.act(td)
            td.set(K.KEEP, keep)
            td.set(K.BOX, box)
            td = env.step(td)["next"]
        out.append(td[K.SCORE_DIFF].cpu())
        chunk += 1
    return torch.cat(out)


def interval(x: torch.Tensor) -> dict[str, float]:
    """Mean and its 95 % normal interval, in percent."""
    mean, se = float(x.mean()), float(x.std()) / math.sqrt(len(x))
    return {"percent": 100 * mean, "low": 100 * (mean - 1.96 * se), "high": 100 * (mean + 1.96 * se)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--player", action="append", required=True, help="a match player by name (repeatable)")
    parser.add_argument("--opponent", default="optimal")
    parser.add_argument("--games", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--json", default=None)
    parser.add_argument("--diffs", default=None, help="also write each match's final lead, player by player (JSON)")
    args = parser.parse_args(argv)
    rules = Rules()
    rows, first, leads = [], None, {}
    for name in args.player:
        player = resolve_player(name, rules)
        start = time.perf_counter()
        d = diffs(player, player_factory(args.opponent, rules, "cpu"), args.games, args.seed, rules, args.batch_size)
        leads[name] = d.tolist()
        win, score = (d > 0).double(), (d > 0).double() + 0.5 * (d == 0).double()
        row = {
            "player": name,
            "games": len(d),
            "wins": interval(win),
            "draws_percent": 100 * float((d == 0).double().mean()),
            "wins_plus_half_draws": interval(score),
            "seconds": round(time.perf_counter() - start, 1),
        }
        if first is None:
            first = (win, score)
        else:
            row["paired_minus_first"] = {
                "wins": interval(win - first[0]),
                "wins_plus_half_draws": interval(score - first[1]),
            }
        rows.append(row)
        w, s = row["wins"], row["wins_plus_half_draws"]
        print(
            f"{name}: wins {w['percent']:.2f} % [{w['low']:.2f}, {w['high']:.2f}], wins + draws/2 "
            f"{s['percent']:.2f} % [{s['low']:.2f}, {s['high']:.2f}] (n = {len(d):,}, {row['seconds']} s)"
        )
        if "paired_minus_first" in row:
            p = row["paired_minus_first"]["wins"]
            print(
                f"  minus {args.player[0]}, paired: wins {p['percent']:+.2f} points [{p['low']:+.2f}, {p['high']:+.2f}]"
            )
    if args.diffs:
        Path(args.diffs).write_text(json.dumps({"seed": args.seed, "opponent": args.opponent, "leads": leads}))
    if args.json:
        write_json(args.json, "matches", rows, opponent=args.opponent, seed=args.seed, games=args.games)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
