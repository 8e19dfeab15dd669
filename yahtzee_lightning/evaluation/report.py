"""The evaluation table for terminals and files: text, Markdown, JSON and PNG plots."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..png import save_png

ROWS = (
    ("mean score", lambda s: f"{s['score']['mean']:.2f}"),
    ("standard deviation", lambda s: f"{s['score']['sd']:.2f}"),
    ("standard error", lambda s: f"{s['score']['se']:.2f}"),
    ("median", lambda s: f"{s['median']:.1f}"),
    ("upper bonus rate", lambda s: f"{100 * s['upper_bonus_rate']:.1f} %"),
    ("Yahtzee rate (box = 50)", lambda s: f"{100 * s['yahtzee_rate']:.1f} %"),
    ("Yahtzee bonus rate", lambda s: f"{100 * s['yahtzee_bonus_rate']:.1f} %"),
    ("games >= 250", lambda s: f"{100 * s['share_at_least_250']:.1f} %"),
    ("regret per game", lambda s: f"{s['regret']['per_game_mean']:.2f}" if "regret" in s else "-"),
    ("regret per keep", lambda s: f"{s['regret']['keep_mean']:.3f}" if "regret" in s else "-"),
    ("regret per box", lambda s: f"{s['regret']['box_mean']:.3f}" if "regret" in s else "-"),
)


def _columns(result: dict) -> list[tuple[str, dict]]:
    cols = [(result["agent"], result["summary"])]
    if "optimal" in result and result["agent"] != "optimal":
        cols.append(("optimal", result["optimal"]))
    return cols


def table_rows(result: dict) -> list[list[str]]:
    """Header and rows: statistic, agent, optimal; then per box; then P(score >= n)."""
    cols = _columns(result)
    rows = [["statistic", *(name for name, _ in cols)]]
    rows += [[label, *(fmt(s) for _, s in cols)] for label, fmt in ROWS]
    for box in cols[0][1]["boxes"]:
        rows.append(
            [f"{box} mean (var)", *(f"{s['boxes'][box]['mean']:.2f} ({s['boxes'][box]['var']:.1f})" for _, s in cols)]
        )
    for box in cols[0][1]["boxes"]:
        rows.append([f"{box} median fill turn", *(f"{s['boxes'][box]['median_fill_turn']:.0f}" for _, s in cols)])
    for box in cols[0][1]["boxes"]:
        rows.append([f"{box} first-box share", *(f"{100 * s['boxes'][box]['first_box_share']:.1f} %" for _, s in cols)])
    rows += turn_rows(cols)
    for t in cols[0][1]["p_score_at_least"]:
        rows.append([f"P(score >= {t})", *(f"{100 * s['p_score_at_least'][t]:.2f} %" for _, s in cols)])
    rows += regret_rows(cols)
    return rows


def turn_rows(cols: list[tuple[str, dict]]) -> list[list[str]]:
    """The box each player fills most often at each turn, with the share of games that do (where the
    summary counts it): the order in which a policy spends its boxes, beside the optimum's."""
    boxes = cols[0][1]["boxes"]
    if not all("fill_turn_share" in b for _, s in cols for b in s["boxes"].values()):
        return []

    def most(s: dict, turn: int) -> str:
        box = max(s["boxes"], key=lambda b: s["boxes"][b]["fill_turn_share"][turn])
        return f"{box} {100 * s['boxes'][box]['fill_turn_share'][turn]:.1f} %"

    turns = len(next(iter(boxes.values()))["fill_turn_share"])
    return [[f"turn {t + 1}: box filled most", *(most(s, t) for _, s in cols)] for t in range(turns)]


def regret_rows(cols: list[tuple[str, dict]]) -> list[list[str]]:
    """Where the agent's points go against the optimum: regret per game by box scored and by turn
    (each breakdown sums to the regret per game); none without a regret oracle."""
    if "regret" not in cols[0][1]:
        return []
    regret = cols[0][1]["regret"]
    blank = ["-"] * (len(cols) - 1)  # the optimal player loses nothing
    rows = [[f"regret scoring {box}", f"{lost:.2f}", *blank] for box, lost in regret["by_box"].items()]
    rows += [[f"regret in turn {t + 1}", f"{lost:.2f}", *blank] for t, lost in enumerate(regret["by_turn"])]
    return rows


def format_text(result: dict) -> str:
    rows = table_rows(result)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [f"{result['summary']['games']} games, seed {result['seed']}, rules {result['rules']}"]
    if "optimal" in result:
        lines.append(f"exact optimum of these rules: {result['optimal']['exact_expected_score']:.4f}")
    for i, r in enumerate(rows):
        lines.append(
            "  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths, strict=True)))
        )
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_markdown(result: dict) -> str:
    rows = table_rows(result)
    out = [
        f"# Evaluation: {result['agent']}",
        "",
        f"{result['summary']['games']} games, seed {result['seed']}, rules `{json.dumps(result['rules'])}`.",
        "",
    ]
    out.append("| " + " | ".join(rows[0]) + " |")
    out.append("|" + "|".join(["---"] + ["---:"] * (len(rows[0]) - 1)) + "|")
    out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(out) + "\n"


#: The files a report writes: replaced by the next report only where its manifest proves them its own.
REPORT_FILES = ("evaluation.json", "evaluation.md", "boxes.png", "scores.png")


def report_clashes(directory: str | Path) -> list[str]:
    """The files of a report's names in ``directory`` that a new report must not overwrite: not proven
    written by a report (its ``manifest.json``), or changed since. A folder written before manifests
    has its report files replaced."""
    from ..manifest import MANIFEST, Manifest

    directory = Path(directory)
    if not directory.is_dir():
        return []
    manifest, old = Manifest.read(directory), not (directory / MANIFEST).exists()
    present = [n for n in REPORT_FILES if (directory / n).exists() or (directory / n).is_symlink()]
    return [n for n in present if not (manifest.owns(n) or (old and (directory / n).is_file()))]


def write_report(result: dict, directory: str | Path) -> list[Path]:
    """JSON, Markdown and PNG plots (per-box means against optimal, score histograms); the Markdown shows
    the plots. The files written are listed in the folder's ``manifest.json``; a file of the user's
    there is never overwritten (``ValueError``, before anything is written)."""
    from ..manifest import Manifest

    if clash := report_clashes(directory):
        raise ValueError(
            f"{directory}: {', '.join(clash)} would be overwritten but was not written by an evaluation report "
            "(or was changed since); choose another --report folder or move it away"
        )
    paths = _write_report(result, Path(directory))
    Manifest.read(directory).add([p.name for p in paths])
    return paths


def _write_report(result: dict, directory: Path) -> list[Path]:
    import matplotlib

    from .protocol import to_json

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / "evaluation.json", directory / "evaluation.md", directory / "boxes.png"]
    paths[0].write_text(json.dumps(to_json(result), indent=2))
    games = f"{result['summary']['games']:,} games"
    cols = _columns(result)
    boxes = list(cols[0][1]["boxes"])
    labels = [*boxes, "upper bonus", "Yahtzee bonuses"]  # the bonuses are points of the total too
    fig, ax = plt.subplots(figsize=(12, 4))
    width = 0.8 / len(cols)
    for i, (name, s) in enumerate(cols):
        heights = [s["boxes"][b]["mean"] for b in boxes] + [s["upper_bonus_mean"], s["yahtzee_bonus_points_mean"]]
        ax.bar([j + i * width for j in range(len(labels))], heights, width, label=name)
    ax.set_xticks([j + width * (len(cols) - 1) / 2 for j in range(len(labels))], labels, rotation=45, ha="right")
    ax.set_ylabel("mean points per game")
    ax.set_title(f"Mean points per box and bonus ({games})")
    ax.legend()
    fig.tight_layout()
    save_png(fig, paths[2])
    plt.close(fig)
    scores: dict[str, torch.Tensor] = result.get("scores", {})
    if scores:
        paths.append(directory / "scores.png")
        top = max(int(x.max()) for x in scores.values())
        bins = range(0, 10 * (top // 10 + 2), 10)  # the x axis ends where the data does
        fig, ax = plt.subplots(figsize=(8, 4))
        for name, x in scores.items():
            ax.hist(x.double().numpy(), bins=bins, histtype="step", density=True, label=name, linewidth=1.5)
        ax.set_xlim(0, bins[-1])
        ax.set_xlabel("final score")
        ax.set_ylabel("share of games per point")
        ax.set_title(f"Score distribution ({games})")
        ax.legend()
        fig.tight_layout()
        save_png(fig, paths[3])
        plt.close(fig)
    plots = "\n".join(f"![{p.stem}]({p.name})" for p in paths[2:])
    paths[1].write_text(format_markdown(result) + "\n" + plots + "\n")
    return paths
