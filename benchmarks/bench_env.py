"""Environment throughput: raw core vs env.step vs env.rollout (fresh or preallocated) vs a TorchRL collector.

Every path plays the same masked random policy; throughput is reported in game steps per
second and as a ratio to the raw core measured in the same run.

    python benchmarks/bench_env.py [--sizes 1 64 1024 16384 65536] [--seconds 1.0] [--json out.json]
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import torch
from tensordict import TensorDictBase

from yahtzee_lightning.env import YahtzeeEnv
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.game import Rules, legal_boxes, new_games, step

sys.path.insert(0, str(Path(__file__).parent))
from _common import sync, write_json  # noqa: E402


def masked_random(td: TensorDictBase) -> TensorDictBase:
    """A random keep and a uniformly random legal box (argmax of masked noise)."""
    n = td.batch_size
    td.set(K.KEEP, torch.randint(0, 32, n, device=td.device))
    noise = torch.rand(*n, 13, device=td.device).masked_fill_(~td[K.BOX_MASK], -1)
    td.set(K.BOX, noise.argmax(-1))
    return td


def _timed(run_chunk, steps_per_chunk: int, seconds: float, device: str = "cpu") -> float:
    run_chunk()  # warm-up
    sync(device)
    done, start = 0, time.perf_counter()
    while True:
        run_chunk()
        done += steps_per_chunk
        sync(device)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def bench_core(n: int, seconds: float, device: str) -> float:
    rules = Rules()
    g = torch.Generator(device=device).manual_seed(0)
    state = {"s": new_games((n,), rules, device, g)}

    def chunk() -> None:
        s = state["s"]
        for _ in range(39):
            mask = legal_boxes(s, rules)
            noise = torch.rand(n, 13, device=device, generator=g).masked_fill_(~mask, -1)
            keep = torch.randint(0, 32, (n,), device=device, generator=g)
            s = step(s, keep, noise.argmax(-1), rules, g).state
        state["s"] = new_games((n,), rules, device, g)

    return _timed(chunk, 39 * n, seconds, device)


def bench_env_step(n: int, seconds: float, device: str, compile: bool = False) -> float:
    """``env.step_and_maybe_reset``; ``compile``: TorchRL's own ``compile=True`` (compilation untimed)."""
    env = YahtzeeEnv(n, validate_actions=False, device=device, seed=0, compile=compile)
    state = {"td": env.reset()}

    def chunk() -> None:
        td = state["td"]
        for _ in range(39):
            _, td = env.step_and_maybe_reset(masked_random(td))
        state["td"] = td

    return _timed(chunk, 39 * n, seconds, device)


def bench_rollout(n: int, seconds: float, device: str) -> float:
    env = YahtzeeEnv(n, validate_actions=False, device=device, seed=0)
    return _timed(lambda: env.rollout(39, masked_random, break_when_any_done=False), 39 * n, seconds, device)


def bench_rollout_out(n: int, seconds: float, device: str) -> float:
    """The training path: the same rollout written into one preallocated TensorDict each time."""
    env = YahtzeeEnv(n, validate_actions=False, device=device, seed=0)
    buf = {"out": None}

    def chunk() -> None:
        buf["out"] = env.rollout(39, masked_random, break_when_any_done=False, out=buf["out"])

    return _timed(chunk, 39 * n, seconds, device)


def bench_collector(n: int, seconds: float, device: str) -> float:
    from torchrl.collectors import Collector

    env = YahtzeeEnv(n, validate_actions=False, device=device, seed=0)
    collector = Collector(
        env, masked_random, frames_per_batch=39 * n, total_frames=-1, device=device, trust_policy=True
    )
    it = iter(collector)
    rate = _timed(lambda: next(it), 39 * n, seconds, device)
    collector.shutdown()
    return rate


PATHS = {
    "core": bench_core,
    "env.step": bench_env_step,
    "rollout": bench_rollout,
    "rollout(out=)": bench_rollout_out,
    "collector": bench_collector,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 1024, 16384, 65536])
    parser.add_argument("--seconds", type=float, default=1.0, help="minimum timed seconds per cell")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument("--compile", action="store_true", help="add env.step with TorchRL's compile=True")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    paths = dict(PATHS)
    if args.compile:
        paths["env.step(compiled)"] = partial(bench_env_step, compile=True)
    rows = []
    print(f"{'N':>7} " + " ".join(f"{p:>22}" for p in paths))
    for n in args.sizes:
        rates = {p: fn(n, args.seconds, args.device) for p, fn in paths.items()}
        cells = [f"{rates[p]:>12,.0f} ({rates[p] / rates['core']:4.2f}x)" for p in paths]
        print(f"{n:>7} " + " ".join(f"{c:>22}" for c in cells), flush=True)
        ratios = {p: rates[p] / rates["core"] for p in paths}
        rows.append({"num_envs": n, "steps_per_s": rates, "ratio_to_core": ratios})
    write_json(args.json, "env", rows, device=args.device)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
