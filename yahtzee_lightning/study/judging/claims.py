"""The claims of a study's report (``claims.md``), judged from its results, never written by hand.

Confirmatory: the study file's hypotheses, each tested as written down before the runs, with Holm's
correction across them (``.hypotheses``). Everything else is exploratory, and labelled so: within
each ablation every cell against the next one down by final mean score (and the first against the
last: pairs chosen after ranking), Welch's t-test over seeds; a cell against the same recipe at another
network size at the same games trained (``chain.size_twins``); the factorial effects of ablations with
two axes (main effects averaged over the other axis, the interaction) and the linear trend of an
ordered axis, as contrasts of cell means; each agent of T1 against the greedy player on each seed's own
final games (paired per seed) and its mean of games against the paper's headline 241.78 (its best A2C's
mean over 100,000 games, which its abstract calls a median), except in a study whose cells stand for
the rows of a published table (a ``row`` label: each is held against its own row). A difference whose
interval holds 0 is "not resolved at this n": the seeds cannot tell the two apart, which is not the
same as showing they are equal. A cell with no finished seed yet is listed as pending, never ranked.
Collapsed members (at their last evaluations: their value head explains nothing, their keep head is
random or narrowed onto three keeps, or their score fell below 80 % of their best: ``results.collapse``)
are counted per cell, with which sign and when.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..chain import scratch_twin, size_twins
from ..results import COLLAPSE_WINDOW, DEAD_VALUE, FALLEN, NARROW_KEEP, SATURATED_LOGIT
from . import hypotheses
from .context import Context, Series, agents, collapsed, markdown_table
from .factorial import PENDING, factorial_claims, verdict
from .published import AXIS as ROW_AXIS
from .stats import against, paired, welch

#: The paper's headline: its best A2C (1,000,000 games) over 100,000 games. The abstract calls it a median;
#: the results table and the evaluation log print it as the mean of those games (their variance beside it).
PAPER_HEADLINE = 241.78


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
        rows.append(
            [
                ablation,
                f"{a.label} vs {b.label} (ranked after the fact)",
                c.text(),
                verdict(c, f"{a.label} > {b.label}"),
            ]
        )
    return rows + [[ablation, s.label, "no finished seed yet", PENDING] for s in series if not finished(s)]


def chain_claims(ctx: Context, ablation: str) -> list[list[str]]:
    """Rows for a chained ablation: each cell against its settings trained from a random start, where
    the study has them (``chain.scratch_twin``): the comparison a transfer is made for, not ranked."""
    rows = []
    for s in ctx.series(ablation):
        twin = scratch_twin(ctx.study, s.cell)
        if twin is None or not finished(s):
            continue
        other = next(o for o in ctx.series(twin[0]) if o.cell == twin[1])
        if finished(other):
            c = welch(s.finals["mean_score"], other.finals["mean_score"])
            what = f"{s.label} vs the same settings from a random start ({twin[0]}: {other.label})"
            rows.append(
                [ablation, what, c.text(), verdict(c, f"{s.label} {'>' if c.effect > 0 else '<'} from a random start")]
            )
    return rows


def size_claims(ctx: Context, ablation: str) -> list[list[str]]:
    """Rows for each cell with another network size of its recipe in the study (``chain.size_twins``):
    its final mean score against the twin's members at the twin's evaluation nearest this cell's
    budget (or the twin's finals where its budget is the same), the same games trained, so the
    difference is the network's alone (not its budget). A twin of the same budget in the same ablation
    is left to that ablation's own ranking."""
    rows = []
    for s in ctx.series(ablation):
        if not finished(s):
            continue
        budget = ctx.study.cells[s.cell].total_games
        for twin_ablation, twin_cell in size_twins(ctx.study, s.cell):
            other = next(o for o in ctx.series(twin_ablation) if o.cell == twin_cell)
            twin_budget = ctx.study.cells[twin_cell].total_games
            if twin_budget == budget:  # the same games trained at the end: its finals
                if twin_ablation == ablation or not finished(other):  # the ablation ranks its own finals
                    continue
                at, where = _done(other), f"its final {budget:,} games"
            else:
                at = nearest_evaluation(other.evals, budget)
                games = ", ".join(f"{g:,.0f}" for g in sorted(set(at.get("games", []))))
                where = f"its evaluation nearest that ({games} games; its own budget {twin_budget:,})"
            if at.empty:
                continue
            c = welch(_done(s)["mean_score"], at["mean_score"])
            what = f"{s.label} at its final {budget:,} games vs {twin_ablation}: {other.label} at {where}"
            rows.append([ablation, what, c.text(), verdict(c, f"{'higher' if c.effect > 0 else 'lower'} at this size")])
    return rows


def nearest_evaluation(evals: pd.DataFrame, games: int) -> pd.DataFrame:
    """Each seed's in-training evaluation nearest ``games`` games trained (one row a seed)."""
    rows = evals.dropna(subset=["games", "mean_score"]) if len(evals) else evals
    if rows.empty:
        return rows
    gap = (rows["games"] - games).abs()
    return rows.loc[gap.groupby(rows["seed"]).idxmin()].sort_values("seed")


def finished(s: Series) -> bool:
    """Whether a cell has at least one member's final mean score (a study still running has cells without)."""
    return "mean_score" in s.finals and bool(s.finals["mean_score"].notna().any())


def _done(s: Series):
    f = s.finals
    return f[f["status"] == "done"].sort_values("seed") if "status" in f else f


def greedy_claims(ctx: Context, ablations: list[str]) -> list[list[str]]:
    """Rows for each agent of T1 against the greedy player on each seed's own final games (paired per
    seed; the greedy player's mean on one member's games where the table has no per-seed numbers),
    and its mean of games against the paper's headline (a mean, though its abstract says median)."""
    greedy = (ctx.reference.get("greedy") or {}).get("score", {}).get("mean")
    headline = not beside_published_rows(ctx.study)  # a published table's rows: each against its own row
    rows = []
    for s in agents(ctx, ablations):
        f = _done(s)
        picked = f" (best of {s.picked_from} cells, after the fact)" if s.picked_from > 1 else ""
        if "greedy/mean_score" in f and f["greedy/mean_score"].notna().all():
            c = paired(f["mean_score"], f["greedy/mean_score"])
            what = f"{s.label}{picked} vs greedy on each seed's games ({f['greedy/mean_score'].mean():.1f} on average)"
        elif greedy is not None:
            c = against(f["mean_score"], greedy)
            what = f"{s.label}{picked} vs greedy {greedy:.1f} (one member's games)"
        else:
            continue
        side = "above" if c.effect > 0 else "below"
        rows.append(["against greedy", what, c.text(), verdict(c, f"{side} the greedy player")])
        if headline and s.ablation and ctx.study.cells[s.cell].task == "full_game":
            m = against(f["mean_score"], PAPER_HEADLINE)
            side = "above" if m.effect > 0 else "below"
            what = (
                f"{s.label}{picked}: mean of games, per seed, vs the paper's headline {PAPER_HEADLINE} "
                "(its best A2C's mean; its abstract says median)"
            )
            rows.append(["against the paper", what, m.text(), verdict(m, f"{side} the paper's headline")])
    return rows


def beside_published_rows(study) -> bool:
    """Whether the study's cells stand for rows of a published table (a ``row`` label): each is then held
    against its own row's number (its hypotheses, ``study compare``), never against one headline."""
    return any(ROW_AXIS in labels for ab in study.ablations.values() for _, labels in ab.cells)


RULE = (
    f"A member collapsed where, at each of its last {COLLAPSE_WINDOW} evaluations, its value head explained at "
    f"most {DEAD_VALUE * 100:.0f} % of the returns' variance (value head), its keep head's entropy was within 1 % "
    f"of ln 32 (random keeps), its three most used keeps took at least {NARROW_KEEP * 100:.0f} % of its rolling "
    f"decisions (three keeps; the optimal player: 40 %), a head's largest absolute logit was {SATURATED_LOGIT:,.0f} "
    f"or more (saturated logits), or its full-game score had fallen to {FALLEN * 100:.0f} % "
    "of its best evaluation or below (score fell); from: the first evaluation from which that held to the end."
)


def collapse_lines(ctx: Context) -> list[str]:
    """Per cell with collapsed members: how many of its finished seeds collapsed, which head, and when."""
    t = ctx.table
    lines = []
    for ab in ctx.study.ablations.values():
        for cid, labels in ab.cells:
            f = t[(t["cell"] == cid) & (t["stage"] == "final") & (t["status"] == "done") & t["seed"].isin(ab.seeds)]
            dead = f[collapsed(f)]
            if dead.empty:
                continue
            when = ", ".join(
                f"seed {int(r.seed)}: {r.collapse} from {int(r.collapsed_at):,} games (final {r.mean_score:.1f})"
                for r in dead.itertuples()
            )
            alive = f[~collapsed(f)]["mean_score"]
            rest = f"; the others {', '.join(f'{v:.1f}' for v in alive)}" if len(alive) else ""
            lines.append(
                f"* {ab.name}: {ctx.label(cid, labels)}: {len(dead)} of {len(f)} seeds collapsed ({when}){rest}"
            )
    return list(dict.fromkeys(lines))


def write_claims(ctx: Context, path: Path) -> int:
    """``claims.md``: the hypotheses (confirmatory, Holm-corrected), then every exploratory comparison,
    each with its test, effect, interval, n and verdict, and the collapsed members; returns the rows."""
    study = ctx.study
    parts, count = [], 0
    if study.hypotheses:
        confirm = hypotheses.rows(ctx)
        count += len(confirm)
        header = ["id", "the claim", "compared", "estimate [95 % interval] (test, n, df, p)", "Holm p", "verdict"]
        parts += [
            f"### Confirmatory: the {len(confirm)} hypotheses of the study file, Holm's correction across them",
            "",
            markdown_table(header, confirm),
        ]
    rows = []
    for name, ab in study.ablations.items():
        if not ab.scheduler and len(ab.cells) > 1:
            rows += ordering_claims(ctx, name) + factorial_claims(ctx, name)
        rows += chain_claims(ctx, name) if ab.start_from else size_claims(ctx, name)
    rows += greedy_claims(ctx, [n for n, ab in study.ablations.items() if not ab.scheduler])
    count += len(rows)
    header = ["ablation", "comparison (final mean score unless named)", "difference [95 % interval] (test, n, df, p)"]
    parts += ["### Exploratory: every other comparison (no correction; chosen after seeing the data)", ""]
    parts += [
        markdown_table([*header, "verdict"], rows)
        if rows
        else "No comparison: no ablation has two cells with results.\n"
    ]
    if beside_published_rows(study):
        parts += [
            "",
            "No cell is set against the paper's headline: this study's cells stand for rows of a published table, "
            "each held against its own row's numbers (its hypotheses above; `study compare` for every column).",
            "",
        ]
    dead = collapse_lines(ctx)
    parts += ["### Collapsed members", ""]
    parts += [RULE, ""] + (dead or ["None: no member had collapsed at its last evaluations."])
    path.write_text("\n".join(parts) + "\n")
    return count
