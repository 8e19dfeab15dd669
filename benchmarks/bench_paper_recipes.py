"""The published code's recipes (conf/paper/) against the faithful re-run's 600 x 3 A2C, side by side.

Each recipe at its own network and settings learns ``--updates`` batches (collection and update,
through ``learn``: schedules, upper-score targets and shaping included), interleaved round by round
with the baseline so that a machine's load falls on all alike; the figure of merit is each
recipe's games per second as a ratio to the baseline's in the same round.

    python benchmarks/bench_paper_recipes.py [--updates 8] [--rounds 3] [--recipes ...] [--json out.json]

``--recipes`` also takes an ablation's variant of a recipe (``VARIANTS``: the published code's
network layout on PPO 250 k).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import yaml

from yahtzee_lightning import algorithms

sys.path.insert(0, str(Path(__file__).parent))
from _common import write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ("faithful 600x3 A2C", ROOT / "conf" / "a2c.yaml", {"gae_lambda": 0.0})
RECIPES = ("a2c_250k", "ppo_250k", "ppo_250k_shaped", "reinforce_250k", "single_turn")
#: A recipe with settings of an ablation: (its recipe, the settings changed).
VARIANTS = {"ppo_250k_published_layout": ("ppo_250k", {"layout": "published"})}


def build(path: Path, extra: dict) -> algorithms.OnPolicyAlgorithm:
    """The recipe's module with its own settings, stubbed to learn outside a Trainer."""
    config = yaml.safe_load(path.read_text())["model"]
    args = {**config["init_args"], **extra, "evaluations": 1, "eval_games": 4, "final_eval_games": 0}
    args["log_every"] = 1_000_000  # the logging-only metrics off: what is timed is learning
    model = getattr(algorithms, config["class_path"].rsplit(".", 1)[1])(**args)
    opt = model.configure_optimizers()["optimizer"]
    model.optimizers = lambda: opt
    model.manual_backward = lambda loss: loss.backward()
    model.lr_schedulers = lambda: torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    return model


def games_per_second(model: algorithms.OnPolicyAlgorithm, updates: int) -> float:
    model.learn(model.collect())  # warm-up
    start = time.perf_counter()
    for _ in range(updates):
        model.learn(model.collect())
    # a single-turn "game" here is a turn; the published code's game is 13 of them
    per_game = 13 if model.hparams.task == "single_turn" else 1
    return updates * model.hparams.games_per_batch / per_game / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--updates", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=[*RECIPES, *VARIANTS])
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    models = {BASELINE[0]: build(BASELINE[1], BASELINE[2])}
    for name in args.recipes:
        recipe, settings = VARIANTS.get(name, (name, {}))
        models[name] = build(ROOT / "conf" / "paper" / f"{recipe}.yaml", settings)
    ratios: dict[str, list[float]] = {name: [] for name in models}
    speeds: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(args.rounds):
        base = games_per_second(models[BASELINE[0]], args.updates)
        for name, model in models.items():
            speed = base if name == BASELINE[0] else games_per_second(model, args.updates)
            speeds[name].append(speed)
            ratios[name].append(speed / base)
    rows = []
    print(f"{'recipe':<22} {'games/s (median)':>17} {'x baseline (min / median / max)':>32}")
    for name in models:
        r = ratios[name]
        rows.append({"recipe": name, "games_per_s": speeds[name], "ratio": r})
        print(
            f"{name:<22} {statistics.median(speeds[name]):>17.1f} "
            f"{min(r):>12.2f} / {statistics.median(r):.2f} / {max(r):.2f}",
            flush=True,
        )
    write_json(args.json, "paper_recipes", rows, updates=args.updates, rounds=args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
