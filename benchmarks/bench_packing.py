"""Packing's saving: a study profile's wall clock run packed against the same profile run ``--no-pack``.

Runs ``yahtzee-lightning study run FILE --profile P`` twice, each into a fresh temporary folder
(packed first, then one trial per cell), each in its own process so that neither inherits the
other's Ray instance, and prints the two wall clocks and their ratio (unpacked / packed: above 1,
packing saves time). On a shared machine run it more than once: the ratio is the measure, not
the seconds.

    python benchmarks/bench_packing.py [--file conf/study/paper.yaml] [--profile smoke] [--cpus 2]
        [--json out.json] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import write_json  # noqa: E402


def run_once(file: str, profile: str, cpus: int | None, pack: bool) -> float:
    """Seconds one ``study run`` takes into a temporary folder (it fails loudly if the study does)."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "yahtzee_lightning.cli", "study", "run", file, "--profile", profile]
        cmd += ["--out", str(Path(tmp) / "study")] + (["--cpus", str(cpus)] if cpus else [])
        cmd += [] if pack else ["--no-pack"]
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise SystemExit(f"bench_packing: `{' '.join(cmd)}` failed ({done.returncode}): " + " | ".join(tail))
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", default="conf/study/paper.yaml")
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--cpus", type=int, help="the local Ray instance's CPUs (default: all cores)")
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    rows = [{"packed": pack, "seconds": run_once(args.file, args.profile, args.cpus, pack)} for pack in (True, False)]
    ratio = rows[1]["seconds"] / rows[0]["seconds"]
    table = [
        f"study {args.file}, profile {args.profile}, cpus {args.cpus or 'all'}",
        "| run | wall clock (s) |",
        "|---|---:|",
        *(f"| {'packed' if r['packed'] else '--no-pack'} | {r['seconds']:.1f} |" for r in rows),
        f"| unpacked / packed | {ratio:.2f}x |",
    ]
    print("\n".join(table))
    if args.markdown:
        Path(args.markdown).write_text("\n".join(table) + "\n")
    write_json(args.json, "packing", rows, file=args.file, profile=args.profile, cpus=args.cpus, ratio=ratio)


if __name__ == "__main__":
    main()
