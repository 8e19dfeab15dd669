"""Whether a faster tree still learns as much per game: seeds of a recipe to G games, both trees.

A change that makes training faster (a compiled step, another Adam kernel, fewer products a row)
should learn as much from the same number of games. For each seed this runs the recipe to
``--games`` games in this checkout and in ``--baseline`` (another checkout), side by side (one
thread each: a shared machine's load falls on both), then the protocol's final evaluation of
``--eval-games`` games; it prints each seed's mean score and regret, and the difference of the
two trees' means over seeds with a Welch t interval (its n is the seeds).

    python benchmarks/learning_per_game.py --baseline /path/to/old --config conf/a2c_long.yaml \\
        --games 204800 --seeds 0 1 2 3 4 [--set-new capture=compile] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _child(args: argparse.Namespace) -> dict:
    """One seed in one tree (``--child``): fit, then the final evaluation."""
    import importlib
    import tempfile

    import lightning as L
    import torch
    import yaml

    torch.set_num_threads(1)
    conf = yaml.safe_load(Path(args.config).read_text())["model"]
    module, _, name = conf["class_path"].rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    settings = dict(conf.get("init_args", {}))
    settings.update(total_games=args.games, evaluations=1, final_eval_games=args.eval_games, seed=args.seed)
    for item in args.set:
        key, _, value = item.partition("=")
        settings[key] = yaml.safe_load(value)
    L.seed_everything(args.seed, verbose=False)
    model = cls(**settings)
    start = time.perf_counter()
    trainer = L.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=-1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        default_root_dir=tempfile.mkdtemp(),
    )
    trainer.fit(model)
    summary = model.final_evaluation["summary"]
    return {
        "seed": args.seed,
        "mean_score": summary["score"]["mean"],
        "se": summary["score"]["se"],
        "regret_per_game": summary["regret"]["per_game_mean"],
        "wall_s": time.perf_counter() - start,
    }


def _start(tree: Path, seed: int, args: argparse.Namespace) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    sets = args.set + (args.set_new if tree.resolve() == ROOT.resolve() else [])
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--config", str(Path(args.config).resolve())]
    cmd += ["--games", str(args.games), "--eval-games", str(args.eval_games), "--seed", str(seed)]
    cmd += [f"--set={s}" for s in sets]
    return subprocess.Popen(cmd, env=env, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(ROOT / "conf" / "a2c_long.yaml"))
    parser.add_argument("--baseline", type=Path, required=False, help="a checkout of the old code")
    parser.add_argument("--games", type=int, default=204800)
    parser.add_argument("--eval-games", type=int, default=10000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE: a model setting, both trees")
    parser.add_argument("--set-new", action="append", default=[], help="KEY=VALUE: this checkout only")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args)))
        return 0
    if args.baseline is None:
        parser.error("--baseline: the checkout to compare with")
    trees = {"new": ROOT, "old": args.baseline.resolve()}
    results: dict[str, list[dict]] = {name: [] for name in trees}
    for seed in args.seeds:
        procs = {name: _start(tree, seed, args) for name, tree in trees.items()}
        for name, proc in procs.items():
            out, err = proc.communicate()
            if proc.returncode != 0:
                raise SystemExit(f"learning_per_game: seed {seed} in {trees[name]} failed:\n{err[-3000:]}")
            results[name].append(json.loads(out.strip().splitlines()[-1]))
        row = ", ".join(f"{n} {results[n][-1]['mean_score']:.2f}" for n in trees)
        print(f"seed {seed}: {row} (mean score over {args.eval_games} games)", flush=True)
    from yahtzee_lightning.study.judging.stats import welch

    diff = welch([r["mean_score"] for r in results["new"]], [r["mean_score"] for r in results["old"]])
    print(
        f"new - old: {diff.effect:+.2f} points, 95 % Welch t interval {diff.low:+.2f} to {diff.high:+.2f} "
        f"({diff.n}, p = {diff.p:.2f})"
    )
    if args.json:
        sys.path.insert(0, str(HERE))
        from _common import write_json

        rows = [{"tree": name, **r} for name, rs in results.items() for r in rs]
        write_json(str(args.json), "learning_per_game", rows, config=args.config, games=args.games, welch=asdict(diff))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
