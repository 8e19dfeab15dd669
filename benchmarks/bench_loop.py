"""The training loop's speed, old code against new, paired in one run.

Each round starts one process per code tree (``--baseline`` a checkout of the old code, and this
checkout), in turn, on the same config, so that a machine whose speed drifts (a busy box) moves
both alike; the ratio is taken round by round. Each process trains ``--updates`` updates of the
config's model under a Lightning Trainer (its loggers and metrics included, no evaluation, no
checkpoint) after ``--warmup`` updates, and reports:

* games/s of training (collection + update + logging, as a run spends them);
* the cost of a position in collection (the rollout's ``steps`` forwards of ``games_per_batch``
  rows, sampling and the env included) against its cost in the update's forward (one forward of
  the whole batch, in training mode with autograd's graph, as the loss computes it; its backward
  is printed beside), and their ratio.

    python benchmarks/bench_loop.py --baseline /path/to/old/checkout --config conf/a2c_long.yaml \
        [--updates 30] [--rounds 3] [--threads 1] [--json out.json]

``--side-by-side`` runs the two trees at the same time instead (one thread each on a 2-core box):
on a busy machine both then see the same load. Without ``--baseline`` it measures this checkout
alone. ``--set KEY=VALUE`` overrides a model
setting in both trees (e.g. ``--set games_per_batch=1024``), ``--set-new KEY=VALUE`` in this
checkout only (a setting the old code does not have: ``--set-new capture=compile``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _child(args: argparse.Namespace) -> dict:
    """One tree's measurement, in this process (``--child``)."""
    import importlib
    import inspect

    import lightning as L
    import torch
    import yaml

    torch.set_num_threads(args.threads)
    conf = yaml.safe_load(Path(args.config).read_text())["model"]
    module, _, name = conf["class_path"].rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    settings = dict(conf.get("init_args", {}))
    for item in args.set:
        key, _, value = item.partition("=")
        settings[key] = yaml.safe_load(value)
    updates = args.warmup + args.updates
    settings.update(total_games=updates * settings["games_per_batch"], evaluations=1, final_eval_games=0)
    # Settings the tree's classes take (the old tree may lack a new one, e.g. log_every).
    accepted = set().union(*(inspect.signature(c.__init__).parameters for c in cls.__mro__ if "__init__" in vars(c)))
    settings = {k: v for k, v in settings.items() if k in accepted}

    class Clock(L.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            if batch_idx == args.warmup:
                self.start = time.perf_counter()

        def on_train_epoch_end(self, trainer, pl_module):
            self.seconds = time.perf_counter() - self.start

    L.seed_everything(0, verbose=False)
    model = cls(**settings)
    clock = Clock()
    trainer = L.Trainer(
        accelerator="cpu",
        max_epochs=1,
        limit_val_batches=0,
        num_sanity_val_steps=0,
        logger=L.pytorch.loggers.CSVLogger(args.tmp),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[clock],
        log_every_n_steps=settings.get("log_every", 10),  # the new code sets it from log_every itself
    )
    trainer.fit(model)
    games_per_s = args.updates * settings["games_per_batch"] * getattr(model, "ensemble_size", 1) / clock.seconds

    # A position's cost: in collection (per step forward + sampling + env) and in the update's forward.
    from yahtzee_lightning import nn as ynn

    model.train()
    model.collect()
    t = time.perf_counter()
    for _ in range(args.repeats):
        batch = model.collect()
    collect_s = (time.perf_counter() - t) / args.repeats
    net = model.members[0] if getattr(model, "members", None) is not None else model.net
    flat = batch.reshape(-1)
    features = ynn.carried(flat) if hasattr(ynn, "carried") else None
    net.train()
    forward_s = backward_s = 0.0
    for _ in range(args.repeats):
        t = time.perf_counter()
        out = net(flat, features) if features is not None else net(flat)  # the loss's forward, with its graph
        loss = sum(o.sum() for o in out)
        forward_s += time.perf_counter() - t
        t = time.perf_counter()
        loss.backward()
        net.zero_grad()
        backward_s += time.perf_counter() - t
    forward_s, backward_s = forward_s / args.repeats, backward_s / args.repeats
    positions = flat.numel()
    return {
        "games_per_s": games_per_s,
        "collect_us_per_position": 1e6 * collect_s / positions,
        "update_forward_us_per_position": 1e6 * forward_s / positions,
        "update_backward_us_per_position": 1e6 * backward_s / positions,
        "collect_over_update_forward": collect_s / forward_s,
    }


def _start(tree: Path, args: argparse.Namespace) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": str(args.threads)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--config", str(Path(args.config).resolve())]
    cmd += ["--updates", str(args.updates), "--warmup", str(args.warmup), "--threads", str(args.threads)]
    sets = args.set + (args.set_new if tree.resolve() == ROOT.resolve() else [])
    cmd += ["--repeats", str(args.repeats), "--tmp", f"{args.tmp}/{tree.name}", *[f"--set={s}" for s in sets]]
    return subprocess.Popen(cmd, env=env, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(tree: Path, proc: subprocess.Popen) -> dict:
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"bench_loop: the run in {tree} failed:\n{err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])


def _round(trees: dict[str, Path], args: argparse.Namespace, r: int) -> dict[str, dict]:
    """One round: the trees one after the other (in alternating order), or side by side
    (``--side-by-side``: on a busy box both then see the same load at the same time)."""
    order = list(reversed(trees.items())) if r % 2 else list(trees.items())
    if args.side_by_side:
        procs = {name: _start(tree, args) for name, tree in order}
        return {name: _result(trees[name], proc) for name, proc in procs.items()}
    return {name: _result(tree, _start(tree, args)) for name, tree in order}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(ROOT / "conf" / "a2c_long.yaml"))
    parser.add_argument("--baseline", type=Path, default=None, help="a checkout of the old code")
    parser.add_argument("--updates", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3, help="collections and forwards timed for the position costs")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE: a model setting, both trees")
    parser.add_argument("--set-new", action="append", default=[], help="KEY=VALUE: a model setting, this checkout only")
    parser.add_argument("--side-by-side", action="store_true", help="run the trees at once, each on its own core")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tmp", default="/tmp/bench_loop", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args)))
        return 0
    trees = {"new": ROOT} | ({"old": args.baseline.resolve()} if args.baseline else {})
    rounds: list[dict[str, dict]] = []
    for r in range(args.rounds):
        row = _round(trees, args, r)
        rounds.append(row)
        print(f"round {r + 1}: " + "; ".join(f"{k} {v['games_per_s']:.0f} games/s" for k, v in row.items()), flush=True)
    keys = list(rounds[0]["new"])
    summary = {name: {k: statistics.median(r[name][k] for r in rounds) for k in keys} for name in trees}
    settings = " ".join(args.set + [f"{s} (new only)" for s in args.set_new])
    print(
        f"\n{Path(args.config).name} {settings}, {args.updates} updates a run, {args.rounds} rounds, "
        f"{args.threads} thread(s); medians:"
    )
    for name, values in summary.items():
        print(f"  {name}: " + ", ".join(f"{k} {v:.3g}" for k, v in values.items()))
    if "old" in trees:
        ratios = [r["new"]["games_per_s"] / r["old"]["games_per_s"] for r in rounds]
        print(
            f"  new / old games/s, round by round: {', '.join(f'{x:.2f}' for x in ratios)} "
            f"(median {statistics.median(ratios):.2f})"
        )
        summary["ratio_games_per_s"] = {"rounds": ratios, "median": statistics.median(ratios)}
    if args.json:
        sys.path.insert(0, str(HERE))
        from _common import write_json

        write_json(str(args.json), "loop", [summary], config=args.config, set=args.set, rounds=rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
