"""``yahtzee-lightning bench NAME [args]``: run ``benchmarks/bench_NAME.py`` of a source checkout."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"


def available() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in BENCH_DIR.glob("bench_*.py"))


def main(argv: list[str]) -> int:
    names = available()
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: yahtzee-lightning bench NAME [options]\nbenchmarks: {', '.join(names) or 'none found'}")
        return 0 if names else 2
    name, rest = argv[0], argv[1:]
    if name not in names:
        print(f"unknown benchmark {name!r}; available: {', '.join(names)} (in {BENCH_DIR})", file=sys.stderr)
        return 2
    sys.argv = [f"bench_{name}.py", *rest]
    runpy.run_path(str(BENCH_DIR / f"bench_{name}.py"), run_name="__main__")
    return 0
