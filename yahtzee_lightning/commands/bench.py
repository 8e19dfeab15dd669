"""``yahtzee-lightning bench NAME [args]``: run ``benchmarks/bench_NAME.py`` of a source checkout.

The benchmarks are scripts beside the package in a checkout, not part of it: an installed package
has none, and the folder above it (``site-packages``) may hold another package's ``benchmarks/``
(TorchRL's), which is never run."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

NOT_INSTALLED = (
    "yahtzee-lightning bench: the benchmarks come with a source checkout of yahtzee_lightning "
    "(its benchmarks/ folder), not with the installed package; run bench from a checkout"
)


def bench_dir() -> Path | None:
    """The checkout's ``benchmarks/``, or None for an installed package."""
    from ..shipped import checkout

    root = checkout()
    return root / "benchmarks" if root is not None and (root / "benchmarks").is_dir() else None


def available() -> list[str]:
    folder = bench_dir()
    return sorted(p.stem.removeprefix("bench_") for p in folder.glob("bench_*.py")) if folder else []


def main(argv: list[str]) -> int:
    folder, names = bench_dir(), available()
    if argv and argv[0] in ("-h", "--help"):
        print(
            "usage: yahtzee-lightning bench NAME [options]\n"
            + (f"benchmarks: {', '.join(names)}" if folder else NOT_INSTALLED)
        )
        return 0
    if folder is None:
        print(NOT_INSTALLED, file=sys.stderr)
        return 2
    if not argv:
        print(f"usage: yahtzee-lightning bench NAME [options]\nbenchmarks: {', '.join(names) or 'none found'}")
        return 0 if names else 2
    name, rest = argv[0], argv[1:]
    if name not in names:
        print(f"unknown benchmark {name!r}; available: {', '.join(names)} (in {folder})", file=sys.stderr)
        return 2
    sys.argv = [f"bench_{name}.py", *rest]
    runpy.run_path(str(folder / f"bench_{name}.py"), run_name="__main__")
    return 0
