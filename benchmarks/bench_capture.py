"""The collection's step captured (``capture: compile``) against eager, side by side, on one device.

For each config: a module built from the recipe (seed 0) per setting, a warm-up batch each (the
compiled one compiles there), then ``--rounds`` rounds alternating the order, ``--batches``
collected batches a side a round; printed: microseconds a step (median over rounds and each
round's ratio), and the operators a step the host dispatches at top level (``torch.profiler``:
aten calls not inside another aten call, the calls a compiled graph makes to library kernels
included, plus the compiled graphs themselves), which the op counter of ``bench ops`` cannot see
inside a compiled function.

    python benchmarks/bench_capture.py [--configs conf/a2c_long.yaml conf/a2c.yaml] [--rounds 6]
        [--batches 3] [--device cpu] [--json out.json]
    python benchmarks/bench_capture.py --update [--configs conf/a2c.yaml conf/ppo.yaml] [--narrow]

``--update`` times the update instead: each side trains 12 updates in a fit (seed 0), ``--rounds``
fits a side alternating, and the median update's milliseconds (the logging updates, and the
compiled side's first ones, which compile, left out) and how far the two sides' weights end apart.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import write_json  # noqa: E402

from yahtzee_lightning.loop.op_count import recipe_args  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = ("none", "compile")


def build(config: str, capture: str, device: str, **overrides):
    cls, args = recipe_args(ROOT / config, capture=capture, init_from=None, **overrides)
    torch.manual_seed(0)
    return cls(**args).to(device)


def top_level_ops(model, steps: int) -> tuple[float, float]:
    """Operators a step at top level, and compiled graphs called a step, over one profiled batch."""
    with torch.profiler.profile() as prof:
        model.collect()
    events = prof.events()
    ops = [
        e
        for e in events
        if e.name.startswith("aten::") and not (e.cpu_parent and e.cpu_parent.name.startswith("aten::"))
    ]
    graphs = [e for e in events if e.name.startswith("## Call CompiledFxGraph")]
    return len(ops) / steps, len(graphs) / steps


def compare(config: str, rounds: int, batches: int, device: str, overrides: dict) -> dict:
    models = {c: build(config, c, device, **overrides) for c in SETTINGS}
    first = {}
    for c, m in models.items():
        t = time.perf_counter()
        m.collect()  # the compiled side compiles here
        first[c] = time.perf_counter() - t
    steps = models["none"].last_batch.shape[1]
    us: dict[str, list[float]] = {c: [] for c in SETTINGS}
    for r in range(rounds):
        for c in SETTINGS if r % 2 == 0 else SETTINGS[::-1]:
            t = time.perf_counter()
            for _ in range(batches):
                models[c].collect()
            if device != "cpu":
                torch.cuda.synchronize()
            us[c].append((time.perf_counter() - t) / batches / steps * 1e6)
    counts = {c: top_level_ops(m, steps) for c, m in models.items()}
    row = {"config": config, **overrides, "device": device, "rounds": rounds, "batches": batches}
    for c in SETTINGS:
        row[f"{c}_us_a_step"] = statistics.median(us[c])
        row[f"{c}_ops_a_step"], row[f"{c}_graphs_a_step"] = counts[c]
        row[f"{c}_first_batch_s"] = first[c]
    row["ratio_rounds"] = [a / b for a, b in zip(us["none"], us["compile"], strict=True)]
    return row


def fit_updates(config: str, capture: str, device: str, **overrides) -> tuple[list[float], torch.nn.Module]:
    """The wall clock of each update (``learn``) of a 12-update fit, and the trained network."""
    import lightning as L

    from yahtzee_lightning.loop.trainer import quiet_trainer

    games = recipe_args(ROOT / config)[1].get("games_per_batch", 20)
    cls, args = recipe_args(ROOT / config, capture=capture, init_from=None, **overrides)
    args.update(total_games=12 * games, evaluations=1, final_eval_games=0)
    L.seed_everything(0, verbose=False)
    model = cls(**args)
    seconds: list[float] = []
    learn = model.learn

    def timed(batch):
        t = time.perf_counter()
        learn(batch)
        if device != "cpu":
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - t)

    model.learn = timed
    quiet_trainer(accelerator=device, devices=1, max_epochs=1).fit(model)
    return seconds, model.net


def compare_updates(config: str, rounds: int, device: str, overrides: dict) -> dict:
    ms: dict[str, list[float]] = {c: [] for c in SETTINGS}
    nets = {}
    for r in range(rounds):
        for c in SETTINGS if r % 2 == 0 else SETTINGS[::-1]:
            seconds, nets[c] = fit_updates(config, c, device, **overrides)
            log_every = 10  # the recipes' logging cadence: update 10 logs (and compiles its own graph)
            ms[c] += [1000 * s for i, s in enumerate(seconds) if i >= 2 and (i + 1) % log_every]
    apart = max(
        (a - b).abs().max().item() for a, b in zip(nets["none"].parameters(), nets["compile"].parameters(), strict=True)
    )
    return {
        "config": config,
        **overrides,
        "device": device,
        "rounds": rounds,
        "none_update_ms": statistics.median(ms["none"]),
        "compile_update_ms": statistics.median(ms["compile"]),
        "weights_apart": apart,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=["conf/a2c_long.yaml", "conf/a2c.yaml"])
    parser.add_argument("--narrow", action="store_true", help="the configs at 128 x 2 (the study's packs' width)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--update", action="store_true", help="time the update instead of the collection")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    overrides = {"d_h": 128, "n_layers": 2, "head_hidden": 128} if args.narrow else {}
    rows = []
    if args.update:
        print("| config | eager ms an update | compiled | weights apart after 12 updates |")
        print("|---|---:|---:|---:|")
        for config in args.configs:
            r = compare_updates(config, args.rounds, args.device, overrides)
            rows.append(r)
            print(
                f"| {config} | {r['none_update_ms']:.1f} | {r['compile_update_ms']:.1f} | {r['weights_apart']:.1e} |",
                flush=True,
            )
        write_json(args.json, "capture_update", rows, device=args.device)
        return 0
    print("| config | eager us a step | compiled | eager / compiled, by round | ops a step, eager -> compiled |")
    print("|---|---:|---:|---|---|")
    for config in args.configs:
        r = compare(config, args.rounds, args.batches, args.device, overrides)
        rows.append(r)
        ratios = ", ".join(f"{x:.2f}" for x in r["ratio_rounds"])
        ops = f"{r['none_ops_a_step']:.0f} -> {r['compile_ops_a_step']:.0f} (+{r['compile_graphs_a_step']:.0f} graphs)"
        print(f"| {config} | {r['none_us_a_step']:.0f} | {r['compile_us_a_step']:.0f} | {ratios} | {ops} |", flush=True)
    write_json(args.json, "capture", rows, device=args.device)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
