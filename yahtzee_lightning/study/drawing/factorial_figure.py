"""F7: a two-axis ablation drawn as a factorial (an interaction plot); any other ablation as bars."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..judging.context import Context, collapsed, stat
from .canvas import new_figure, reference_lines, save_figure
from .figures import draw_bars


def draw_factorial(metric: str, ylabel: str) -> Callable[[Context, list[str], Path], int]:
    """A two-axis ablation as a factorial (an interaction plot): the first axis's values along x, a
    line per value of the second, each point a cell's mean with its interval, members as dots; lines
    apart: a main effect of the second axis, lines not parallel: an interaction. Any other ablation
    is drawn as bars (``draw_bars``)."""
    bars = draw_bars(((metric, ylabel),))

    def draw(ctx: Context, ablations: list[str], path: Path) -> int:
        if len(ablations) != 1:
            return bars(ctx, ablations, path)
        ab = ctx.study.ablations[ablations[0]]
        axes = [a for a in ab.axes if len({labels[a] for _, labels in ab.cells}) > 1]
        if len(axes) != 2:
            return bars(ctx, ablations, path)
        first, second = axes
        xs = list(dict.fromkeys(labels[first] for _, labels in ab.cells))
        by_cell = {s.cell: s for s in ctx.series(ablations[0])}
        fig, ax = new_figure()
        points = 0
        for k, value in enumerate(dict.fromkeys(labels[second] for _, labels in ab.cells)):
            cells = {labels[first]: cid for cid, labels in ab.cells if labels[second] == value}
            at = np.arange(len(xs)) + (k - 0.5) * 0.06  # lines side by side: error bars apart
            stats = [stat(by_cell[cells[x]].finals.get(metric, []), metric) if x in cells else None for x in xs]
            mean = np.array([st.mean if st else np.nan for st in stats])
            err = np.array([st.errors() if st else (0.0, 0.0) for st in stats]).T
            name = f"{second.rsplit('.', 1)[-1]}={value}"
            bar = ax.errorbar(at, mean, yerr=err, marker="o", capsize=3, label=name)
            for x, cid in cells.items():
                f = by_cell[cid].finals.dropna(subset=[metric]) if metric in by_cell[cid].finals else None
                if f is None or f.empty:
                    continue
                dead = collapsed(f)
                i = xs.index(x)
                ax.plot(np.full(len(f), at[i] + 0.03), f[metric], ".", color=bar.lines[0].get_color(), alpha=0.5)
                if dead.any():
                    ax.plot(np.full(int(dead.sum()), at[i] + 0.03), f.loc[dead, metric], "x", color="red")
            points += int(np.isfinite(mean).sum())
        reference_lines(ax, ctx, metric)
        ax.set_xticks(np.arange(len(xs)), [f"{first.rsplit('.', 1)[-1]}={x}" for x in xs])
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.grid(alpha=0.3)
        save_figure(fig, path)
        return points

    return draw
