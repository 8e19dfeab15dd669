"""``yahtzee-lightning solve``: build (or load) the exact optimal table and print the optimum."""

from __future__ import annotations

from pathlib import Path

from .args import VerbParser, add_rules_arguments, device_from_args, plain, rules_from_args


def main(argv: list[str] | None = None) -> int:
    parser = VerbParser(prog="yahtzee-lightning solve", description=plain(__doc__))
    add_rules_arguments(parser)
    parser.add_argument("--device", default="cpu", help="torch device to solve on: cpu, cuda ... (default: cpu)")
    parser.add_argument("--out", default=None, help="where to save the table (default: the cache)")
    parser.add_argument("--force", action="store_true", help="solve again even if the table is cached")
    args = parser.parse_args(argv)
    rules = rules_from_args(args, parser)
    from ..solver.cache import load_trusted, table_path
    from ..solver.table import check_rules, solve

    device = device_from_args(args.device, parser)
    path = Path(args.out) if args.out else table_path(rules)
    if path.is_dir() or path.parent.is_file():
        parser.error(f"--out {path}: {'is a folder' if path.is_dir() else 'its parent is a file'}; give a file path")
    try:  # a damaged or older table is solved again (with a warning); a file of yours for other rules is refused
        if args.out and path.is_file() and not args.force:
            check_rules(path, rules)
        table = None if args.force else load_trusted(path, rules, device)
    except ValueError as e:
        parser.error(str(e))
    if table is not None:
        print(f"loaded {path} (solved in {table.seconds:.2f} s)")
    else:
        table = solve(rules, device=device, progress=True)
        try:
            table.save(path)
        except OSError as e:
            parser.error(f"cannot save the table to {path}: {e}")
        print(f"solved in {table.seconds:.2f} s on {device}; saved {path}")
    print(f"optimal expected score ({rules.tag()}): {table.optimum:.4f}")
    return 0
