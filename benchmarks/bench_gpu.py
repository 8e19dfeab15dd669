"""The GPU path in one run: training games/s with the GPU's utilisation, where the GPU idles, and
what compiling the network buys.

Each row trains a config's model under Lightning (``bench_study.measure``: its loggers, no
checkpoint) and samples the GPU's utilisation (NVML, every 50 ms) through the timed batches:

* ``a2c``: the A2C recipe (``conf/a2c_long.yaml``, 128x2) at its own batch and at ``--big`` games;
* ``study``: the study's configuration (``conf/ppo.yaml``: PPO 600x3, 20 games a batch) alone and
  packed as ``--members`` K (one ensemble of K members: K x 20 games a step), its update a loop of
  the members' and batched (``ensemble_update: batched``); the ratio of the packed games/s to one
  member's is printed;
* ``capture``: the A2C recipe with its game step captured (``capture: cudagraphs`` on CUDA,
  ``compile`` elsewhere), beside the ``a2c`` phase's eager row;
* ``profile``: torch.profiler over a few batches of those runs: the GPU's busy share (the sum of
  its kernels' time over the wall clock), kernels and host syncs per batch, and the host's top ops;
* ``compile``: the study rows with the network's forward compiled (``torch.compile``:
  ``reduce-overhead``, which replays CUDA graphs, and the default mode); each row is a new process
  so that a failure or a hang loses one row;
* ``paper``: every recipe of the paper's table (``conf/paper/``, 600 x 3 or 600 x 4, and the
  single-turn recipe on its own-play cards) on the device and on one thread of the same machine's
  CPU, pair by pair: games/s each (a single-turn "game" is a turn) and the device's ratio to the CPU;
* ``solver``: ``solve`` under the profiler (the optimal table: where its seconds go), in the
  device's default layout and in the CPU's grouped one.

    python benchmarks/bench_gpu.py --device cuda [--phases a2c study capture solver profile compile]
        [--members 64] [--big 16384] [--batches 20] [--json out.json]

On the CPU (``--device cpu --quick``) it runs the same code with tiny sizes, which is how the
script is checked before a lent GPU's minutes are spent on it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import lightning as L
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import sync, write_json  # noqa: E402
from bench_study import measure  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
A2C = str(ROOT / "conf" / "a2c_long.yaml")
STUDY = str(ROOT / "conf" / "ppo.yaml")
# The paper's table, one recipe per kind of step (the 1 M rows differ from the 250 k ones in their
# budget and schedules only), and the single-turn recipe on its own-play cards.
PAPER_CONF = ROOT / "conf" / "paper"
PAPER = [
    *(
        (r, PAPER_CONF / f"{r}.yaml", {})
        for r in ("a2c_250k", "ppo_50k", "ppo_250k", "ppo_250k_shaped", "reinforce_250k")
    ),
    ("single_turn", PAPER_CONF / "single_turn.yaml", {}),
    ("single_turn, own-play cards", PAPER_CONF / "single_turn.yaml", {"start_card": "own_play"}),
]


class Utilisation:
    """The GPU's utilisation (NVML's percent of time a kernel ran), sampled every ``period`` s
    in a thread while the ``with`` block runs; ``summary()`` is None where NVML is missing."""

    def __init__(self, device: str, period: float = 0.05) -> None:
        self.samples: list[int] = []
        self.period, self.handle = period, None
        if torch.device(device).type == "cuda":
            try:
                import pynvml

                pynvml.nvmlInit()
                index = torch.device(device).index or 0
                self.handle, self._read = pynvml.nvmlDeviceGetHandleByIndex(index), pynvml.nvmlDeviceGetUtilizationRates
            except Exception as error:  # noqa: BLE001 - a missing NVML only loses this column
                print(f"  (no GPU utilisation: {error})", flush=True)

    def __enter__(self) -> Utilisation:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while self.handle is not None and not self._stop.wait(self.period):
            self.samples.append(self._read(self.handle).gpu)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict | None:
        if not self.samples:
            return None
        s = sorted(self.samples)
        return {"gpu_util_mean": sum(s) / len(s), "gpu_util_p10": s[len(s) // 10], "gpu_util_samples": len(s)}


def train_row(name: str, config: str, device: str, batches: int, warmup: int, prepare=None, **overrides) -> dict:
    """One training measurement with the GPU's utilisation over the whole fit (set-up excluded
    where it is short; the warm-up batches are inside, the timed ones dominate)."""
    with Utilisation(device) as util:
        row = measure(config, batches, warmup, device, prepare=prepare, **overrides)
    row.update(name=name, config=Path(config).name, **overrides, **(util.summary() or {}))
    util_text = f", GPU {row['gpu_util_mean']:.0f} % (p10 {row['gpu_util_p10']})" if "gpu_util_mean" in row else ""
    print(
        f"{name}: {row['games_per_s']:,.1f} games/s ({row['batches']} batches, {row['seconds']:.1f} s){util_text}",
        flush=True,
    )
    return row


class _Profile(L.Callback):
    """Profiles batches ``start .. start + count - 1`` of a fit (CUDA kernels too on a GPU)."""

    def __init__(self, start: int, count: int, device: str) -> None:
        self.start, self.count, self.seen, self.result = start, count, 0, None
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.device(device).type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self.profiler = torch.profiler.profile(activities=activities)

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        if self.seen == self.start:
            sync(module.device)
            self.profiler.start()
            self.t0 = time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        self.seen += 1
        if self.seen == self.start + self.count:
            sync(module.device)
            wall = time.perf_counter() - self.t0
            self.profiler.stop()
            self.result = summarise(self.profiler, wall, self.count)


def summarise(profiler, wall: float, batches: int) -> dict:
    """The GPU's busy share, kernel launches and syncs per batch, and the host's top ops."""
    events = profiler.events()
    kernels = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    kernel_us = sum(e.device_time for e in kernels) if kernels else 0.0
    names = Counter(e.name for e in events)
    launches = sum(n for k, n in names.items() if "LaunchKernel" in k or k.startswith("cudaGraphLaunch"))
    syncs = sum(n for k, n in names.items() if "Synchronize" in k or k in ("cudaMemcpy", "cudaStreamSynchronize"))
    table = profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=12, max_name_column_width=60)
    return {
        "wall_s": wall,
        "batches": batches,
        "gpu_busy_share": kernel_us / 1e6 / wall,
        "kernels_per_batch": len(kernels) / batches,
        "launches_per_batch": launches / batches,
        "syncs_per_batch": syncs / batches,
        "host_top_ops": table,
    }


def profile_row(name: str, config: str, device: str, start: int, count: int, **overrides) -> dict:
    cb = _Profile(start, count, device)
    measure(config, start + count, 1, device, callbacks=[cb], **overrides)
    row = {"name": name, **overrides, **cb.result}
    print(
        f"{name}: GPU busy {row['gpu_busy_share']:.0%} of {row['wall_s']:.2f} s,"
        f" {row['kernels_per_batch']:.0f} kernels, {row['launches_per_batch']:.0f} launches,"
        f" {row['syncs_per_batch']:.1f} syncs a batch",
        flush=True,
    )
    print(row["host_top_ops"], flush=True)
    return row


def compile_net(mode: str):
    """A ``prepare`` that compiles the network's forward in place (its parameters and their
    names, hence checkpoints, unchanged)."""

    def prepare(model) -> None:
        model.net.forward = torch.compile(model.net.forward, mode=None if mode == "default" else mode)

    return prepare


def solver_row(device: str, flat: bool | None, quick: bool = False) -> dict:
    from yahtzee_lightning.game import Rules
    from yahtzee_lightning.solver import solve

    rules = Rules(boxes=(0, 1, 6, 12)) if quick else Rules()  # quick: a 4-box game, same code
    solve(rules, device=device, progress=False, flat=flat)  # warm-up: kernels, allocator
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU]
        + ([torch.profiler.ProfilerActivity.CUDA] if torch.device(device).type == "cuda" else [])
    ) as prof:
        start = time.perf_counter()
        table = solve(rules, device=device, progress=False, flat=flat)
        wall = time.perf_counter() - start
    plain = min(solve(rules, device=device, progress=False, flat=flat).seconds for _ in range(2))
    row = {"name": f"solver flat={flat}", "seconds": plain, "optimum": table.optimum, **summarise(prof, wall, 1)}
    print(
        f"solve (flat={flat}): {plain:.2f} s unprofiled, optimum {table.optimum:.4f}, GPU busy"
        f" {row['gpu_busy_share']:.0%}, {row['kernels_per_batch']:.0f} kernels",
        flush=True,
    )
    print(row["host_top_ops"], flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--phases", nargs="+", default=["a2c", "study", "capture", "solver", "profile", "compile"])
    # ``paper`` is asked for by name (``--phases paper``): it is the study's question, not the GPU path's
    parser.add_argument("--members", type=int, nargs="+", default=[64])
    parser.add_argument("--big", type=int, default=16384, help="games a batch of the A2C recipe's large row")
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: check the script on the CPU")
    parser.add_argument("--row", default=None, help=argparse.SUPPRESS)  # one compile row, in a child
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    dev, b = args.device, args.batches
    small = {"d_h": 16, "n_layers": 1} if args.quick else {}
    if args.row:  # a child: one compiled row, printed as JSON on the last line
        config, mode, extra = json.loads(args.row)
        print(json.dumps(train_row(f"compiled ({mode})", config, dev, b, 3, compile_net(mode), **extra, **small)))
        return 0
    rows: list[dict] = []

    def save() -> None:
        write_json(args.json, "gpu", [{k: v for k, v in r.items() if k != "host_top_ops"} for r in rows], device=dev)

    if "paper" in args.phases:
        for name, config, extra in PAPER:
            pair = {
                where: train_row(f"paper {name} on {where}", str(config), where, b, 2, **extra, **small)
                for where in dict.fromkeys([dev, "cpu"])
            }
            rows.extend(pair.values())
            if dev != "cpu":
                ratio = pair[dev]["games_per_s"] / pair["cpu"]["games_per_s"]
                pair[dev]["over_cpu"] = ratio
                print(f"  {name}: {dev} {ratio:.2f}x the CPU at {torch.get_num_threads()} threads", flush=True)
            save()
    if "a2c" in args.phases:
        rows.append(train_row("A2C recipe", A2C, dev, b, 3, **small))
        rows.append(train_row("A2C recipe, big batch", A2C, dev, max(2, b // 4), 2, games_per_batch=args.big, **small))
        save()
    if "study" in args.phases:
        alone = train_row("study config alone", STUDY, dev, b, 3, **small)
        rows.append(alone)
        for k in args.members:
            for update in ("loop", "batched"):
                name = f"study config packed K={k}" + (", batched update" if update == "batched" else "")
                row = train_row(name, STUDY, dev, max(2, b // 4), 1, ensemble=k, ensemble_update=update, **small)
                row["over_one_member"] = row["games_per_s"] / alone["games_per_s"]
                print(f"  packed K={k} ({update}): {row['over_one_member']:.1f}x one member alone", flush=True)
                rows.append(row)
        save()
    if "capture" in args.phases:
        capture = "cudagraphs" if torch.device(dev).type == "cuda" else "compile"
        rows.append(train_row(f"A2C recipe, step captured ({capture})", A2C, dev, b, 3, capture=capture, **small))
        save()
    if "solver" in args.phases:
        for flat in (None, False):  # the device's default layout (a GPU's: flat), then the CPU's
            rows.append(solver_row(dev, flat, args.quick))
        save()
    if "profile" in args.phases:
        rows.append(profile_row("profile: study config alone", STUDY, dev, 2, 3, **small))
        rows.append(
            profile_row(f"profile: study K={args.members[0]}", STUDY, dev, 2, 2, ensemble=args.members[0], **small)
        )
        rows.append(profile_row("profile: A2C big batch", A2C, dev, 1, 2, games_per_batch=args.big, **small))
        save()
    if "compile" in args.phases:
        rows_to_compile = [(STUDY, {}, "reduce-overhead"), (STUDY, {"ensemble": args.members[0]}, "reduce-overhead")]
        rows_to_compile += [(STUDY, {}, "default")]
        for config, extra, mode in rows_to_compile:
            cmd = [
                sys.executable,
                __file__,
                "--device",
                dev,
                "--batches",
                str(b),
                "--row",
                json.dumps([config, mode, extra]),
            ]
            cmd += ["--quick"] if args.quick else []
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=100)
            except subprocess.TimeoutExpired:
                print(f"compiled ({mode}) {Path(config).name} {extra}: over 100 s, left out", flush=True)
                continue
            if done.returncode != 0:
                print(f"compiled ({mode}) {Path(config).name} {extra}: failed\n{done.stderr[-2000:]}", flush=True)
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"{row['name']} {Path(config).name} {extra}: {row['games_per_s']:,.1f} games/s"
                + (f", GPU {row['gpu_util_mean']:.0f} %" if "gpu_util_mean" in row else ""),
                flush=True,
            )
            rows.append(row)
            save()
    save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
