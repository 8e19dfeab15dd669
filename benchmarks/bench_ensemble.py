"""Many runs in one process: an ensemble of K members against K single runs of the same config.

Both sides train the config's model with Lightning (the config's loggers, CSV and TensorBoard,
written every step; no evaluations, checkpoints or progress bar) for ``--updates`` updates per
run: the ensemble once with ``ensemble: K`` (seeds ``seed .. seed + K - 1``), the single runs
one after another in the same process with those seeds. Games per second = every member's or
run's games over the wall clock of the training loops (from Lightning's ``on_train_start`` to
``on_train_end``: a run's setup is paid once per run, not per round). The order alternates
between rounds (ensemble first, then single runs first) so that a shared machine's changing
load falls on both sides.

``--breakdown K ...`` profiles ensembles of those sizes (cProfile, so slower than unprofiled) and
prints where the time of a training step goes: the environment, the network's forward passes,
the backward pass, the optimiser, logging and the rest of Lightning.

    python benchmarks/bench_ensemble.py [--config conf/a2c_cpu.yaml] [--members 8] [--updates 12]
        [--rounds 4] [--breakdown 1 8 32] [--accelerator cpu] [--ensemble-update loop batched] [--json out.json]

The last line printed: ``ensemble K=8 vs 8 single runs: <ratio>x games/s``.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import pstats
import sys
import tempfile
import time
import warnings
from pathlib import Path

import lightning as L
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from _common import write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def build(
    config: Path, updates: int, seed: int, ensemble: int | None, ensemble_update: str = "loop"
) -> L.LightningModule:
    """The config's model with a budget of ``updates`` updates, no evaluations, seeded as a run is."""
    model = yaml.safe_load(config.read_text())["model"]
    module, _, name = model["class_path"].rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    args = dict(model.get("init_args", {}))
    args.update(total_games=updates * args["games_per_batch"], evaluations=1, final_eval_games=0, seed=seed)
    L.seed_everything(seed, verbose=False)
    return cls(**args, ensemble=ensemble, ensemble_update=ensemble_update)


class _Clock(L.Callback):
    """The wall clock of the training loop: from its start to its end (not the Trainer's setup,
    which a real run pays once, not once per ``--updates``)."""

    def on_train_start(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        self.start = time.perf_counter()

    def on_train_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        self.seconds = time.perf_counter() - self.start


def fit(model: L.LightningModule, logs: str, accelerator: str = "cpu") -> float:
    """Wall-clock seconds of the training loop with the configs' two loggers, logging every step."""
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

    clock = _Clock()
    trainer = L.Trainer(
        accelerator=accelerator,
        devices=1,
        logger=[CSVLogger(logs), TensorBoardLogger(logs)],
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        limit_val_batches=0,
        max_epochs=-1,
        callbacks=[clock],
    )
    trainer.fit(model)
    return clock.seconds


def compare(
    config: Path,
    members: int,
    updates: int,
    rounds: int,
    logs: str,
    accelerator: str,
    modes: tuple[str, ...] = ("loop",),
) -> dict:
    """Games per second of the ensemble (each ``ensemble_update`` in ``modes``) and of the single
    runs, over ``rounds`` rounds whose order turns (a shared machine's load falls on every side)."""
    games = yaml.safe_load(config.read_text())["model"]["init_args"]["games_per_batch"] * updates * members
    sides = [*(f"ensemble {m}" for m in modes), "single"]
    wall = dict.fromkeys(sides, 0.0)
    fit(build(config, 2, 0, members), logs, accelerator)  # warm-up: imports, tables, the oracle's solved table
    for r in range(rounds):
        for side in sides[r % len(sides) :] + sides[: r % len(sides)]:
            if side == "single":
                wall[side] += sum(fit(build(config, updates, k, None), logs, accelerator) for k in range(members))
            else:
                mode = side.split()[1]
                wall[side] += fit(build(config, updates, 0, members, mode), logs, accelerator)
            print(f"  round {r + 1} {side}: {wall[side]:.1f} s so far", flush=True)
    rate = {side: rounds * games / s for side, s in wall.items()}
    out = {
        "config": str(config.relative_to(ROOT)) if config.is_relative_to(ROOT) else str(config),
        "members": members,
        "updates": updates,
        "rounds": rounds,
        "single_games_per_s": rate["single"],
    }
    for m in modes:
        out[f"ensemble_{m}_games_per_s"] = rate[f"ensemble {m}"]
        out[f"ratio_{m}"] = rate[f"ensemble {m}"] / rate["single"]
    first = modes[0]
    return out | {"ensemble_games_per_s": rate[f"ensemble {first}"], "ratio": out[f"ratio_{first}"]}


def breakdown(config: Path, members: int, updates: int, logs: str, accelerator: str) -> dict:
    """Shares of a profiled fit's wall clock: environment, the collection's policy (the stacked
    network and the sampling), the update's forward and loss, its backward pass, its optimiser
    (clipping and Adam), the exact diagnosis of ``diagnose_games`` games (the oracle and a
    forward pass), the other metrics of each update (a forward pass for the KL, action counts),
    logging, and the rest (Lightning's loop). From cProfile's cumulative times; the parts do not
    overlap."""
    model = build(config, updates, 0, members)
    profiler = cProfile.Profile()
    profiler.enable()
    total = fit(model, logs, accelerator)
    profiler.disable()
    seconds: dict[str, float] = {}
    for (filename, _, function), (_, _, _, cumulative, _) in pstats.Stats(profiler).stats.items():
        key = f"{Path(filename).name}:{function}"
        if function == "update" and Path(filename).name in ("a2c.py", "reinforce.py", "ppo.py", "distill.py"):
            key = "update"
        seconds[key] = seconds.get(key, 0.0) + cumulative

    def cum(*keys: str) -> float:
        return sum(seconds.get(k, 0.0) for k in keys)

    backward = cum("module.py:manual_backward")
    optimiser = sum(v for k, v in seconds.items() if k.endswith(":step_optimizer")) - backward
    logging = cum("module.py:log", "logger_connector.py:update_train_step_metrics", "ensemble.py:_write_steps")
    learn = max(v for k, v in seconds.items() if k.endswith(":learn"))
    diagnosis = sum(v for k, v in seconds.items() if k.endswith(":diagnose"))
    parts = {
        "environment": cum("common.py:step", "common.py:reset", "common.py:step_mdp"),
        "collection policy": cum("policy.py:forward"),
        "update forward+loss": cum("update") - backward - optimiser,
        "backward": backward,
        "optimiser": optimiser,
        "diagnosis": diagnosis,
        "metrics": learn - cum("update") - diagnosis - cum("module.py:log", "ensemble.py:_write_steps"),
        "logging": logging,
    }
    parts["Lightning+rest"] = total - sum(parts.values())
    return {"members": members, "seconds": total, **{k: v / total for k, v in parts.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / "conf" / "a2c_cpu.yaml")
    parser.add_argument("--members", type=int, default=8)
    parser.add_argument("--updates", type=int, default=12, help="updates per run (and of the ensemble), per round")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--breakdown", type=int, nargs="*", default=[], help="ensemble sizes to profile")
    parser.add_argument("--accelerator", default="cpu", help="Lightning's accelerator (cpu, gpu)")
    parser.add_argument(
        "--ensemble-update", nargs="+", default=["loop"], choices=["loop", "batched"], help="the ensemble's update(s)"
    )
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.members < 1 or args.updates < 1 or args.rounds < 1:
        parser.error("--members, --updates and --rounds must be >= 1")
    warnings.filterwarnings("ignore")
    import logging

    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as logs:
        rows = []
        if args.breakdown:
            fit(build(args.config, 2, 0, 1), logs, args.accelerator)  # warm-up: imports, tables, the solved table
        for k in args.breakdown:
            b = breakdown(args.config, k, args.updates, logs, args.accelerator)
            rows.append(b)
            shares = ", ".join(
                f"{part} {100 * share:.0f} %" for part, share in b.items() if part not in ("members", "seconds")
            )
            print(f"K={k}: {b['seconds']:.1f} s profiled; {shares}", flush=True)
        modes = tuple(args.ensemble_update)
        r = compare(args.config, args.members, args.updates, args.rounds, logs, args.accelerator, modes)
    rows.append(r)
    write_json(args.json, "ensemble", rows, accelerator=args.accelerator)
    for m in modes:
        print(
            f"{r['config']}: ensemble ({m}) {r[f'ensemble_{m}_games_per_s']:.0f} games/s, "
            f"{r['members']} single runs {r['single_games_per_s']:.0f} games/s"
        )
    for m in modes:
        print(f"ensemble ({m}) K={r['members']} vs {r['members']} single runs: {r[f'ratio_{m}']:.2f}x games/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
