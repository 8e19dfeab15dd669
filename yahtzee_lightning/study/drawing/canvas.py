"""The report's drawing helpers: a figure and its axes, the reference players as lines, a figure
saved with what it says written into the file, the Pareto front of a scatter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...png import save_png
from ..judging.context import Context, percent


def reference_lines(ax: Any, ctx: Context, metric: str, horizontal: bool = True) -> list[float]:
    """The optimum and the greedy player as dashed lines at their value of ``metric`` (in % for a
    rate); returns the values drawn. In single turns the greedy player is the exact optimum, and
    the optimal full-game player gives points up for later turns: the legend says which is which."""
    ref = ctx.reference
    if not ref:
        return []
    values = {
        "mean_score": (ref["optimal"]["exact_expected_score"], ref["greedy"]["score"]["mean"]),
        "upper_bonus_rate": (ref["optimal"]["upper_bonus_rate"], ref["greedy"]["upper_bonus_rate"]),
        "yahtzee_rate": (ref["optimal"]["yahtzee_rate"], ref["greedy"]["yahtzee_rate"]),
        "single_turn_score": (ref["single_turn"]["optimal"], ref["single_turn"]["greedy"]),
    }
    if metric not in values:
        return []
    opt, greedy = (v * percent(metric) for v in values[metric])
    line = ax.axhline if horizontal else ax.axvline
    if metric == "single_turn_score":
        names = "optimal full-game player", "greedy player = single-turn optimum"
    else:
        names = "optimal player" + (" (exact)" if metric == "mean_score" else ""), "greedy player"
    line(opt, color="black", linestyle="--", linewidth=1, label=f"{names[0]} {opt:.3g}")
    line(greedy, color="grey", linestyle=":", linewidth=1.5, label=f"{names[1]} {greedy:.3g}")
    return [opt, greedy]


def new_figure(width: float = 8, height: float = 4.5, ncols: int = 0, per_row: int = 0) -> tuple[Any, Any]:
    """A figure and its axes (a list of ``ncols`` panels when ``ncols`` is given). ``per_row``: at most
    that many panels a row, the rest wrapped onto further rows (``width`` and ``height`` are a row's)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(ncols, per_row) if ncols and per_row else max(ncols, 1)
    rows = -(-max(ncols, 1) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width, height * rows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for spare in flat[max(ncols, 1) :]:  # the last row's empty places
        fig.delaxes(spare)
    return fig, flat[:ncols] if ncols else flat[0]


def save_figure(fig: Any, path: Path) -> None:
    """Save as a palette PNG (``yahtzee_lightning.png``), with what the figure says written into the
    file's text (``Legend``: every legend entry; ``Axes``: each panel's labels and limits; ``Rows``:
    each panel's named y ticks), so that a test or a script can read it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    legend = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    axes = [
        f"x={ax.get_xlabel()} {tuple(round(float(v), 3) for v in ax.get_xlim())}; "
        f"y={ax.get_ylabel()} {tuple(round(float(v), 3) for v in ax.get_ylim())}"
        for ax in fig.axes
    ]
    rows = [" ; ".join(t.get_text() for t in ax.get_yticklabels() if t.get_text()) for ax in fig.axes]
    text = {"Legend": " | ".join(legend), "Axes": " | ".join(axes), "Rows": " | ".join(rows)}
    save_png(fig, path, dpi=100, text=text)
    plt.close(fig)


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both coordinates (higher is better), by the first coordinate."""
    front = [p for p in points if not any(q != p and q[0] >= p[0] and q[1] >= p[1] for q in points)]
    return sorted(front)
