"""The report's tables (Markdown): entropy regimes, the full-game summary, the score distribution and
population-based training; each writes its file and returns its number of rows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .context import (
    THRESHOLD_COLUMNS,
    Context,
    agents,
    label_of_cell,
    markdown_table,
    plus_minus,
    reference_columns,
    reference_rows,
)


def table_entropy(ctx: Context, ablations: list[str], path: Path) -> int:
    """Entropy regimes: mean score, bonus and Yahtzee rates, regret per game, per cell."""
    rows = []
    for s in ctx.all_series(ablations):
        f = s.finals
        if f.empty:
            continue
        pct = [plus_minus(f[c], 100) for c in ("upper_bonus_rate", "yahtzee_rate")]
        rows.append(
            [s.label, str(len(f)), plus_minus(f["mean_score"]), *pct, plus_minus(f.get("regret_per_game", pd.Series()))]
        )
    rows += reference_rows(ctx, lambda r: [r["score"]["mean"], r["upper_bonus_rate"], r["yahtzee_rate"]])
    header = ["regime", "seeds", "mean score", "upper bonus %", "Yahtzee %", "regret per game"]
    path.write_text(markdown_table(header, rows))
    return len(rows)


def table_summary(ctx: Context, ablations: list[str], path: Path) -> int:
    """T1: per agent (best cell of each algorithm) the budget, mean, SD, rates, share >= 250, regret."""
    ref = ctx.reference
    rows = []
    if ref:
        o = ref["optimal"]
        rows.append(
            [
                "optimal",
                "exact",
                f"{o['exact_expected_score']:.2f} (exact; {o['score']['mean']:.1f} here)",
                f"{o['score']['sd']:.1f}",
                f"{100 * o['upper_bonus_rate']:.1f}",
                f"{100 * o['yahtzee_rate']:.1f}",
                f"{100 * o['share_at_least_250']:.1f}",
                "0",
            ]
        )
        g = ref["greedy"]
        rows.append(
            [
                "greedy",
                "-",
                f"{g['score']['mean']:.1f}",
                f"{g['score']['sd']:.1f}",
                f"{100 * g['upper_bonus_rate']:.1f}",
                f"{100 * g['yahtzee_rate']:.1f}",
                f"{100 * g['share_at_least_250']:.1f}",
                f"{g['regret']['per_game_mean']:.1f}",
            ]
        )
    for s in agents(ctx, ablations):
        f, cell = s.finals, ctx.study.cells[s.cell]
        rows.append(
            [
                f"{s.label} ({label_of_cell(ctx, s)})",
                f"{cell.total_games:,}",
                plus_minus(f["mean_score"]),
                plus_minus(f["sd"]),
                plus_minus(f["upper_bonus_rate"], 100),
                plus_minus(f["yahtzee_rate"], 100),
                plus_minus(f["share_at_least_250"], 100),
                plus_minus(f["regret_per_game"]),
            ]
        )
    header = ["agent", "training games", "mean", "SD", "upper bonus %", "Yahtzee %", "games >= 250 %", "regret/game"]
    path.write_text(markdown_table(header, rows))
    return len(rows)


def table_distribution(ctx: Context, ablations: list[str], path: Path) -> int:
    """T2: P(score >= n) per agent, the optimum and the greedy player."""
    rows = []
    for name, summary in reference_columns(ctx):
        rows.append([name, *(f"{100 * summary['p_score_at_least'][n]:.2f}" for n in THRESHOLD_COLUMNS)])
    for s in agents(ctx, ablations):
        rows.append([s.label, *(plus_minus(s.finals[f"p_ge_{n}"], 100, 2) for n in THRESHOLD_COLUMNS)])
    path.write_text(markdown_table(["agent", *(f"P(>= {n}) %" for n in THRESHOLD_COLUMNS)], rows))
    return len(rows)


def table_population(ctx: Context, ablations: list[str], path: Path) -> int:
    """B2: the population's best member and mean against the fixed settings, with the best's evolved settings."""
    rows = []
    for name in ablations:
        for s in ctx.series(name):
            f = s.finals
            if f.empty:
                continue
            if ctx.study.ablations[name].scheduler:
                best = f.loc[f["mean_score"].idxmax()]
                settings = ", ".join(f"{k.split('.')[-1]}={best[k]:.3g}" for k in f.columns if k.startswith("setting/"))
                rows.append(
                    [f"{name}: best member (seed {int(best['seed'])})", "1", f"{best['mean_score']:.1f}", settings]
                )
                rows.append([f"{name}: population mean", str(len(f)), plus_minus(f["mean_score"]), ""])
            else:
                rows.append([f"{name}: fixed settings ({s.label})", str(len(f)), plus_minus(f["mean_score"]), ""])
    path.write_text(markdown_table(["who", "members", "final mean score", "evolved settings (the best's last)"], rows))
    return len(rows)
