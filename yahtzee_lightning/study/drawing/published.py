"""``study compare``: a study's cells beside a paper's published rows, as ``OUT/table.csv`` and a
page ``OUT/published/index.md`` with its figure of the per-box differences."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..judging.published import (
    BoxGap,
    RowTurns,
    engine_check,
    fill_turns,
    in_whole_games,
    learning_curves,
    matched_arms,
    matched_rows,
    paper_lines,
    per_box_differences,
    seed_lines,
    side_by_side,
    started,
    turn_agreement,
    turn_tops,
    with_arms,
    write_table,
)
from ..judging.published_file import load_published
from ..ownership import locked
from ..results import collect, load_plan
from .published_figures import draw_box_differences, draw_learning_curves, draw_turn_agreement

FOLDER = "published"
TABLE = "table.csv"


def compare_published(out: str | Path, published_path: str | Path) -> Path:
    """Write ``OUT/table.csv`` and ``OUT/published/`` (page and figure); returns the page's path."""
    out = Path(out)
    published = load_published(published_path)
    with locked(out, "yahtzee-lightning study compare"):
        study, _ = load_plan(out)
        cells = matched_rows(study, published)
        paper_rows = list(dict.fromkeys(cells.values()))
        results = in_whole_games(collect(out), study)
        begun = started(results)
        arms = {c: arm for c, arm in matched_arms(study, cells, published).items() if c in begun}  # once it has started
        published = with_arms(published, arms)
        cells |= {c: label for c, (label, _) in arms.items()}
        rows = list(dict.fromkeys(cells.values()))
        ours = seed_lines(results, cells)
        write_table(out / TABLE, ours, paper_lines(published, paper_rows))
        folder = out / FOLDER
        folder.mkdir(exist_ok=True)
        boxes = per_box_differences(ours, published, rows)
        drawn = [row for row in rows if any(gap.band.n for gap in boxes[row])]
        if drawn:
            draw_box_differences({row: boxes[row] for row in drawn}, folder / "boxes.png")
        curves = learning_curves(results, cells, published, rows)
        if curves:
            draw_learning_curves(curves, folder / "curves.png")
        page = folder / "index.md"
        text = _page(study, published, rows, boxes, side_by_side(ours, published, rows), bool(drawn), arms)
        tops = turn_tops(ours, published, rows)
        if tops:
            draw_turn_agreement(tops, folder / "turns.png")
        fills = _fill_section(fill_turns(ours, published, rows)) + _turn_section(tops)
        page.write_text(text + fills + _curves_section(curves) + _engine_section(engine_check(results, published)))
    return page


def _fill_section(turns: dict[str, list[tuple]]) -> str:
    """The page's table of the median turn each box is filled, ours beside the paper's evaluation logs."""
    if not turns:
        return ""
    rows = list(turns)
    lines = [
        "",
        "## When each box is filled",
        "",
        "The median turn at which each box is filled (1 = the first turn): ours, the mean over seeds of each "
        "seed's median over its final evaluation's games; the paper's, from its evaluation log (100,000 "
        "games). Descriptive: a median of whole turns moves in steps of one.",
        "",
        "| box | " + " | ".join(f"{row}: ours / paper" for row in rows) + " |",
        "|---|" + "---:|" * len(rows),
    ]
    for i, (name, _, _) in enumerate(turns[rows[0]]):
        cells = [f"{_cell(turns[row][i][1], 1, 1)} / {turns[row][i][2]:.1f}" for row in rows]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _turn_section(tops: dict[str, RowTurns]) -> str:
    """The page's boxes used most at each turn: the paper's three (its log's shares, ours of the same
    boxes beside them) and our own three, per row whose final evaluations count them."""
    if not tops:
        return ""
    lines = [
        "",
        "## Which boxes each turn fills",
        "",
        "At each turn (1 = the first), the three boxes the paper's evaluation log fills most often, with the "
        "share of its 100,000 games that did and, in brackets, the share of ours (the mean over seeds, each over "
        "its final evaluation's games); then our own three. Descriptive; only seeds whose final evaluation "
        "counts the boxes by turn (evaluations from 2026-11-30 on) are here. First, per row, how closely ours "
        "fill the boxes the log lists, over its (turn, box) entries (`turns.png` draws each entry, the log's share "
        "against ours); then, as yardsticks, how far one seed of ours lies from the log and from another seed "
        "(two draws of the same recipe), and how far the optimal player lies from the log on our seeds' own "
        "games (a player with another schedule; only where a seed's evaluation played it with the shares), on "
        "the same entries:",
        "",
        "![which boxes each turn fills](turns.png)",
        "",
        "| row | our seeds | mean \\|ours - paper\\| (points of %) | median | the log's entries among our three "
        "| one seed against the log | one seed against another | the optimal player against the log |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row, r in tops.items():
        mean, median, hits, entries = turn_agreement(r.turns)
        spread = f"{100 * r.seed_to_log:.2f} | {_cell(r.between_seeds, 100, 2)} | {_cell(r.optimal_to_log, 100, 2)}"
        lines.append(f"| {row} | {r.seeds} | {100 * mean:.2f} | {100 * median:.2f} | {hits} of {entries} | {spread} |")
    for row, r in tops.items():
        n, turns = r.seeds, r.turns
        lines += [
            "",
            f"**{row}** (ours: {n} seed{'s' if n != 1 else ''})",
            "",
            "| turn | the paper's three (ours) | our three |",
            "|---:|---|---|",
        ]
        for t in turns:
            paper = ", ".join(f"{box} {100 * theirs:.1f} % ({_cell(mine, 100, 1)} %)" for box, theirs, mine in t.paper)
            mine = ", ".join(f"{box} {100 * share:.1f} %" for box, share in t.ours)
            lines.append(f"| {t.turn} | {paper} | {mine} |")
    return "\n".join(lines) + "\n"


def _engine_section(check: dict | None) -> str:
    """The page's cross-check of the game engine: our optimal player beside the published DP player."""
    if check is None:
        return ""
    worst = max(abs(z) for *_, z in check["boxes"] if not math.isnan(z))
    lines = [
        "",
        "## The engine: our optimal player beside the published DP player",
        "",
        f"Our optimal player's mean points per box over the {check['games']:,} games of the study's final "
        f"evaluations ({check['sets']} distinct game sets: each seed's evaluation plays it on the same games as "
        "the agent), beside the published DP player's; z: ours less theirs over their standard error at our "
        f"number of games. The largest |z|: {worst:.2f}. (The total is left out: the published DP line's "
        "variance is not its total's.)",
        "",
        "| box | published DP | ours | z |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {name} | {theirs:.4f} | {ours:.4f} | {z:+.2f} |" for name, ours, theirs, z in check["boxes"]]
    return "\n".join(lines) + "\n"


def _curves_section(curves: dict[str, dict]) -> str:
    """The page's learning curves: the figure, its caption and per row how far ours run from the paper's."""
    if not curves:
        return ""
    lines = [
        "",
        "## Learning curves",
        "",
        "![learning curves](curves.png)",
        "",
        "The paper's evaluations during training (its learning-curve figure: 1,000 games every 5 of its 500 "
        "epochs, the most likely action, dropout off) beside ours (1,000 games at each evaluation, played the "
        "same way), for the rows whose curve it published; our seeds still training are drawn as far as they "
        "have come.",
        "",
        "| row | our seeds | our evaluations at the paper's points | ours - paper, mean over them "
        "| the same by quarter of training |",
        "|---|---:|---:|---:|---:|",
    ]

    def mean(diffs: list[float]) -> str:
        return f"{sum(diffs) / len(diffs):+.1f}" if diffs else "-"

    for row, c in curves.items():
        m = c["matched"]
        end = max(g for g, _ in c["paper"])  # where the gap opens: each quarter of the paper's run
        quarters = [[d for g, d in m if q * end / 4 < g <= (q + 1) * end / 4] for q in range(4)]
        by_quarter = " / ".join(mean(q) for q in quarters)
        lines.append(f"| {row} | {len(c['ours'])} | {len(m)} | {mean([d for _, d in m])} | {by_quarter} |")
    lines += [
        "",
        "Descriptive only: each difference is of two 1,000-game means (a standard error of about 2-3 points), "
        "and one seed's evaluations are not independent of each other.",
    ]
    return "\n".join(lines) + "\n"


def _cell(value: float, scale: float, digits: int) -> str:
    return "-" if math.isnan(value) else f"{value * scale:.{digits}f}"


def _page(
    study: Any,
    published: dict[str, Any],
    rows: list[str],
    boxes: dict[str, list[BoxGap]],
    sides: list[dict],
    figure: bool,
    arms: dict[str, tuple[str, str]] | None = None,
) -> str:
    lines = [
        f"# Study {study.name} beside the paper's published rows",
        "",
        f"Source of the published numbers: {published.get('source', 'the published file')}. Ours: each finished "
        "seed's final evaluation (its games as the recipe says); `table.csv` beside this folder holds every seed's "
        "line and the paper's, games trained counted as the paper's table counts them (a single-turn run's turns "
        "as whole games of 13).",
        "",
        "Per row and quantity: the paper's number; our seeds' mean with its 95 % t interval (n - 1 df); the 95 % "
        "prediction interval for one new run, `mean +- t(0.975, n - 1) s sqrt(1 + 1/n)`, which a single published "
        "run of the same recipe should fall in; and whether the paper's number does (none with fewer than 2 "
        "seeds). Variance: of a game's total over the evaluation games.",
        "",
        *(
            [
                "A variant of a row (a row's recipe with a setting changed: another of the paper's configs, or an "
                "ablation's other arm, or an arm's own other arm) stands beside that row's published numbers, named "
                "for the row with a suffix for each setting changed: "
                + ", ".join(f"`{label}` (beside {row})" for label, row in arms.values())
                + ". Exploratory: "
                "where the paper's number falls in a variant's interval and not in its row's, the setting it "
                "changes is a candidate for the gap.",
                "",
            ]
            if arms
            else []
        ),
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
            "evaluation log (100,000 games); bars: our seeds' 95 % t interval of the mean; grey lines: the 95 % "
            "prediction interval for one new run (none with one seed).",
            "",
        ]
    header = "| box | " + " | ".join(f"{row}: ours / paper" for row in rows) + " |"
    lines += [header, "|---|" + "---:|" * len(rows)]
    for i, name in enumerate([gap.name for gap in next(iter(boxes.values()))]):
        cells = []
        for row in rows:
            gap = boxes[row][i]
            mark = " ‡" if gap.outside_family else " †" if gap.outside else ""
            cells.append(f"{_cell(gap.band.mean, 1, 2)} / {gap.paper:.2f}{mark}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    n_boxes = len(next(iter(boxes.values())))
    lines += [
        "",
        f"† the paper's number outside our 95 % prediction interval for one new run; ‡ outside it even when "
        f"widened for the row's {n_boxes} boxes (Bonferroni, {100 * (1 - 0.05 / n_boxes):.2f} %). With "
        f"{n_boxes} boxes a row, {0.05 * n_boxes:.1f} of them are expected outside the 95 % interval by chance "
        "alone where the two agree.",
        "",
    ]
    two = [row for row in rows if next(iter(boxes[row])).band.n == 2]
    if two:
        lines += [
            f"With two seeds ({', '.join(two)}) an interval rests on one difference between them (1 df): wide "
            "where they differ, and too narrow to say much where they agree by chance; read those marks as "
            "weak.",
            "",
        ]
    for row in rows:
        out = [gap for gap in boxes[row] if gap.outside]
        if out:
            listed = "; ".join(
                f"{g.name} {g.paper:.2f} against [{g.band.predict_low:.2f}, {g.band.predict_high:.2f}]"
                f" ({'outside' if g.outside_family else 'inside'} [{g.family.predict_low:.2f}, "
                f"{g.family.predict_high:.2f}] widened)"
                for g in out
            )
            lines.append(f"* {row}: {listed}.")
    return "\n".join(lines) + "\n"
