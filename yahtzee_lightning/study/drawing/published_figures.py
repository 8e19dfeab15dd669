"""``study compare``'s figures: the per-box differences, the learning curves and, turn by turn, our
share of the boxes the published logs list beside the logs' own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..judging.published import BoxGap, RowTurns, turn_agreement
from .canvas import new_figure, save_figure

PER_ROW = 4  # panels a row in the figures: the table's rows and their variants wrap onto more rows


def draw_box_differences(boxes: dict[str, list[BoxGap]], path: Path) -> None:
    """One panel a row: our mean points per box minus the paper's; dark bars our seeds' 95 % interval of
    the mean, grey lines the 95 % prediction interval for one new run (the paper's number outside it
    where the grey line misses 0)."""
    cols = min(len(boxes), PER_ROW)
    fig, axes = new_figure(width=3.2 * cols, height=4.5, ncols=len(boxes), per_row=PER_ROW)
    from matplotlib.lines import Line2D  # after new_figure: matplotlib loads with the figure

    for i_ax, (ax, (row, per_box)) in enumerate(zip(axes, boxes.items(), strict=True)):
        names = [gap.name for gap in per_box]
        diffs = [gap.band.mean - gap.paper for gap in per_box]
        y = range(len(names))
        colors = ["tab:blue" if d >= 0 else "tab:red" for d in diffs]
        ax.barh(y, diffs, xerr=_errors(per_box, "low", "high"), color=colors, capsize=2)
        ax.errorbar(
            diffs, y, xerr=_errors(per_box, "predict_low", "predict_high"), fmt="none", ecolor="grey", elinewidth=0.8
        )
        for i, gap in enumerate(per_box):
            if gap.outside:
                ax.annotate(
                    "outside", (0.98, i), xycoords=("axes fraction", "data"), ha="right", va="center", fontsize=7
                )
        ax.set_yticks(y, names if i_ax % cols == 0 else [""] * len(names), fontsize=8)  # a row's first panel
        ax.invert_yaxis()
        ax.axvline(0, color="black", linewidth=0.8)
        n = max(gap.band.n for gap in per_box)
        ax.set_title(f"{row} (n = {n} seed{'s' if n != 1 else ''})", fontsize=9)
        ax.set_xlabel("ours - paper (points a game)")
    axes[(len(axes) - 1) // cols * cols].legend(  # under the last row's first panel
        handles=[
            Line2D([], [], color="black", marker="|", label="95 % interval of our mean"),
            Line2D([], [], color="grey", linewidth=0.8, label="one new run: 95 % prediction"),
        ],
        fontsize=7,
        loc="upper left",
        bbox_to_anchor=(0.0, -0.14),  # below the panel, clear of the bars
        frameon=False,
    )
    save_figure(fig, path)


def draw_learning_curves(curves: dict[str, dict], path: Path) -> None:
    """One panel a row with a published curve: the paper's evaluations during training (black) and each
    of our seeds' (finished or still training), mean score over 1,000 games against games trained."""
    cols = min(len(curves), PER_ROW)
    fig, axes = new_figure(width=4.0 * cols, height=4.0, ncols=len(curves), per_row=PER_ROW)
    from matplotlib.ticker import FuncFormatter  # after new_figure: matplotlib loads with the figure

    for i_ax, (ax, (row, c)) in enumerate(zip(axes, curves.items(), strict=True)):
        games, means = zip(*c["paper"], strict=True)
        ax.plot(games, means, color="black", linewidth=1.2, label="the paper's run")
        for seed, points in sorted(c["ours"].items()):
            x, y = zip(*points, strict=True)
            ax.plot(x, y, marker=".", markersize=4, linewidth=0.9, label=f"ours, seed {seed}")
        ax.set_title(f"{row} (ours: {len(c['ours'])} seed{'s' if len(c['ours']) != 1 else ''})", fontsize=9)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:,.0f} k"))
        ax.set_xlabel("games trained")
        ax.set_ylabel("mean score (1,000 games)" if i_ax % cols == 0 else "")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    save_figure(fig, path)


#: The turns a panel colours alike: the opening, the middle and the end of a game.
TURN_GROUPS = ((1, 4, "tab:blue"), (5, 9, "tab:green"), (10, 13, "tab:orange"))


def draw_turn_agreement(tops: dict[str, RowTurns], path: Path) -> None:
    """One panel a row: each (turn, box) entry of the published log's three most used boxes a turn, the
    log's share of games against ours (the mean over seeds), coloured by the part of the game; on the
    diagonal ours fill that box at that turn as often as the log. The two farthest entries are named."""
    cols = min(len(tops), PER_ROW)
    fig, axes = new_figure(width=3.6 * cols, height=4.4, ncols=len(tops), per_row=PER_ROW)
    for i_ax, (ax, (row, r)) in enumerate(zip(axes, tops.items(), strict=True)):
        n, turns = r.seeds, r.turns
        points = [(100 * theirs, 100 * mine, t.turn, box) for t in turns for box, theirs, mine in t.paper]
        top = float(max(max(x, y) for x, y, *_ in points)) * 1.08
        ax.plot([0, top], [0, top], color="black", linewidth=0.8, label="ours = the log")
        for first, last, color in TURN_GROUPS:
            group = [(x, y) for x, y, turn, _ in points if first <= turn <= last]
            if group:
                xs, ys = zip(*group, strict=True)
                ax.scatter(xs, ys, color=color, s=14, label=f"turns {first}-{last}")
        names = []
        for x, y, turn, box in sorted(points, key=lambda p: -abs(p[1] - p[0]))[:2]:
            right = x > top / 2  # a label that would leave the panel reads leftwards
            names.append(ax.annotate(f"turn {turn}: {box}", (x, y), fontsize=6, xytext=(-3 if right else 3, -8),
                                     textcoords="offset points", ha="right" if right else "left"))  # fmt: skip
            names[-1].set_in_layout(False)  # placed once the layout is settled (separate_names)
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_aspect("equal")
        mean = turn_agreement(turns)[0]
        ax.set_title(f"{row}\n(n = {n} seed{'s' if n != 1 else ''}; mean |d| {100 * mean:.2f} points of %)", fontsize=9)
        ax.set_xlabel("the paper's log: share of games (%)")
        ax.set_ylabel("ours (%)" if i_ax % cols == 0 else "")
        if i_ax == 0:  # one legend for the figure: the same in every panel, where it hid named entries
            ax.legend(fontsize=6, loc="best")
    fig.tight_layout()  # the layout the file is saved with, so that the names are apart there
    for ax in axes:
        separate_names(ax.texts)
    save_figure(fig, path)


def separate_names(names: list[Any]) -> None:
    """Move each annotation that overlaps an earlier one up, just clear of it: two named entries
    that lie close together would otherwise print one name over the other."""
    if len(names) < 2:
        return
    fig = names[0].figure
    renderer = fig.canvas.get_renderer()
    placed = [names[0].get_window_extent(renderer)]
    for name in names[1:]:
        box = name.get_window_extent(renderer)
        for other in placed:
            if box.overlaps(other):
                lift = (other.y1 - box.y0 + 1) * 72 / fig.dpi  # pixels to the offset's points
                name.xyann = (name.xyann[0], name.xyann[1] + lift)
                box = name.get_window_extent(renderer)
        placed.append(box)


def _errors(per_box: list[BoxGap], low: str, high: str) -> tuple[list[float], list[float]]:
    """Error bar lengths below and above each box's mean (none, not even caps, with one seed)."""
    return (
        [g.band.mean - getattr(g.band, low) if g.band.n > 1 else float("nan") for g in per_box],
        [getattr(g.band, high) - g.band.mean if g.band.n > 1 else float("nan") for g in per_box],
    )
