"""The confirmatory half of a report: the study file's hypotheses, each tested as written down before
the runs, with Holm's correction across them (``claims.md``'s first table).

A hypothesis compares a cell (by its label) with another cell (Welch's t-test over seeds, or for a
``spread`` the Brown-Forsythe test of their SDs), with a reference player on each seed's own final
games (a paired t-test of the per-seed differences), or with a number (a one-sample t-test). Every p
is two-sided; Holm's step-down adjustment holds the family-wise error at 5 % across the study's
hypotheses. Verdicts: ``confirmed`` (adjusted p < 0.05, the predicted sign; ``confirmed at this scale
(128 x 2, 500,000 games)`` where the cell is smaller than the paper's agent, its 600 x 3 network at
1,000,000 games: scale.py), ``contradicted`` (the other sign, or a difference where the claim is a value; ``not testable
at this scale`` for a claim about the paper's agent, ``scale: paper``, judged on a smaller cell),
else ``not resolved at this n``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ...game.rules import episodes_text
from ..hypothesis_file import Hypothesis, cell_label, earlier_folder
from ..model import Cell
from ..results import load_plan, load_table
from .context import Context, bounds
from .scale import PAPER_GAMES, Network, network_of, smaller_network
from .stats import Comparison, against, holm, paired, spread, welch

ALPHA = 0.05
CONFIRMED, CONTRADICTED, UNRESOLVED = "confirmed", "contradicted", "not resolved at this n"
NOT_TESTABLE = "not testable at this scale"


@dataclass
class Judged:
    hypothesis: Hypothesis
    comparison: Comparison | None  # None: a cell without a finished member yet
    p_holm: float = math.nan
    verdict: str = "pending: not judged"


def finals_of(ctx: Context, ablation: str, label: str) -> pd.DataFrame:
    """The finished members' final rows of the cell ``label`` of ``ablation``, by seed."""
    ab = ctx.study.ablations[ablation]
    cell = next(c for c, labels in ab.cells if cell_label(labels) == label)
    t = ctx.table
    rows = t[(t["cell"] == cell) & (t["stage"] == "final") & (t["status"] == "done") & t["seed"].isin(ab.seeds)]
    return rows.sort_values("seed")


def earlier_finals(ctx: Context, h: Hypothesis) -> pd.DataFrame:
    """The finished members' final rows of an earlier study's cell (``compare[1]`` a mapping), by seed."""
    other = h.compare[1]
    folder = earlier_folder(other["study"], ctx.out)
    study, _ = load_plan(folder)
    ab = study.ablations[other.get("ablation", h.ablation)]
    cell = next(c for c, labels in ab.cells if cell_label(labels) == other["cell"])
    t = load_table(folder)
    rows = t[(t["cell"] == cell) & (t["stage"] == "final") & (t["status"] == "done") & t["seed"].isin(ab.seeds)]
    return rows.sort_values("seed")


def compare(ctx: Context, h: Hypothesis) -> Comparison | None:
    """The hypothesis's test on the finished members (None while its cell has none)."""
    a = finals_of(ctx, h.ablation, h.compare[0])
    if a.empty or h.metric not in a:
        return None
    kind = h.against()
    if kind == "value":
        return against(a[h.metric], float(h.compare[1]))
    if kind == "player":
        column = f"{h.compare[1]}/{h.metric}"
        return paired(a[h.metric], a[column]) if column in a else None
    b = earlier_finals(ctx, h) if kind == "earlier" else finals_of(ctx, h.ablation, h.compare[1])
    if b.empty or h.metric not in b:
        return None
    return spread(a[h.metric], b[h.metric]) if h.statistic == "spread" else welch(a[h.metric], b[h.metric])


def verdict(h: Hypothesis, c: Comparison, p_holm: float) -> str:
    if not p_holm < ALPHA:
        return UNRESOLVED
    if h.direction == "equal":
        return CONTRADICTED
    if h.direction == "either":
        return f"{h.compare[0]} {'>' if c.effect > 0 else '<'} {h.second()}"
    return CONFIRMED if (c.effect > 0) == (h.direction == "greater") else CONTRADICTED


def judge(ctx: Context) -> list[Judged]:
    """Every hypothesis of the study tested, with Holm's correction across those that could be."""
    judged = [Judged(h, compare(ctx, h)) for h in ctx.study.hypotheses.values()]
    adjusted = holm([j.comparison.p if j.comparison else math.nan for j in judged])
    for j, p in zip(judged, adjusted, strict=True):
        j.p_holm = p
        if j.comparison is not None:
            j.verdict = verdict(j.hypothesis, j.comparison, p)
            if j.verdict == CONTRADICTED and j.hypothesis.scale == "paper" and below_paper_scale(ctx, j.hypothesis):
                j.verdict = NOT_TESTABLE
            elif j.verdict == CONFIRMED and below_paper_scale(ctx, j.hypothesis):
                j.verdict = f"{CONFIRMED} at this scale ({scale_of(ctx, j.hypothesis)})"  # not the paper's agent
    return judged


def _size(ctx: Context, h: Hypothesis) -> tuple[Network | None, int]:
    """The hypothesis's cell's network (None where its config names none) and training games."""
    cell = _cell(ctx, h)
    return network_of(cell), cell.total_games


def _cell(ctx: Context, h: Hypothesis) -> Cell:
    """The cell a hypothesis names first."""
    ab = ctx.study.ablations[h.ablation]
    return ctx.study.cells[next(c for c, labels in ab.cells if cell_label(labels) == h.compare[0])]


def below_paper_scale(ctx: Context, h: Hypothesis) -> bool:
    """Whether the hypothesis's cell is smaller than the paper's agent (width, depth or budget)."""
    net, games = _size(ctx, h)
    return games < PAPER_GAMES or (net is not None and smaller_network(net))


def scale_of(ctx: Context, h: Hypothesis) -> str:
    """The hypothesis's cell's size as a verdict names it: ``128 x 2, 500,000 games``."""
    net, games = _size(ctx, h)
    budget = episodes_text(games, _cell(ctx, h).task)
    return f"{net.label()}, {budget}" if net is not None else budget


def scaled(c: Comparison, metric: str) -> Comparison:
    """A rate's comparison in points of % (as the report prints rates)."""
    if bounds(metric) != (0.0, 1.0):
        return c
    return Comparison(100 * c.effect, 100 * c.low, 100 * c.high, c.p, c.n, c.df, c.test)


def rows(ctx: Context) -> list[list[str]]:
    """``claims.md``'s confirmatory table: id, the claim, what is compared, the test, Holm's p, the verdict."""
    out = []
    for j in judge(ctx):
        h = j.hypothesis
        unit = " (points of %)" if bounds(h.metric) == (0.0, 1.0) else ""
        stat = "SD over seeds of " if h.statistic == "spread" else ""
        second = f"{h.compare[1]} on each seed's games" if h.against() == "player" else h.second()
        what = f"{stat}{h.metric}{unit}: {h.compare[0]} vs {second}, predicted {h.direction}"
        test = (
            scaled(j.comparison, h.metric).text(2 if unit or abs(j.comparison.effect) < 1 else 1)
            if j.comparison
            else "-"
        )
        p = f"{j.p_holm:.2g}" if not math.isnan(j.p_holm) else "-"
        bold = (
            f"**{j.verdict}**"
            if j.verdict not in (UNRESOLVED, NOT_TESTABLE) and not j.verdict.startswith("pending")
            else j.verdict
        )
        out.append([h.id, h.claim, what, test, p, bold])
    return out
