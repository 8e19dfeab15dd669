"""Threads on a busy box: the batched env and ``solve`` with the project's thread rule and with every core.

``--load`` processes spin beside the measurement (a busy laptop, a shared cluster node, other
trials). Each cell runs in a fresh process whose torch threads are fixed before torch starts:
the count the project's rule (``machine.thread_rule``) gives with that load, and every usable
core (what torch takes by default). Cells alternate, rule then all cores, ``--rounds`` times; the
ratio is taken round by round.

    python benchmarks/bench_threads.py [--load 1] [--rounds 3] [--envs 16384] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _spin(stop) -> None:  # a competing program: one core kept busy
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def _child(what: str, envs: int, seconds: float) -> float:
    """Steps per second of the env (``env``), or seconds of the full optimal table (``solve``)."""
    if what == "env":
        sys.path.insert(0, str(HERE))
        from bench_env import bench_env_step

        return bench_env_step(envs, seconds, "cpu")
    from yahtzee_lightning.game import Rules
    from yahtzee_lightning.solver import solve

    start = time.perf_counter()
    solve(Rules(), device="cpu", progress=False)
    return time.perf_counter() - start


def _run(what: str, threads: int, args: argparse.Namespace) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    env.pop("YAHTZEE_LIGHTNING_THREADS_CHOSEN", None)
    code = f"import sys; sys.path.insert(0, {str(HERE)!r}); import bench_threads as b; "
    code += f"print(b._child({what!r}, {args.envs}, {args.seconds}))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"bench_threads: {what} with {threads} threads failed:\n{out.stderr[-2000:]}")
    return float(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--load", type=int, default=1, help="competing busy processes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--envs", type=int, default=16384)
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds of the env per cell")
    parser.add_argument("--only", choices=["env", "solve"], default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    from yahtzee_lightning.machine import thread_rule, usable_cores

    cores = usable_cores()
    rule = thread_rule(1, cores=cores, load=float(args.load))  # the load the rule sees once it has lasted a minute
    stop = mp.Event()
    spinners = [mp.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.load)]
    for p in spinners:
        p.start()
    rows = []
    try:
        for what in [args.only] if args.only else ["env", "solve"]:
            cells: dict[str, list[float]] = {"rule": [], "all cores": []}
            for _ in range(args.rounds):
                cells["rule"].append(_run(what, rule, args))
                cells["all cores"].append(_run(what, cores, args))
            # env: steps/s (higher is better); solve: seconds (lower is better); ratio = how much faster the rule is
            pairs = zip(cells["rule"], cells["all cores"], strict=True)
            ratios = [(r / a if what == "env" else a / r) for r, a in pairs]
            unit = "steps/s" if what == "env" else "s"
            row = {
                "what": what,
                "load": args.load,
                "rule_threads": rule,
                "all_threads": cores,
                "rule": statistics.median(cells["rule"]),
                "all_cores": statistics.median(cells["all cores"]),
                "unit": unit,
                "rule_speedup_rounds": ratios,
                "rule_speedup": statistics.median(ratios),
                "loadavg": os.getloadavg()[0],
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        stop.set()
        for p in spinners:
            p.join(timeout=5)
    if args.json:
        sys.path.insert(0, str(HERE))
        from _common import write_json

        write_json(args.json, "threads", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
