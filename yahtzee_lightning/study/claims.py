"""The claims table of a study's report (``claims.md``), judged from its results, never written by hand.

Within each ablation the cells are ranked by their final mean score over seeds, and each cell is
tested against the next one down (and the first against the last): Welch's t-test over seeds,
the difference of means with its 95 % interval. Each agent of T1 is tested against the greedy
player's mean on the reference games (a one-sample t-test over its seeds). A difference whose
interval holds 0 is "not resolved at this n": the seeds cannot tell the two apart, which is not
the same as showing they are equal (the interval says how large a difference is still possible).
A cell with no finished seed yet (a study still running) is listed as pending, never ranked.
"""

from __future__ import annotations

from pathlib import Path

from .context import Context, Series, agents, markdown_table
from .stats import against, welch

RESOLVED_NOT = "not resolved at this n"
PENDING = "pending: not judged"


def ordering_claims(ctx: Context, ablation: str) -> list[list[str]]:
    """Rows for one ablation: each cell against the next one down, and the first against the last."""
    series = ctx.series(ablation)
    ranked = [s for s in series if finished(s)]
    ranked.sort(key=lambda s: -s.finals["mean_score"].mean())
    pairs: list[tuple[Series, Series]] = list(zip(ranked, ranked[1:], strict=False))
    if len(ranked) > 2:
        pairs.append((ranked[0], ranked[-1]))
    rows = []
    for a, b in pairs:
        c = welch(a.finals["mean_score"], b.finals["mean_score"])
        verdict = f"**{a.label} > {b.label}**" if c.resolved else RESOLVED_NOT
        rows.append([ablation, f"{a.label} vs {b.label}", c.text(), verdict])
    return rows + [[ablation, s.label, "no finished seed yet", PENDING] for s in series if not finished(s)]


def finished(s: Series) -> bool:
    """Whether a cell has at least one member's final mean score (a study still running has cells without)."""
    return "mean_score" in s.finals and bool(s.finals["mean_score"].notna().any())


def greedy_claims(ctx: Context, ablations: list[str]) -> list[list[str]]:
    """Rows for each agent of T1 against the greedy player's mean score on the reference games."""
    greedy = (ctx.reference.get("greedy") or {}).get("score", {}).get("mean")
    if greedy is None:
        return []
    rows = []
    for s in agents(ctx, ablations):
        c = against(s.finals["mean_score"], greedy)
        picked = f" (best of {s.picked_from} cells, after the fact)" if s.picked_from > 1 else ""
        side = "above" if c.effect > 0 else "below"
        verdict = f"**{side} the greedy player**" if c.resolved else RESOLVED_NOT
        rows.append(["against greedy", f"{s.label}{picked} vs greedy {greedy:.1f}", c.text(), verdict])
    return rows


def write_claims(ctx: Context, path: Path) -> int:
    """``claims.md``: every ordering of the study's ablations and every agent against the greedy
    player, each with its test, effect, interval, n and verdict; returns the number of rows."""
    study = ctx.study
    rows = []
    for name, ab in study.ablations.items():
        if not ab.scheduler and len(ab.cells) > 1:
            rows += ordering_claims(ctx, name)
    rows += greedy_claims(ctx, [n for n, ab in study.ablations.items() if not ab.scheduler])
    header = ["ablation", "comparison (final mean score)", "difference [95 % interval] (test, n, df, p)", "verdict"]
    text = markdown_table(header, rows) if rows else "No comparison: no ablation has two cells with results.\n"
    path.write_text(text)
    return len(rows)
