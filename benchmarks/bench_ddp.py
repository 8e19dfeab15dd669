"""Training games/s on 1 process against N DDP ranks (CPU, gloo), as a user launches ``fit``.

Each run is ``yahtzee-lightning fit --config CONFIG`` with the same global budget and the same
global batch (``games_per_batch`` = BATCH / ranks on each rank), one thread a process, one
evaluation (at the end, ``--eval-games`` games); games/s is ``total_games`` over the run's
``eval/wall_clock_s`` (from the module's setup to that evaluation: process start-up and imports
excluded). The sides alternate, ``--rounds`` times; the median is reported.

    python benchmarks/bench_ddp.py [--config conf/a2c_cpu.yaml] [--ranks 2] [--games 4096] [--batch 64]
        [--rounds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def run(config: str, ranks: int, games: int, batch: int, eval_games: int) -> float:
    """Games/s of one ``fit`` on ``ranks`` processes."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable,
            "-m",
            "yahtzee_lightning.cli",
            "fit",
            "--config",
            config,
            f"--model.init_args.total_games={games}",
            f"--model.init_args.games_per_batch={batch // ranks}",
            "--model.init_args.evaluations=1",
            f"--model.init_args.eval_games={eval_games}",
            "--model.init_args.final_eval_games=0",
            "--trainer.enable_progress_bar=false",
            "--trainer.enable_model_summary=false",
            f"--trainer.logger.init_args.save_dir={out}",
            f"--trainer.callbacks.init_args.dirpath={out}/checkpoints",
            "--trainer.accelerator=cpu",
            f"--trainer.devices={ranks}",
            *(["--trainer.strategy=ddp"] if ranks > 1 else []),
        ]
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(ROOT))
        subprocess.run(cmd, cwd=out, env=env, check=True, capture_output=True)
        [metrics] = Path(out).glob("**/version_0/metrics.csv")
        rows = [r for r in csv.DictReader(metrics.open()) if r.get("eval/wall_clock_s")]
        return games / float(rows[-1]["eval/wall_clock_s"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(ROOT / "conf" / "a2c_cpu.yaml"))
    parser.add_argument("--ranks", type=int, default=2, help="DDP ranks against 1 process")
    parser.add_argument("--games", type=int, default=4096, help="total_games of every run (global)")
    parser.add_argument("--batch", type=int, default=64, help="games an update, all ranks together")
    parser.add_argument("--eval-games", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.batch % args.ranks or args.games % args.batch:
        parser.error(f"--batch must divide by --ranks and --games by --batch (got {args.games}, {args.batch})")
    speeds: dict[int, list[float]] = {1: [], args.ranks: []}
    for _ in range(args.rounds):
        for ranks in speeds:
            speeds[ranks].append(run(args.config, ranks, args.games, args.batch, args.eval_games))
    one, many = (statistics.median(speeds[r]) for r in speeds)
    print(f"{'ranks':>5} {'games/s (median)':>17}  rounds")
    for ranks, values in speeds.items():
        print(f"{ranks:>5} {statistics.median(values):>17,.1f}  {', '.join(f'{v:.1f}' for v in values)}")
    print(f"{args.ranks} ranks / 1 process: {many / one:.2f}x (load average {os.getloadavg()[0]:.1f})")
    rows = [{"ranks": r, "games_per_s": v} for r, vs in speeds.items() for v in vs]
    write_json(args.json, "ddp", rows, config=args.config, games=args.games, batch=args.batch)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
