"""Aggregates over seeds beside the mean (A1-A3), as rliable computes them (here on numpy and scipy,
``stats``): per cell the mean, median and interquartile mean of the final mean score with stratified
bootstrap intervals, the probability of improvement between cells, and performance profiles."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..chain import scratch_twin
from ..judging.context import Context, Series, collapsed, markdown_table
from ..judging.stats import bootstrap, iqm, performance_profile, probability_of_improvement
from .canvas import new_figure, reference_lines, save_figure


def _done_finals(s: Series) -> pd.DataFrame:
    f = s.finals
    return f[f["status"] == "done"] if "status" in f else f


def _scores(s: Series) -> np.ndarray:
    """A cell's finished seeds' final mean scores."""
    f = _done_finals(s)
    return f["mean_score"].dropna().to_numpy() if "mean_score" in f else np.array([])


def table_aggregates(ctx: Context, ablations: list[str], path: Path) -> int:
    """A1: per cell, the final mean score's mean, median and interquartile mean over seeds, each with
    its stratified bootstrap interval, and how many seeds collapsed."""
    rows = []
    for s in ctx.all_series(ablations):
        x = _scores(s)
        if not len(x):
            continue
        cells = []
        for func in (np.mean, np.median, iqm):
            est, low, high = bootstrap(func, x)
            cells.append(f"{est:.1f}" + (f" [{low:.1f}, {high:.1f}]" if not math.isnan(low) else ""))
        rows.append([s.label, str(len(x)), *cells, str(int(collapsed(_done_finals(s)).sum()))])
    header = ["cell", "seeds", "mean", "median", "IQM", "collapsed"]
    path.write_text(markdown_table(header, rows))
    return len(rows)


def table_improvement(ctx: Context, ablations: list[str], path: Path) -> int:
    """A2: for every pair of cells of one ablation, and each chained cell against its settings from a
    random start (``chain.scratch_twin``), the probability that a seed of the first ends above a seed
    of the second (final mean score), with its stratified bootstrap interval. Cells of different
    ablations vary more than one thing at a time: no pair."""
    series = [s for s in ctx.all_series(ablations) if len(_scores(s))]
    by_cell = {s.cell: s for s in series}
    pairs = [(a, b) for i, a in enumerate(series) for b in series[i + 1 :] if a.ablation == b.ablation]
    for s in series:
        twin = scratch_twin(ctx.study, s.cell) if ctx.study.cells[s.cell].start_from else None
        if twin and twin[1] in by_cell:
            pairs.append((s, by_cell[twin[1]]))
    rows = []
    for a, b in pairs:
        x, y = _scores(a), _scores(b)
        est, low, high = bootstrap(probability_of_improvement, x, y)
        interval = f" [{low:.2f}, {high:.2f}]" if not math.isnan(low) else ""
        rows.append([a.label, b.label, f"{est:.2f}{interval}", f"{len(x)} vs {len(y)}"])
    path.write_text(markdown_table(["X", "Y", "P(X > Y) [95 % interval]", "seeds"], rows))
    return len(rows)


def draw_profiles(ctx: Context, ablations: list[str], path: Path) -> int:
    """Performance profiles (rliable's run-score distributions): for each cell, the share of its seeds
    whose final mean score is above each threshold, with a stratified bootstrap band over the seeds."""
    series = [s for s in ctx.all_series(ablations) if "mean_score" in s.finals]
    finals = [s.finals.loc[s.finals["status"] == "done", "mean_score"].dropna() for s in series]
    values = np.concatenate([f.to_numpy() for f in finals]) if finals else np.array([])
    if not len(values):
        fig, ax = new_figure()
        save_figure(fig, path)
        return 0
    ref = ctx.reference
    refs = [ref["optimal"]["exact_expected_score"], ref["greedy"]["score"]["mean"]] if ref else []
    lo, hi = min([values.min(), *refs]) - 5, max([values.max(), *refs]) + 5
    taus = np.linspace(lo, hi, 200)
    fig, ax = new_figure()
    points = 0
    for s, f in zip(series, finals, strict=True):
        x = f.to_numpy()
        if not len(x):
            continue
        points += len(x)
        profile = performance_profile(x, taus)
        (line,) = ax.plot(taus, profile, label=f"{s.label} ({len(x)} seeds)")
        if len(x) > 1:
            bands = np.array([bootstrap(lambda v, t=t: float((v > t).mean()), x)[1:] for t in taus[::5]])
            ax.fill_between(taus[::5], bands[:, 0], bands[:, 1], color=line.get_color(), alpha=0.15)
    reference_lines(ax, ctx, "mean_score", horizontal=False)
    ax.set_xlabel("final mean score (tau)")
    ax.set_ylabel("share of seeds scoring above tau")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(alpha=0.3)
    save_figure(fig, path)
    return points
