"""The report's figures: learning curves, bars per configuration, the Pareto frontier, grouped bars per box, and
population-based training; each drawing takes the context, the ablations it draws and the PNG's path, and returns the
number of points it drew."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .context import (
    Context,
    Series,
    agents,
    best_member,
    curve,
    mean_ci,
    new_figure,
    pareto_front,
    reference_columns,
    reference_lines,
    save_figure,
)


def draw_curves(metric: str, ylabel: str, refs: bool = True) -> Callable[[Context, list[str], Path], int]:
    """Learning curves of ``metric`` over games trained: a line per cell, its band over seeds."""

    def draw(ctx: Context, ablations: list[str], path: Path) -> int:
        fig, ax = new_figure()
        points = 0
        for s in ctx.all_series(ablations):
            games, mean, half = curve(s.evals, metric)
            if len(games) == 0:
                continue
            points += len(games)
            (line,) = ax.plot(games, mean, marker="o", markersize=3, label=s.label)
            ax.fill_between(games, mean - half, mean + half, color=line.get_color(), alpha=0.2)
        if refs:
            reference_lines(ax, ctx, metric)
        ax.set_xlabel("games trained")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7, loc="best")
        ax.grid(alpha=0.3)
        save_figure(fig, path)
        return points

    return draw


def draw_bars(metrics: tuple[tuple[str, str], ...]) -> Callable[[Context, list[str], Path], int]:
    """Final value per cell (horizontal bars with 95 % error bars), a panel per metric, with the reference lines."""

    def draw(ctx: Context, ablations: list[str], path: Path) -> int:
        series = ctx.all_series(ablations)
        longest = max((len(s.label) for s in series), default=10)
        fig, axes = new_figure(3 + 0.07 * longest + 4 * len(metrics), 1.5 + 0.3 * len(series), len(metrics))
        points = 0
        for i, (ax, (metric, xlabel)) in enumerate(zip(axes, metrics, strict=True)):
            stats = [mean_ci(s.finals[metric]) if metric in s.finals else (math.nan, math.nan) for s in series]
            points += sum(not math.isnan(m) for m, _ in stats)
            y = np.arange(len(series))
            ax.barh(y, [m for m, _ in stats], xerr=[h for _, h in stats], capsize=3, color="tab:blue", alpha=0.8)
            reference_lines(ax, ctx, metric, horizontal=False)
            if metric.endswith("_rate"):
                ax.set_xlim(0, 1)
            ax.set_yticks(y, [s.label for s in series] if i == 0 else [""] * len(series), fontsize=8)
            ax.invert_yaxis()
            ax.set_xlabel(xlabel)
            ax.legend(fontsize=7, loc="lower right")
            ax.grid(axis="x", alpha=0.3)
        save_figure(fig, path)
        return points

    return draw


def draw_pareto(ctx: Context, ablations: list[str], path: Path) -> int:
    """Each member at (single-turn score, full-game score); cell means with error bars; the
    non-dominated cells joined; the greedy and optimal players as points."""
    fig, ax = new_figure()
    means = []
    for s in ctx.all_series(ablations):
        f = s.finals.dropna(subset=["single_turn_score", "mean_score"])
        if f.empty:
            continue
        (pts,) = ax.plot(f["single_turn_score"], f["mean_score"], "o", alpha=0.35, markersize=4)
        (mx, hx), (my, hy) = mean_ci(f["single_turn_score"]), mean_ci(f["mean_score"])
        ax.errorbar(mx, my, xerr=hx, yerr=hy, fmt="s", color=pts.get_color(), capsize=3, label=s.label)
        means.append((mx, my))
    frontier = pareto_front(means)
    if len(frontier) > 1:
        ax.plot(*zip(*frontier, strict=True), color="black", linewidth=1, label="frontier (non-dominated cells)")
    ref = ctx.reference
    if ref:
        g, o = ref["greedy"]["score"]["mean"], ref["optimal"]["score"]["mean"]
        ax.plot(ref["single_turn"]["greedy"], g, "^", color="grey", markersize=9, label="greedy")
        ax.plot(ref["single_turn"]["optimal"], o, "*", color="black", markersize=11, label="optimal")
    ax.set_xlabel("single-turn score (points in one turn from a random card)")
    ax.set_ylabel("full-game mean score")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    save_figure(fig, path)
    return len(means)


def draw_agent_bars(
    column: str,
    boxes: tuple[str, ...],
    ylabel: str,
    extra: str | None = None,
    turn: bool = False,
    limits: tuple[float, float] | None = None,
):
    """Grouped bars per box: each agent (mean over seeds, 95 % error bars) beside the optimal and greedy players."""

    def reference_value(summary: dict[str, Any], box: str) -> float:
        if box == extra:
            return summary["upper_bonus_mean"]
        field = {"box_mean": "mean", "first_box": "first_box_share", "fill_turn": "median_fill_turn"}[column]
        return summary["boxes"][box][field] + (1 if turn else 0)

    def draw(ctx: Context, ablations: list[str], path: Path) -> int:
        found = agents(ctx, ablations)
        labels = [*boxes, *([extra] if extra else [])]
        cols = [(s.label, s) for s in found] + reference_columns(ctx)
        fig, ax = new_figure(max(8, 1.1 * len(labels)), 4.5)
        width = 0.8 / max(len(cols), 1)
        points = 0
        for i, (name, src) in enumerate(cols):
            if isinstance(src, Series):
                shift = 1 if turn else 0  # fill turns are stored from 0
                stats = [
                    mean_ci(src.finals["upper_bonus_mean"] if b == extra else src.finals[f"{column}/{b}"] + shift)
                    for b in labels
                ]
                points += sum(not math.isnan(m) for m, _ in stats)
                heights, err = [m for m, _ in stats], [h for _, h in stats]
            else:
                heights, err = [reference_value(src, b) for b in labels], None
            x = np.arange(len(labels)) + i * width
            ax.bar(x, heights, width, yerr=err, capsize=2, label=name, hatch="//" if name == "greedy" else None)
        ax.set_xticks(np.arange(len(labels)) + width * (len(cols) - 1) / 2, labels, rotation=30, ha="right")
        ax.set_ylabel(ylabel)
        if limits:  # a share or a turn: the error bars are cut where the quantity ends
            ax.set_ylim(*limits)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside the bars, never over them
        ax.grid(axis="y", alpha=0.3)
        save_figure(fig, path)
        return points

    return draw


def draw_population(ctx: Context, ablations: list[str], path: Path) -> int:
    """Population-based training: every member's curve, the best member's in bold, and the cells
    at fixed settings (mean and band) on the same budget."""
    fig, ax = new_figure()
    points = 0
    for name in ablations:
        for s in ctx.series(name):
            if ctx.study.ablations[name].scheduler:
                best = best_member(s)
                for seed, rows in s.evals.groupby("seed"):
                    rows = rows.sort_values("games")
                    bold = seed == best
                    label = f"{name}: best member (seed {seed})" if bold else None
                    ax.plot(
                        rows["games"],
                        rows["mean_score"],
                        color="tab:red",
                        alpha=1 if bold else 0.25,
                        linewidth=2 if bold else 1,
                        label=label,
                    )
                    points += len(rows)
            else:
                games, mean, half = curve(s.evals, "mean_score")
                points += len(games)
                (line,) = ax.plot(games, mean, color="tab:blue", label=f"{name}: fixed settings, mean over seeds")
                ax.fill_between(games, mean - half, mean + half, color=line.get_color(), alpha=0.2)
    reference_lines(ax, ctx, "mean_score")
    ax.set_xlabel("games trained")
    ax.set_ylabel("mean score")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    save_figure(fig, path)
    return points
