"""``study compare``: a study's cells beside a paper's published rows, as ``OUT/table.csv`` and a
page ``OUT/published/index.md`` with its figure of the per-box differences."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ...game import BOX_NAMES
from ..judging.published import (
    Band,
    load_published,
    matched_rows,
    paper_lines,
    per_box_differences,
    seed_lines,
    side_by_side,
    write_table,
)
from ..ownership import locked
from ..results import collect, load_plan
from .canvas import new_figure, save_figure

FOLDER = "published"
TABLE = "table.csv"


def compare_published(out: str | Path, published_path: str | Path) -> Path:
    """Write ``OUT/table.csv`` and ``OUT/published/`` (page and figure); returns the page's path."""
    out = Path(out)
    published = load_published(published_path)
    with locked(out, "yahtzee-lightning study compare"):
        study, _ = load_plan(out)
        cells = matched_rows(study, published)
        rows = list(dict.fromkeys(cells.values()))
        ours = seed_lines(collect(out), cells)
        write_table(out / TABLE, ours, paper_lines(published, rows))
        folder = out / FOLDER
        folder.mkdir(exist_ok=True)
        boxes = per_box_differences(ours, published, rows)
        drawn = [row for row in rows if any(b.n for _, b, _ in boxes[row])]
        if drawn:
            draw_box_differences({row: boxes[row] for row in drawn}, folder / "boxes.png")
        page = folder / "index.md"
        page.write_text(_page(study, published, rows, ours, side_by_side(ours, published, rows), bool(drawn)))
    return page


def draw_box_differences(boxes: dict[str, list[tuple[str, Band, float]]], path: Path) -> None:
    """One panel a row: our mean points per box minus the paper's, with our seeds' 95 % interval."""
    fig, axes = new_figure(width=3.2 * len(boxes), height=4.5, ncols=len(boxes))
    for ax, (row, per_box) in zip(axes, boxes.items(), strict=True):
        names = [name for name, _, _ in per_box]
        diffs = [b.mean - paper for _, b, paper in per_box]
        errors = (  # no bar, not even its caps, where one seed gives no interval
            [b.mean - b.low if b.n > 1 else float("nan") for _, b, _ in per_box],
            [b.high - b.mean if b.n > 1 else float("nan") for _, b, _ in per_box],
        )
        colors = ["tab:blue" if d >= 0 else "tab:red" for d in diffs]
        ax.barh(range(len(names)), diffs, xerr=errors, color=colors, capsize=2)
        ax.set_yticks(range(len(names)), names if ax is axes[0] else [""] * len(names), fontsize=8)
        ax.invert_yaxis()
        ax.axvline(0, color="black", linewidth=0.8)
        n = max(b.n for _, b, _ in per_box)
        ax.set_title(f"{row} (n = {n} seed{'s' if n != 1 else ''})", fontsize=9)
        ax.set_xlabel("ours - paper (points a game)")
    save_figure(fig, path)


def _cell(value: float, scale: float, digits: int) -> str:
    return "-" if math.isnan(value) else f"{value * scale:.{digits}f}"


def _page(
    study: Any, published: dict[str, Any], rows: list[str], ours: list[dict], sides: list[dict], figure: bool
) -> str:
    lines = [
        f"# Study {study.name} beside the paper's published rows",
        "",
        f"Source of the published numbers: {published.get('source', 'the published file')}. Ours: each finished "
        "seed's final evaluation (its games as the recipe says); `table.csv` beside this folder holds every seed's "
        "line and the paper's.",
        "",
        "Per row and quantity: the paper's number; our seeds' mean with its 95 % t interval (n - 1 df); the 95 % "
        "prediction interval for one new run, `mean +- t(0.975, n - 1) s sqrt(1 + 1/n)`, which a single published "
        "run of the same recipe should fall in; and whether the paper's number does (none with fewer than 2 "
        "seeds). Variance: of a game's total over the evaluation games.",
        "",
        "| row | quantity | paper | ours: mean [95 % interval] | one new run: 95 % prediction | n | paper inside |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for s in sides:
        b, scale, digits = s["band"], s["scale"], s["digits"]
        mean = _cell(b.mean, scale, digits)
        if b.n > 1:
            mean += f" [{_cell(b.low, scale, digits)}, {_cell(b.high, scale, digits)}]"
        pred = f"[{_cell(b.predict_low, scale, digits)}, {_cell(b.predict_high, scale, digits)}]" if b.n > 1 else "-"
        holds = {None: "-", True: "yes", False: "**no**"}[s["holds"]]
        paper = _cell(s["paper"], scale, digits)
        lines.append(f"| {s['row']} | {s['quantity']} | {paper} | {mean} | {pred} | {b.n} | {holds} |")
    lines += ["", "## Per box", ""]
    if figure:
        lines += [
            "![per-box differences](boxes.png)",
            "",
            "Each panel: a row's mean points per game in each box and the upper bonus, ours minus the paper's "
            "evaluation log (100,000 games); error bars: our seeds' 95 % t interval (none with one seed).",
            "",
        ]
    names = [*BOX_NAMES, "upper_bonus"]
    header = "| box | " + " | ".join(f"{row}: ours / paper" for row in rows) + " |"
    lines += [header, "|---|" + "---:|" * len(rows)]
    for i, name in enumerate(names):
        cells = []
        for row in rows:
            seeds = [line[f"box/{name}"] for line in ours if line["row"] == row]
            ours_mean = sum(seeds) / len(seeds) if seeds else math.nan
            cells.append(f"{_cell(ours_mean, 1, 2)} / {published['rows'][row]['per_box'][i][0]:.2f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
