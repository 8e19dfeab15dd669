"""``yahtzee-lightning solve``: build (or load) the exact optimal table and print the optimum."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..cli import plain
from ..evaluation.cli import add_rules_arguments, rules_from_args


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="yahtzee-lightning solve", description=plain(__doc__))
    add_rules_arguments(parser)
    parser.add_argument("--device", default="cpu", help="torch device to solve on: cpu, cuda ... (default: cpu)")
    parser.add_argument("--out", default=None, help="where to save the table (default: the cache)")
    parser.add_argument("--force", action="store_true", help="solve again even if the table is cached")
    args = parser.parse_args(argv)
    rules = rules_from_args(args, parser)
    from .cache import table_path
    from .table import OptimalTable, solve

    path = Path(args.out) if args.out else table_path(rules)
    if path.exists() and not args.force:
        table = OptimalTable.load(path, rules=rules, device=args.device)
        print(f"loaded {path} (solved in {table.seconds:.2f} s)")
    else:
        table = solve(rules, device=args.device, progress=True)
        table.save(path)
        print(f"solved in {table.seconds:.2f} s on {args.device}; saved {path}")
    print(f"optimal expected score ({rules.tag()}): {table.optimum:.4f}")
    return 0
