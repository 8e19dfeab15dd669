"""Training throughput: env steps per second end to end, collection and update separately.

For each algorithm and network size, a short run is timed phase by phase: collection (the
TorchRL rollout with the policy into the preallocated batch; for Distill also the oracle's labels
of every position) and the update (the algorithm's loss, backward, step).

    python benchmarks/bench_training.py [--games 2560] [--games-per-batch 128] [--json out.json]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from yahtzee_lightning.algorithms import A2C, PPO, Distill, Reinforce

sys.path.insert(0, str(Path(__file__).parent))
from _common import sync, write_json  # noqa: E402

ALGORITHMS = {cls.__name__: cls for cls in (Reinforce, A2C, PPO, Distill)}
NETWORKS = {"baseline (600x3)": {"d_h": 600, "n_layers": 3}, "small (128x2)": {"d_h": 128, "n_layers": 2}}


def measure(cls, net: dict, games: int, games_per_batch: int, device: str) -> dict:
    model = cls(total_games=games, games_per_batch=games_per_batch, final_eval_games=0, **net).to(device)
    opt = model.configure_optimizers()["optimizer"]
    model.optimizers = lambda: opt  # the Trainer's wrapper is not needed to time the math
    model.manual_backward = lambda loss: loss.backward()
    model.lr_schedulers = lambda: torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    batch = model.collect()  # warm-up
    model.update(batch, {"beta_roll": 0.01, "beta_score": 0.01, "gamma": 0.99})
    collect = update = 0.0
    steps = 0
    for _ in range(max(1, games // games_per_batch)):
        t = time.perf_counter()
        batch = model.collect()
        sync(device)
        collect += time.perf_counter() - t
        t = time.perf_counter()
        model.update(batch, {"beta_roll": 0.01, "beta_score": 0.01, "gamma": 0.99})
        sync(device)
        update += time.perf_counter() - t
        steps += batch.numel()
    return {
        "steps": steps,
        "collect_s": collect,
        "update_s": update,
        "steps_per_s": steps / (collect + update),
        "collect_steps_per_s": steps / collect,
        "update_steps_per_s": steps / update,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=2560)
    parser.add_argument("--games-per-batch", type=int, default=128)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--algorithms", nargs="+", default=list(ALGORITHMS), choices=list(ALGORITHMS), help="which to time"
    )
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=list(NETWORKS))
    args = parser.parse_args(argv)
    rows = []
    print(f"{'algorithm':<10} {'network':<18} {'steps/s':>9} {'collect steps/s':>16} {'update steps/s':>15}")
    for net_name in args.networks:
        net = NETWORKS[net_name]
        for cls in (ALGORITHMS[name] for name in args.algorithms):
            r = measure(cls, net, args.games, args.games_per_batch, args.device)
            r.update(algorithm=cls.__name__, network=net_name)
            rows.append(r)
            print(
                f"{cls.__name__:<10} {net_name:<18} {r['steps_per_s']:>9.0f} {r['collect_steps_per_s']:>16.0f} "
                f"{r['update_steps_per_s']:>15.0f}",
                flush=True,
            )
    write_json(args.json, "training", rows, games=args.games, device=args.device)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
