"""The optimal table and its score moments on one device, against the CPU in the same run.

    python benchmarks/bench_moments.py --device cuda [--json out.json]
    python benchmarks/bench_moments.py --device cpu --rules five_boxes   # a quick check that it runs

Solves the table (``solve``) and the second and third moments of the points to come
(``solve_moments``) on ``--device`` in the layout a GPU uses (one state a row), then both on the
CPU in its own grouped layout, and compares them: to the bit, and by their largest difference.
Times are wall clock with the device synchronised; the CPU uses every core torch sees.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from yahtzee_lightning.game import Rules
from yahtzee_lightning.solver import solve
from yahtzee_lightning.solver.moments import solve_moments

sys.path.insert(0, str(Path(__file__).parent))
from _common import sync, write_json  # noqa: E402

RULES = {"default": Rules(), "five_boxes": Rules(joker="forced", boxes=(0, 5, 8, 11, 12))}


def _timed(fn, device: torch.device):
    sync(device)
    start = time.perf_counter()
    out = fn()
    sync(device)
    return out, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rules", default="default", choices=list(RULES))
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rules, device = RULES[args.rules], torch.device(args.device)
    rows = {}
    for where, flat in ((device, True), (torch.device("cpu"), False)):  # one state a row, then the CPU's grouping
        label = f"{where}, {'flat' if flat else 'grouped'}"
        table, t_table = _timed(lambda w=where, f=flat: solve(rules, device=w, progress=False, flat=f), where)
        moments, t_moments = _timed(lambda t=table, f=flat: solve_moments(t, progress=False, flat=f), where)
        rows[label] = {"table_s": t_table, "moments_s": t_moments, "values": table.values.cpu(), "m": moments.cpu()}
        print(f"{label}: table {t_table:.2f} s, moments {t_moments:.2f} s", flush=True)
    # Two tables a rounding apart can break a tie between moves of the same mean (and different spread)
    # differently: the moments of the CPU's own table on the device are the like-for-like comparison.
    same = solve_moments(table.to(device), progress=False, flat=True).cpu()
    out: dict = {"device": str(device), "rules": args.rules}
    table = [{"run": name, "table_s": row["table_s"], "moments_s": row["moments_s"]} for name, row in rows.items()]
    (first, a), (second, b) = rows.items()
    pairs = {"table": (a["values"], b["values"]), "moments": (a["m"], b["m"]), "moments_same_table": (same, b["m"])}
    for what, (x, y) in pairs.items():
        ok = torch.isfinite(y) & (y != 0)
        out[f"{what}_bit_equal"] = bool(torch.equal(torch.isnan(x), torch.isnan(y)) and torch.equal(x[ok], y[ok]))
        out[f"{what}_max_rel_diff"] = float(((x[ok] - y[ok]) / y[ok]).abs().max()) if ok.any() else 0.0
        rel = out[f"{what}_max_rel_diff"]
        print(f"{what}: bit-equal {out[f'{what}_bit_equal']}, largest relative difference {rel:.3g}")
    out["speedup_table"] = b["table_s"] / a["table_s"]
    out["speedup_moments"] = b["moments_s"] / a["moments_s"]
    print(f"{first} against {second}: table {out['speedup_table']:.2f}x, moments {out['speedup_moments']:.2f}x")
    write_json(args.json, "moments", table, **out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
