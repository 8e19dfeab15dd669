"""The study's training config end to end: games per second of ``conf/ppo.yaml`` under Lightning.

Builds the model and the Trainer from the YAML (its loggers included, its checkpoint callback
left out), trains ``--batches`` batches in one evaluation interval and times the training steps
after ``--warmup`` of them (the one short evaluation and the set-up are not counted). Run it on
two checkouts with the same command to compare them (``PYTHONPATH=old/tree python
benchmarks/bench_study.py``).

    python benchmarks/bench_study.py [--config conf/ppo.yaml] [--batches 30] [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import lightning as L
import torch
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from _common import sync, write_json  # noqa: E402


class _Clock(L.Callback):
    """Wall clock and this process's CPU time of the training steps after the first ``warmup``
    ones (on a shared machine the CPU time, with one thread, is the steadier measure of work)."""

    def __init__(self, warmup: int) -> None:
        self.warmup, self.steps = warmup, 0
        self.start = self.end = self.cpu_start = self.cpu_end = 0.0

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        sync(module.device)
        self.steps += 1
        if self.steps == self.warmup:
            self.start, self.cpu_start = time.perf_counter(), time.process_time()
        self.end, self.cpu_end = time.perf_counter(), time.process_time()


def _load(class_path: str) -> type:
    module, name = class_path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def measure(
    config: str,
    batches: int,
    warmup: int,
    device: str,
    prepare: Callable[[L.LightningModule], None] | None = None,
    callbacks: Sequence[L.Callback] = (),
    **overrides,
) -> dict:
    """Games/s of ``batches`` timed batches of the config's model (``overrides``: model settings).
    ``prepare`` changes the built model before training (a benchmark's variant, e.g. a compiled
    network); ``callbacks`` ride along (a profiler)."""
    conf = yaml.safe_load(Path(config).read_text())
    init = {**conf["model"]["init_args"], **overrides}
    members = init.get("ensemble") or 1  # an ensemble of K members plays K batches a step
    if not isinstance(members, int):
        raise ValueError("bench_study counts an ensemble given as a number of members only")
    gpb = init["games_per_batch"] * members
    init.update(
        total_games=init["games_per_batch"] * (batches + warmup), evaluations=1, eval_games=1, final_eval_games=0
    )
    torch.manual_seed(conf.get("seed_everything", 0))
    model = _load(conf["model"]["class_path"])(**init)
    if prepare is not None:
        prepare(model)
    clock = _Clock(warmup)
    with tempfile.TemporaryDirectory() as tmp:
        loggers = [
            _load(lg["class_path"])(**{**lg.get("init_args", {}), "save_dir": tmp})
            for lg in conf["trainer"].get("logger", [])
        ]
        trainer = L.Trainer(
            accelerator=device,
            devices=1,
            num_sanity_val_steps=0,
            log_every_n_steps=conf["trainer"].get("log_every_n_steps", 50),
            logger=loggers or False,
            callbacks=[clock, *callbacks],
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        trainer.fit(model)
    seconds, cpu = clock.end - clock.start, clock.cpu_end - clock.cpu_start
    timed = clock.steps - warmup
    return {
        "batches": timed,
        "seconds": seconds,
        "games_per_s": timed * gpb / seconds,
        "cpu_seconds": cpu,
        "games_per_cpu_s": timed * gpb / cpu,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="conf/ppo.yaml")
    parser.add_argument("--batches", type=int, default=30, help="timed batches")
    parser.add_argument("--warmup", type=int, default=3, help="batches before the clock starts")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeat", type=int, default=1, help="runs; each is printed")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rows = []
    for _ in range(args.repeat):
        r = measure(args.config, args.batches, args.warmup, args.device)
        r["config"] = args.config
        rows.append(r)
        games_s, per_cpu_s, batches, seconds = r["games_per_s"], r["games_per_cpu_s"], r["batches"], r["seconds"]
        print(
            f"{args.config}: {games_s:.1f} games/s, {per_cpu_s:.1f} games per CPU second ({batches} batches in"
            f" {seconds:.1f} s)",
            flush=True,
        )
    write_json(args.json, "study", rows, device=args.device)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
