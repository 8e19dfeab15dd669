"""The report's figures: learning curves, bars per configuration, the Pareto frontier, grouped bars per box, and
population-based training; each drawing takes the context, the ablations it draws and the PNG's path, and returns the
number of points it drew."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ...game import BOX_NAMES
from ..judging.context import Context, Series, agents, best_member, collapsed, curve, percent, reference_columns, stat
from .canvas import new_figure, pareto_front, reference_lines, save_figure


def draw_curves(metric: str, ylabel: str, refs: bool = True) -> Callable[[Context, list[str], Path], int]:
    """Learning curves of ``metric`` over games trained: a line per cell, its band over seeds."""

    def draw(ctx: Context, ablations: list[str], path: Path) -> int:
        fig, ax = new_figure()
        points, scale, top = 0, percent(metric), [0.0]
        ends: list[tuple[float, float, str, Any]] = []  # each curve's last point and its change
        drawn: list[tuple[Series, tuple[Any, ...]]] = []
        for s in ctx.all_series(ablations):
            evaluations = with_final(s, metric, *curve(s.evals, metric))
            if len(evaluations[0]):
                drawn.append((s, evaluations))
        log = spans_decades([float(e[0][-1]) for _, e in drawn])
        for i, (s, (games, mean, low, high, final)) in enumerate(drawn):
            if log:  # a log axis has no place for 0 games
                keep = games > 0
                games, mean, low, high = games[keep], mean[keep], low[keep], high[keep]
            points += len(games)
            dead = collapsed_members(s)
            label = s.label + (f" ({dead} of {s.finals['seed'].nunique()} seeds collapsed)" if dead else "")
            style = LINE_STYLES[i // COLOURS % len(LINE_STYLES)]  # past ten curves a colour comes back
            (line,) = ax.plot(games, scale * mean, marker="o", markersize=3, linestyle=style, label=label)
            if final:  # the final evaluation: a square
                ax.plot(games[-1:], scale * mean[-1:], marker="s", markersize=6, color=line.get_color())
            ax.fill_between(games, scale * low, scale * high, color=line.get_color(), alpha=0.2)
            top.append(float(np.nanmax(scale * high)))
            change = last_quarter_change(games, scale * mean)
            if change is not None:  # was it still rising when training stopped?
                ends.append((float(games[-1]), float(scale * mean[-1]), f"{change:+.3g}", line.get_color()))
        ax.margins(x=0.08)  # room for the end labels inside the axes
        if refs:
            top += reference_lines(ax, ctx, metric)
        turns = any(ctx.study.cells[s.cell].task == "single_turn" for s, _ in drawn)
        ax.set_xlabel(games_label(turns, log))
        if log:
            ax.set_xscale("log")
        ax.set_ylabel(ylabel)
        if scale != 1:  # a rate, in % from 0 to a little above the highest value drawn
            ax.set_ylim(0, min(100.0, 1.08 * max(top)) or 1)
        place_legend(ax)  # before the end labels: they are placed on the axes as the legend leaves them
        label_ends(ax, ends)
        ax.grid(alpha=0.3)
        save_figure(fig, path)
        return points

    return draw


#: Curves whose budgets end more than this many times apart share a log x axis: on a linear one the
#: short runs' curves are squashed against its left edge (50,000 games beside 3,380,000 turns).
LOG_SPAN = 10.0
#: A legend of more entries than this goes beside the axes, where it covers no curve.
LEGEND_INSIDE = 6
#: Matplotlib's colours come back after ten curves; the next ten are dashed, and so on.
COLOURS = 10
LINE_STYLES = ("-", "--", ":", "-.")


def spans_decades(budgets: list[float]) -> bool:
    """Whether curves ending at these games trained need a log x axis (see ``LOG_SPAN``)."""
    positive = [b for b in budgets if b > 0]
    return len(positive) > 1 and max(positive) > LOG_SPAN * min(positive)


def games_label(turns: bool, log: bool) -> str:
    """The x axis's words: a single-turn cell's budget counts turns, not games."""
    return "games trained" + (" (turns for a single-turn cell)" if turns else "") + (", log scale" if log else "")


def place_legend(ax: Any) -> None:
    """The legend in the axes' emptiest corner when short; beside them, right of the plot, when long."""
    entries = len(ax.get_legend_handles_labels()[1])
    if entries > LEGEND_INSIDE:
        # Long handles: past ten curves a colour comes back dashed, and a default handle, its marker
        # in the middle, shows no dash, so two curves of one colour would read as one.
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, handlelength=4.0)
        ax.figure.set_size_inches(ax.figure.get_figwidth() + 4.0, ax.figure.get_figheight())
    else:
        ax.legend(fontsize=7, loc="best")


#: How a bar chart labels a cell whose seeds have no final evaluation yet (its row stays, without a bar).
NO_FINAL = "(no final evaluation yet)"
#: The quantities a member's final evaluation measures anew (the others, head entropies and explained
#: variance, are the last training batch's, already the curve's last point).
FINAL_METRICS = ("mean_score", "upper_bonus_rate", "yahtzee_rate", "single_turn_score")


def with_final(s: Series, metric: str, games, mean, low, high) -> tuple[Any, ...]:
    """A curve with its cell's final evaluation as its last point, at the games trained (its own
    interval over the seeds), so that the end label and the last quarter's change are the final
    evaluation's, as the caption says; and whether it is there. Where the last evaluation during
    training was at the same games (the end of training), the final one (more games) takes its place."""
    f = s.finals[s.finals["status"] == "done"] if "status" in s.finals else s.finals
    if metric not in FINAL_METRICS or metric not in f or f[metric].dropna().empty or f["games"].dropna().empty:
        return games, mean, low, high, False
    at = float(f["games"].max())
    if len(games) and at < games[-1]:
        return games, mean, low, high, False
    if len(games) and at == games[-1]:  # the same point of training: the final evaluation stands for it
        games, mean, low, high = games[:-1], mean[:-1], low[:-1], high[:-1]
    st = stat(f[metric], metric)
    ends = (st.low, st.high) if st.has_interval else (st.mean, st.mean)
    return (
        np.append(games, at),
        np.append(mean, st.mean),
        np.append(low, ends[0]),
        np.append(high, ends[1]),
        True,
    )


def collapsed_members(s: Series) -> int:
    """How many of a cell's finished members collapsed (``results.collapse``)."""
    return int(collapsed(s.finals).sum())


def label_ends(ax: Any, ends: list[tuple[float, float, str, Any]]) -> None:
    """Write each curve's label just right of its last point, moved up only as far as needed for
    labels of curves that end close together not to overlap (lowest first, a line apart). The layout
    is settled first, and the labels take no part in it: a label outside the axes would otherwise
    shrink them afterwards, and the labels' spacing with them."""
    if not ends:
        return
    fig = ax.figure
    fig.tight_layout()
    low, high = ax.get_ylim()
    points_per_unit = ax.get_window_extent().height * 72 / fig.dpi / (high - low)
    gap = 10.0  # points: a 7-point label's height (about 7) and air
    placed: list[float] = []
    for x, y, text, color in sorted(ends, key=lambda e: e[1]):
        at = y * points_per_unit
        if placed and at < placed[-1] + gap:
            at = placed[-1] + gap
        placed.append(at)
        ax.annotate(
            text,
            (x, y),
            xytext=(4, at - y * points_per_unit),
            textcoords="offset points",
            fontsize=7,
            va="center",
            color=color,
            annotation_clip=False,
        ).set_in_layout(False)


def last_quarter_change(games: np.ndarray, values: np.ndarray) -> float | None:
    """A curve's change over the last quarter of its training: from the evaluation nearest 75 % of
    its games to the last one (positive: still rising when it stopped); None with one evaluation."""
    if len(games) < 2 or not np.isfinite(values[-1]):
        return None
    start = int(np.argmin(np.abs(np.asarray(games, dtype=float) - 0.75 * games[-1])))
    start = min(start, len(games) - 2)
    return float(values[-1] - values[start]) if np.isfinite(values[start]) else None


def draw_bars(metrics: tuple[tuple[str, str], ...]) -> Callable[[Context, list[str], Path], int]:
    """Final value per cell (horizontal bars, error bars: the interval over seeds), a panel per
    metric, with the reference lines; rates in %. A cell with no final evaluation yet keeps its row,
    labelled so, rather than reading as an empty bar."""

    def draw(ctx: Context, ablations: list[str], path: Path) -> int:
        series = ctx.all_series(ablations)
        longest = max((len(s.label) for s in series), default=10)
        fig, axes = new_figure(3 + 0.07 * longest + 4 * len(metrics), 1.5 + 0.3 * len(series), len(metrics))
        points = 0
        for i, (ax, (metric, xlabel)) in enumerate(zip(axes, metrics, strict=True)):
            scale = percent(metric)
            stats = [stat(s.finals[metric] if metric in s.finals else [], metric) for s in series]
            points += sum(not math.isnan(st.mean) for st in stats)
            y = np.arange(len(series))
            err = np.array([st.errors() for st in stats]).T * scale
            ax.barh(y, [scale * st.mean for st in stats], xerr=err, capsize=3, color="tab:blue", alpha=0.8)
            named = False
            for row, srs in zip(y, series, strict=True):  # every member; a collapsed one as a red cross
                f = srs.finals.dropna(subset=[metric]) if metric in srs.finals else srs.finals.iloc[:0]
                dead = collapsed(f)
                ax.plot(
                    scale * f.loc[~dead, metric],
                    np.full((~dead).sum(), row),
                    "o",
                    mfc="white",
                    mec="black",
                    ms=3.5,
                    mew=0.8,
                )
                if dead.any():
                    label = None if named else "collapsed member"
                    ax.plot(scale * f.loc[dead, metric], np.full(dead.sum(), row), "x", color="red", ms=6, label=label)
                    named = True
            top = reference_lines(ax, ctx, metric, horizontal=False)
            if scale != 1:  # a rate, in % from 0 to a little above the highest value drawn
                ends = [scale * (st.high if st.has_interval else st.mean) for st in stats]
                ax.set_xlim(0, min(100.0, 1.08 * max([*top, *(e for e in ends if not math.isnan(e)), 0])) or 1)
            names = [
                s.label + (f" {NO_FINAL}" if math.isnan(st.mean) else "") for s, st in zip(series, stats, strict=True)
            ]
            ax.set_yticks(y, names if i == 0 else [""] * len(series), fontsize=8)
            ax.invert_yaxis()
            ax.set_xlabel(xlabel)
            if i == len(metrics) - 1:  # beside the last panel, never over a bar or its error bar
                ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
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
        x, y = stat(f["single_turn_score"], "single_turn_score"), stat(f["mean_score"], "mean_score")
        xerr, yerr = (np.array([st.errors()]).T for st in (x, y))
        ax.errorbar(x.mean, y.mean, xerr=xerr, yerr=yerr, fmt="s", color=pts.get_color(), capsize=3, label=s.label)
        means.append((x.mean, y.mean))
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
    ax.margins(0.06)  # the players' markers clear of the frame
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside the axes, never over a marker
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
    """Grouped bars per box: each agent (mean over seeds, error bars: the interval over seeds) beside
    the optimal and greedy players."""

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
                    stat(src.finals["upper_bonus_mean"], "upper_bonus_mean")
                    if b == extra
                    else stat(src.finals[f"{column}/{b}"], f"{column}/{b}")
                    for b in labels
                ]
                points += sum(not math.isnan(st.mean) for st in stats)
                heights, err = [st.mean + shift for st in stats], np.array([st.errors() for st in stats]).T
            else:
                heights, err = [reference_value(src, b) for b in labels], None
            x = np.arange(len(labels)) + i * width
            ax.bar(x, heights, width, yerr=err, capsize=2, label=name, hatch="//" if name == "greedy" else None)
        ax.set_xticks(np.arange(len(labels)) + width * (len(cols) - 1) / 2, labels, rotation=30, ha="right")
        ax.set_ylabel(ylabel)
        if limits:  # a share or a turn: the axis ends where the quantity ends
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
                games, mean, low, high = curve(s.evals, "mean_score")
                points += len(games)
                (line,) = ax.plot(games, mean, color="tab:blue", label=f"{name}: fixed settings, mean over seeds")
                ax.fill_between(games, low, high, color=line.get_color(), alpha=0.2)
    reference_lines(ax, ctx, "mean_score")
    ax.set_xlabel("games trained")
    ax.set_ylabel("mean score")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    save_figure(fig, path)
    return points


def draw_regret(ctx: Context, ablations: list[str], path: Path) -> int:
    """Where each agent loses its points against the optimal player on the same dice: the regret
    per game by the box each turn was scored in (left) and by turn (right), each summing to the
    regret per game; the greedy player beside them (the optimum's regret is 0 by definition)."""
    found = agents(ctx, ablations)
    greedy = (ctx.reference.get("greedy") or {}).get("regret")
    fig, (by_box, by_turn) = new_figure(15, 4.5, 2)
    width = 0.8 / max(len(found) + (greedy is not None), 1)
    points = 0
    for i, s in enumerate(found):
        boxes = [b for b in BOX_NAMES if f"regret_by_box/{b}" in s.finals]
        turns = sorted(int(c.split("/")[1]) for c in s.finals if c.startswith("regret_by_turn/"))
        box_stats = [stat(s.finals[f"regret_by_box/{b}"], "regret_by_box") for b in boxes]
        turn_stats = [stat(s.finals[f"regret_by_turn/{t}"], "regret_by_turn") for t in turns]
        drawn = sum(not math.isnan(st.mean) for st in box_stats + turn_stats)
        if not drawn:  # no regret by box and turn in this agent's results: no bars, no legend entry
            continue
        points += drawn
        x = np.array([BOX_NAMES.index(b) for b in boxes]) + i * width
        err = np.array([st.errors() for st in box_stats]).T if box_stats else None
        by_box.bar(x, [st.mean for st in box_stats], width, yerr=err, capsize=2, label=s.label)
        if turn_stats:
            mean = np.array([st.mean for st in turn_stats])
            low = np.array([st.low if st.has_interval else st.mean for st in turn_stats])
            high = np.array([st.high if st.has_interval else st.mean for st in turn_stats])
            (line,) = by_turn.plot(turns, mean, marker="o", markersize=3, label=s.label)
            by_turn.fill_between(turns, low, high, color=line.get_color(), alpha=0.2)
    if greedy is not None:
        x = np.arange(len(BOX_NAMES)) + len(found) * width
        greedy_box = [greedy["by_box"].get(b, 0.0) for b in BOX_NAMES]
        by_box.bar(x, greedy_box, width, color="lightgrey", edgecolor="grey", hatch="//", label="greedy player")
        turns = np.arange(1, len(greedy["by_turn"]) + 1)
        by_turn.plot(turns, greedy["by_turn"], color="grey", linestyle=":", linewidth=1.5, label="greedy player")
    if not points:  # results from before the regret by box and turn was kept (results.csv without its columns)
        by_box.text(
            0.5,
            0.5,
            "no agent's regret by box and turn in these results\n(they predate it: results.csv has no such columns)",
            transform=by_box.transAxes,
            ha="center",
        )
    by_box.set_xticks(np.arange(len(BOX_NAMES)) + width * len(found) / 2, BOX_NAMES, rotation=30, ha="right")
    by_box.set_ylabel("points lost per game, by box scored")
    by_turn.set_xlabel("turn (1-13)")
    by_turn.set_ylabel("points lost per game, by turn")
    for ax in (by_box, by_turn):
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save_figure(fig, path)
    return points
