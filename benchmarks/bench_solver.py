"""Time to build the full optimal table, per rule variant, beside the public Rust solver.

    python benchmarks/bench_solver.py [--device cpu] [--variants default forced no_joker no_bonus] [--json out.json]

``yatzy-solver`` (PyPI, ``pip install -e ".[bench]"``) is timed in the same run when it is
installed; both tables' optimum is printed. Each solver builds its table ``--repeat`` times,
the two alternating, and the fastest build of each is reported (shared machines are noisy).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from yahtzee_lightning.game import Rules
from yahtzee_lightning.solver import solve

sys.path.insert(0, str(Path(__file__).parent))
from _common import write_json  # noqa: E402

VARIANTS = {
    "default": (Rules(), "american"),
    "forced": (Rules(joker="forced"), "american+forced-joker"),
    "no_joker": (Rules(joker="off"), "american+no-joker"),
    "no_bonus": (Rules(joker="off", yahtzee_bonus=False), "american+no-bonus"),
}


def _rust(variant: str) -> tuple[float, float] | None:
    try:
        import yatzy_solver as ys
    except ImportError:
        return None
    start = time.perf_counter()
    solver = ys.Solver.build(ys.Variant(variant))
    seconds = time.perf_counter() - start
    return seconds, float(solver.state_value("upper 0 | filled -"))


def _best(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return min(runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--repeat", type=int, default=3, help="builds per solver; the fastest counts")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rows = []
    print(f"{'variant':<10} {'ours (s)':>9} {'optimum':>10} {'yatzy-solver (s)':>17} {'optimum':>10} {'ratio':>6}")
    for name in args.variants:
        rules, rust_name = VARIANTS[name]
        ours, theirs = [], []
        for _ in range(args.repeat):
            table = solve(rules, device=args.device, progress=False)
            ours.append((table.seconds, table.optimum))
            theirs.append(_rust(rust_name))
        seconds, optimum = _best(ours)
        rust = None if theirs[0] is None else _best(theirs)
        row = {"variant": name, "seconds": seconds, "optimum": optimum, "repeat": args.repeat}
        cells = f"{name:<10} {seconds:>9.2f} {optimum:>10.4f}"
        if rust is None:
            cells += f" {'not installed':>17}"
        else:
            row.update(rust_seconds=rust[0], rust_optimum=rust[1], speed_ratio=rust[0] / seconds)
            cells += f" {rust[0]:>17.2f} {rust[1]:>10.4f} {rust[0] / seconds:>5.2f}x"
        print(cells, flush=True)
        rows.append(row)
    write_json(args.json, "solver", rows, device=args.device)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
