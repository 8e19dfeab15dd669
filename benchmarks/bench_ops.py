"""Operators per batch, split into collection and update: the host's cost, the same on any machine.

Counts every aten operator a batch dispatches (``yahtzee_lightning/loop/op_count.py``), after
two warm-up batches, over ``--batches`` batches, for the recipes the host-cost issue names and for
packs of K members of the paper's A2C (one ensemble: its collection is one stacked forward pass, its
update a loop over members, or with ``ensemble_update: batched`` one update of all of them). A
count does not depend on the network's width or the batch's games (the same operators on other
shapes), so the packs run at 128 x 2 as the study does.

    python benchmarks/bench_ops.py [--batches 10] [--packs 1 6 64] [--updates loop batched] [--json out.json]
    yahtzee-lightning bench ops
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import write_json  # noqa: E402

from yahtzee_lightning.loop.op_count import count_ops, recipe_args  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RECIPES = {
    "a2c_long (A2C, 128 x 2, 256 games)": ("conf/a2c_long.yaml", {}),
    "a2c (the paper's A2C, 600 x 3, 20 games)": ("conf/a2c.yaml", {"gae_lambda": 0.0}),
    "ppo (the paper's PPO, 600 x 3, 20 games)": ("conf/ppo.yaml", {}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--packs", type=int, nargs="*", default=[1, 6, 64])
    parser.add_argument("--updates", nargs="*", default=["loop", "batched"], help="a pack's ensemble_update")
    parser.add_argument("--json")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    runs = {name: recipe_args(ROOT / path, **extra) for name, (path, extra) in RECIPES.items()}
    for k in args.packs:
        small = {"gae_lambda": 0.0, "d_h": 128, "n_layers": 2, "head_hidden": 128, "ensemble": k if k > 1 else None}
        if k == 1:  # one run alone: the baseline of both
            runs["paper A2C at 128 x 2, one run"] = recipe_args(ROOT / "conf/a2c.yaml", **small)
            continue
        for update in args.updates:
            name = f"paper A2C at 128 x 2, a pack of K = {k} ({update})"
            runs[name] = recipe_args(ROOT / "conf/a2c.yaml", **small, ensemble_update=update)
    rows = []
    print("| configuration | ops per batch | collection | a step | update (quiet / mean) | per game | top ops |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, (cls, kwargs) in runs.items():
        r = count_ops(cls, kwargs, batches=args.batches)
        collect, update = r.per_batch("collect"), r.per_batch("update")
        total = collect + update
        top = ", ".join(f"{op} {n:.0f}" for op, n in r.top("collect", 4))
        quiet, step, per_game = r.quiet_update(), collect / r.steps, total / r.games_per_batch
        cells = [
            name,
            f"{total:,.0f}",
            f"{collect:,.0f}",
            f"{step:.0f}",
            f"{quiet:,} / {update:,.0f}",
            f"{per_game:,.1f}",
        ]
        print("| " + " | ".join([*cells, top]) + " |", flush=True)
        rows.append(
            {
                "configuration": name,
                "ops_per_batch": total,
                "collection": collect,
                "per_step": step,
                "update_quiet": quiet,
                "update_mean": update,
                "games_per_batch": r.games_per_batch,
            }
        )
    write_json(args.json, "ops", rows, batches=args.batches)


if __name__ == "__main__":
    main()
