"""A study's report: one file per exhibit (``F1.png``, ``T2.md``, ...) and an ``index.md`` that shows them.

Every number is a mean over a cell's seeds with a 95 % confidence band or error bar (1.96
standard errors over the seeds; none with one seed). The exact optimum and the greedy player are
reference lines where they apply: the optimum's exact expected score, and both players' statistics
on the same games as a member's final evaluation (the optimal player's come with every final
evaluation; the greedy player's are played here once and kept in ``OUT/reference.json``).
Captions give the budget and the number of games.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..game import BOX_NAMES
from .results import load_plan, optimal_summary, write_table
from .runner import POOL, SESSIONS
from .spec import EXHIBIT_IDS, Study, StudyError

Z95 = 1.96
UPPER, LOWER = BOX_NAMES[:6], BOX_NAMES[6:]
KEY_BOXES = ("yahtzee", "large_straight", "small_straight", "full_house", "four_of_a_kind", "chance")
THRESHOLD_COLUMNS = ("50", "100", "150", "200", "250", "300", "400", "500", "750", "1000", "1250", "1500")


@dataclass
class Series:
    """One line of a figure: a cell of an ablation, its label and its members' rows."""

    label: str
    ablation: str
    cell: str
    evals: pd.DataFrame
    finals: pd.DataFrame


@dataclass
class Exhibit:
    title: str
    draw: Callable[[Context, list[str], Path], int]  # returns how many data points it shows
    suffix: str = "png"


class Context:
    """What every exhibit reads: the study, its table, the reference players and the budgets."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.study, self.trials = load_plan(out)
        self.table = write_table(out)
        self.reference = references(out, self.study)

    def series(self, ablation: str) -> list[Series]:
        ab = self.study.ablations[ablation]
        experiment = ablation if ab.scheduler else POOL
        t = self.table
        out = []
        for cell_id, labels in ab.cells:
            rows = t[(t["cell"] == cell_id) & (t["experiment"] == experiment) & t["seed"].isin(ab.seeds)]
            evals, finals = rows[rows["stage"] == "eval"], rows[rows["stage"] == "final"]
            out.append(Series(label_of(labels), ablation, cell_id, evals, finals))
        return out

    def all_series(self, ablations: list[str]) -> list[Series]:
        """The cells of several ablations, each once, labelled ``ablation: label`` when more than one."""
        seen, out = set(), []
        for name in ablations:
            for s in self.series(name):
                if s.cell not in seen:
                    seen.add(s.cell)
                    s.label = f"{name}: {s.label}" if len(ablations) > 1 else s.label
                    out.append(s)
        return out

    def caption(self, ablations: list[str], what: str = "") -> str:
        """Budget, seeds and games of the cells behind an exhibit."""
        cells = [self.study.cells[c] for a in ablations for c, _ in self.study.ablations[a].cells]
        seeds = sorted({len(self.study.ablations[a].seeds) for a in ablations})

        def values(name: str) -> str:
            return " / ".join(f"{v:,}" for v in sorted({getattr(c, name) for c in cells}))

        parts = [
            f"Budget {values('total_games')} games per run (profile {self.study.profile})",
            f"{' / '.join(map(str, seeds))} seeds per cell, mean with 95 % confidence (1.96 SE over seeds)",
            f"{values('evaluations')} evaluations of {values('eval_games')} games",
            f"final evaluation {values('final_eval_games')} games",
        ]
        if self.reference:
            games = self.reference["key"]["games"]
            parts.append(f"optimal and greedy players on the {games:,} games of a member's final evaluation")
        return ("; ".join(parts) + ". " + what).strip()


def label_of(labels: dict[str, str]) -> str:
    """``d_h=64, n_layers=2`` for config keys; the value alone for a config file or a named axis (``low``)."""
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" if "." in k else v for k, v in labels.items()) or "base"


def mean_ci(values: pd.Series | np.ndarray) -> tuple[float, float]:
    """Mean and the half-width of its 95 % confidence interval (0 for a single value)."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return math.nan, math.nan
    half = Z95 * x.std(ddof=1) / math.sqrt(len(x)) if len(x) > 1 else 0.0
    return float(x.mean()), float(half)


def curve(evals: pd.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Games, mean over seeds and 95 % half-width at each evaluation."""
    if metric not in evals or evals.empty:
        return np.array([]), np.array([]), np.array([])
    rows = evals.dropna(subset=[metric])
    grouped = [(g, mean_ci(d[metric])) for g, d in rows.groupby("games")]
    games = np.array([g for g, _ in grouped])
    return games, np.array([m for _, (m, _) in grouped]), np.array([h for _, (_, h) in grouped])


# ------------------------------------------------------------------ the reference players
def references(out: Path, study: Study) -> dict[str, Any]:
    """The optimum's and the greedy player's statistics on a member's final-evaluation games (cached)."""
    path = out / "reference.json"
    optimal = optimal_summary(out)
    if optimal is None:
        return {}
    key = {"games": optimal["games"], "seed": optimal.get("final_seed")}
    if path.exists() and (cached := json.loads(path.read_text())).get("key") == key:
        return cached
    from ..evaluation import evaluate, play_single_turns
    from ..game import Rules
    from ..players import GreedyPlayer, OptimalPlayer

    rules, seed = Rules(), key["seed"] or 0
    greedy = evaluate(GreedyPlayer(rules), key["games"], seed, rules, with_optimal=False, regret=True)["summary"]
    single = {
        name: float(play_single_turns(p, key["games"], seed, rules).double().mean())
        for name, p in (("greedy", GreedyPlayer(rules)), ("optimal", OptimalPlayer(rules)))
    }
    ref = {"key": key, "optimal": optimal, "greedy": greedy, "single_turn": single}
    path.write_text(json.dumps(ref))
    return ref


def reference_lines(ax: Any, ctx: Context, metric: str, horizontal: bool = True) -> None:
    """The optimum and the greedy player as dashed lines at their value of ``metric``."""
    ref = ctx.reference
    if not ref:
        return
    values = {
        "mean_score": (ref["optimal"]["exact_expected_score"], ref["greedy"]["score"]["mean"]),
        "upper_bonus_rate": (ref["optimal"]["upper_bonus_rate"], ref["greedy"]["upper_bonus_rate"]),
        "yahtzee_rate": (ref["optimal"]["yahtzee_rate"], ref["greedy"]["yahtzee_rate"]),
        "single_turn_score": (ref["single_turn"]["optimal"], ref["single_turn"]["greedy"]),
    }
    if metric not in values:
        return
    opt, greedy = values[metric]
    line = ax.axhline if horizontal else ax.axvline
    exact = " (exact)" if metric == "mean_score" else ""
    line(opt, color="black", linestyle="--", linewidth=1, label=f"optimal{exact} {opt:.3g}")
    line(greedy, color="grey", linestyle=":", linewidth=1.5, label=f"greedy {greedy:.3g}")


# ------------------------------------------------------------------ figures
def _figure(width: float = 8, height: float = 4.5, ncols: int = 0) -> tuple[Any, Any]:
    """A figure and its axes (a list of ``ncols`` panels when ``ncols`` is given)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, max(ncols, 1), figsize=(width, height), squeeze=False)
    return fig, list(axes[0]) if ncols else axes[0][0]


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw_curves(metric: str, ylabel: str, refs: bool = True) -> Callable[[Context, list[str], Path], int]:
    """Learning curves of ``metric`` over games trained: a line per cell, its band over seeds."""

    def draw(ctx: Context, ablations: list[str], path: Path) -> int:
        fig, ax = _figure()
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
        _save(fig, path)
        return points

    return draw


def draw_bars(metrics: tuple[tuple[str, str], ...]) -> Callable[[Context, list[str], Path], int]:
    """Final value per cell (horizontal bars with 95 % error bars), a panel per metric, with the reference lines."""

    def draw(ctx: Context, ablations: list[str], path: Path) -> int:
        series = ctx.all_series(ablations)
        longest = max((len(s.label) for s in series), default=10)
        fig, axes = _figure(3 + 0.07 * longest + 4 * len(metrics), 1.5 + 0.3 * len(series), len(metrics))
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
        _save(fig, path)
        return points

    return draw


def draw_pareto(ctx: Context, ablations: list[str], path: Path) -> int:
    """Each member at (single-turn score, full-game score); cell means with error bars; the
    non-dominated cells joined; the greedy and optimal players as points."""
    fig, ax = _figure()
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
    _save(fig, path)
    return len(means)


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both coordinates (higher is better), by the first coordinate."""
    front = [p for p in points if not any(q != p and q[0] >= p[0] and q[1] >= p[1] for q in points)]
    return sorted(front)


def agents(ctx: Context, ablations: list[str]) -> list[Series]:
    """The best cell (final mean score over seeds) of each algorithm and task: the rows of T1 and P1-P4."""
    best: dict[tuple[str, str], tuple[float, Series]] = {}
    for s in ctx.all_series(ablations):
        if s.finals.empty or "mean_score" not in s.finals:
            continue
        cell = ctx.study.cells[s.cell]
        mean = mean_ci(s.finals["mean_score"])[0]
        key = (cell.algorithm, cell.task)
        if not math.isnan(mean) and (key not in best or mean > best[key][0]):
            best[key] = (mean, s)
    out = []
    for (algorithm, task), (_, s) in sorted(best.items()):
        s.label = algorithm + (" (single-turn, transferred)" if task == "single_turn" else "")
        out.append(s)
    return out


def _reference_columns(ctx: Context) -> list[tuple[str, dict[str, Any]]]:
    ref = ctx.reference
    return [("optimal", ref["optimal"]), ("greedy", ref["greedy"])] if ref else []


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
        cols = [(s.label, s) for s in found] + _reference_columns(ctx)
        fig, ax = _figure(max(8, 1.1 * len(labels)), 4.5)
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
        _save(fig, path)
        return points

    return draw


def draw_population(ctx: Context, ablations: list[str], path: Path) -> int:
    """Population-based training: every member's curve, the best member's in bold, and the cells
    at fixed settings (mean and band) on the same budget."""
    fig, ax = _figure()
    points = 0
    for name in ablations:
        for s in ctx.series(name):
            if ctx.study.ablations[name].scheduler:
                best = _best_member(s)
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
    _save(fig, path)
    return points


def _best_member(s: Series) -> int | None:
    source = s.finals if not s.finals.empty else s.evals
    if source.empty:
        return None
    return int(source.loc[source["mean_score"].idxmax(), "seed"])


# ------------------------------------------------------------------ tables
def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def _pm(values: pd.Series, scale: float = 1, digits: int = 1) -> str:
    m, h = mean_ci(values * scale)
    return "-" if math.isnan(m) else f"{m:.{digits}f} ± {h:.{digits}f}"


def table_entropy(ctx: Context, ablations: list[str], path: Path) -> int:
    """Entropy regimes: mean score, bonus and Yahtzee rates, regret per game, per cell."""
    rows = []
    for s in ctx.all_series(ablations):
        f = s.finals
        if f.empty:
            continue
        pct = [_pm(f[c], 100) for c in ("upper_bonus_rate", "yahtzee_rate")]
        rows.append([s.label, str(len(f)), _pm(f["mean_score"]), *pct, _pm(f.get("regret_per_game", pd.Series()))])
    rows += _reference_rows(ctx, lambda r: [r["score"]["mean"], r["upper_bonus_rate"], r["yahtzee_rate"]])
    header = ["regime", "seeds", "mean score", "upper bonus %", "Yahtzee %", "regret per game"]
    path.write_text(_markdown(header, rows))
    return len(rows)


def _reference_rows(ctx: Context, pick: Callable[[dict[str, Any]], list[float]]) -> list[list[str]]:
    out = []
    for name, summary in _reference_columns(ctx):
        mean, bonus, yahtzee = pick(summary)
        out.append(
            [name, "-", f"{mean:.1f}", f"{100 * bonus:.1f}", f"{100 * yahtzee:.1f}", "0" if name == "optimal" else "-"]
        )
    return out


def table_summary(ctx: Context, ablations: list[str], path: Path) -> int:
    """T1: per agent (best cell of each algorithm) the budget, mean, SD, rates, share >= 250, regret."""
    ref = ctx.reference
    rows = []
    if ref:
        o = ref["optimal"]
        rows.append(
            [
                "optimal",
                "exact",
                f"{o['exact_expected_score']:.2f} (exact; {o['score']['mean']:.1f} here)",
                f"{o['score']['sd']:.1f}",
                f"{100 * o['upper_bonus_rate']:.1f}",
                f"{100 * o['yahtzee_rate']:.1f}",
                f"{100 * o['share_at_least_250']:.1f}",
                "0",
            ]
        )
        g = ref["greedy"]
        rows.append(
            [
                "greedy",
                "-",
                f"{g['score']['mean']:.1f}",
                f"{g['score']['sd']:.1f}",
                f"{100 * g['upper_bonus_rate']:.1f}",
                f"{100 * g['yahtzee_rate']:.1f}",
                f"{100 * g['share_at_least_250']:.1f}",
                f"{g['regret']['per_game_mean']:.1f}",
            ]
        )
    for s in agents(ctx, ablations):
        f, cell = s.finals, ctx.study.cells[s.cell]
        rows.append(
            [
                f"{s.label} ({label_of_cell(ctx, s)})",
                f"{cell.total_games:,}",
                _pm(f["mean_score"]),
                _pm(f["sd"]),
                _pm(f["upper_bonus_rate"], 100),
                _pm(f["yahtzee_rate"], 100),
                _pm(f["share_at_least_250"], 100),
                _pm(f["regret_per_game"]),
            ]
        )
    header = ["agent", "training games", "mean", "SD", "upper bonus %", "Yahtzee %", "games >= 250 %", "regret/game"]
    path.write_text(_markdown(header, rows))
    return len(rows)


def label_of_cell(ctx: Context, s: Series) -> str:
    for cell_id, labels in ctx.study.ablations[s.ablation].cells:
        if cell_id == s.cell:
            return label_of(labels)
    return s.cell


def table_distribution(ctx: Context, ablations: list[str], path: Path) -> int:
    """T2: P(score >= n) per agent, the optimum and the greedy player."""
    rows = []
    for name, summary in _reference_columns(ctx):
        rows.append([name, *(f"{100 * summary['p_score_at_least'][n]:.2f}" for n in THRESHOLD_COLUMNS)])
    for s in agents(ctx, ablations):
        rows.append([s.label, *(_pm(s.finals[f"p_ge_{n}"], 100, 2) for n in THRESHOLD_COLUMNS)])
    path.write_text(_markdown(["agent", *(f"P(>= {n}) %" for n in THRESHOLD_COLUMNS)], rows))
    return len(rows)


def table_population(ctx: Context, ablations: list[str], path: Path) -> int:
    """B2: the population's best member and mean against the fixed settings, with the best's evolved settings."""
    rows = []
    for name in ablations:
        for s in ctx.series(name):
            f = s.finals
            if f.empty:
                continue
            if ctx.study.ablations[name].scheduler:
                best = f.loc[f["mean_score"].idxmax()]
                settings = ", ".join(f"{k.split('.')[-1]}={best[k]:.3g}" for k in f.columns if k.startswith("setting/"))
                rows.append(
                    [f"{name}: best member (seed {int(best['seed'])})", "1", f"{best['mean_score']:.1f}", settings]
                )
                rows.append([f"{name}: population mean", str(len(f)), _pm(f["mean_score"]), ""])
            else:
                rows.append([f"{name}: fixed settings ({s.label})", str(len(f)), _pm(f["mean_score"]), ""])
    path.write_text(_markdown(["who", "members", "final mean score", "evolved settings (the best's last)"], rows))
    return len(rows)


EXHIBITS: dict[str, Exhibit] = {
    "S1": Exhibit(
        "Single-turn agent: single-turn score over training", draw_curves("single_turn_score", "points in one turn")
    ),
    "S2": Exhibit(
        "Single-turn agent: full-game score over training", draw_curves("mean_score", "full-game mean score")
    ),
    "S3": Exhibit("Pareto frontier: single-turn against full-game score", draw_pareto),
    "S4": Exhibit(
        "Single-turn agent: mean points per box in full games, beside the greedy and optimal players",
        draw_agent_bars("box_mean", BOX_NAMES, "mean points per game"),
    ),
    "F1": Exhibit("Algorithm comparison: learning curves", draw_curves("mean_score", "mean score")),
    "F2": Exhibit("Final mean score per configuration", draw_bars((("mean_score", "final mean score"),))),
    "F3": Exhibit(
        "Upper-bonus and Yahtzee rates per configuration",
        draw_bars((("upper_bonus_rate", "upper-bonus rate"), ("yahtzee_rate", "Yahtzee (50) rate"))),
    ),
    "F4": Exhibit("State representation: learning curves", draw_curves("mean_score", "mean score")),
    "F5": Exhibit(
        "State representation: upper-bonus rate over training", draw_curves("upper_bonus_rate", "upper-bonus rate")
    ),
    "F6": Exhibit("Entropy regimes", table_entropy, "md"),
    "F7": Exhibit("Architecture: width and depth of the trunk", draw_bars((("mean_score", "final mean score"),))),
    "F8": Exhibit("With and without LayerNorm: learning curves", draw_curves("mean_score", "mean score")),
    "F9": Exhibit(
        "With and without LayerNorm: explained variance of the value head over training",
        draw_curves("explained_variance", "explained variance (last update)", refs=False),
    ),
    "F10": Exhibit("GAE lambda: final mean score", draw_bars((("mean_score", "final mean score"),))),
    "F11": Exhibit("GAE lambda: upper-bonus rate", draw_bars((("upper_bonus_rate", "upper-bonus rate"),))),
    "F12": Exhibit(
        "Rolling-head entropy over training", draw_curves("entropy_roll", "keep-head entropy (nats)", False)
    ),
    "F13": Exhibit(
        "Scoring-head entropy over training", draw_curves("entropy_score", "box-head entropy (nats)", False)
    ),
    "T1": Exhibit("Full-game summary", table_summary, "md"),
    "T2": Exhibit("Score distribution: P(score >= n)", table_distribution, "md"),
    "P1": Exhibit(
        "Upper section: mean points per upper box and the bonus",
        draw_agent_bars("box_mean", UPPER, "mean points per game", extra="upper bonus"),
    ),
    "P2": Exhibit(
        "Lower section: mean points per lower box", draw_agent_bars("box_mean", LOWER, "mean points per game")
    ),
    "P3": Exhibit(
        "First category filled", draw_agent_bars("first_box", BOX_NAMES, "share of games filled first", limits=(0, 1))
    ),
    "P4": Exhibit(
        "Median turn at which key categories are filled",
        draw_agent_bars("fill_turn", KEY_BOXES, "median turn filled (1-13)", turn=True, limits=(0, 13.5)),
    ),
    "B1": Exhibit("Population-based training against fixed settings: learning curves", draw_population),
    "B2": Exhibit("Population-based training against fixed settings: final scores", table_population, "md"),
}
assert set(EXHIBITS) == set(EXHIBIT_IDS), "every exhibit id has its drawing"

NOTES = {
    "S1": "Dotted: the greedy player, the exact optimum of a single turn; dashed: the optimal full-game player's "
    "points in one turn.",
    "S4": "Per box in full games (where every box is filled once), the greedy and optimal players on the same games.",
    "F2": "Every cell of the study; dashed: the exact optimum, dotted: the greedy player.",
    "F9": "Explained variance of the value head on the last training batch before each evaluation.",
    "F12": "Entropy of the keep head, averaged over the rolling decisions of the last batch before each evaluation.",
    "F13": "Entropy of the box head, averaged over the scoring decisions of the last batch before each evaluation.",
    "T1": "Agents: the best cell (final mean score over seeds) of each algorithm; ± is the 95 % confidence "
    "half-width over seeds. Optimal and greedy: the same protocol on the games of one member's final evaluation.",
    "P3": "Share of games in which each box is the first one filled.",
    "B1": "The best member is picked after the fact, by its final score.",
    "B2": "The best member is picked after the fact (an optimistic estimate); the population's mean against the "
    "fixed settings is the fair comparison.",
    "P4": "Turns counted 1 to 13.",
}


def write_report(out: Path, force: bool = False) -> Path:
    """Draw every exhibit the study names into ``OUT/report/`` and write ``index.md``; returns its path."""
    out = Path(out)
    folder = out / "report"
    if (folder / "index.md").exists() and not force:
        raise StudyError(f"{folder}: a report is already there; add --force to replace it")
    ctx = Context(out)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    study = ctx.study
    lines = [f"# Study {study.name} (profile {study.profile})", "", study.description, ""]
    lines += _status_lines(ctx)
    manifest = {}
    for eid, ablations in study.exhibits.items():
        ex = EXHIBITS[eid]
        path = folder / f"{eid}.{ex.suffix}"
        points = ex.draw(ctx, ablations, path)
        manifest[eid] = {"file": path.name, "points": points, "ablations": ablations}
        lines += [f"## {eid}. {ex.title}", ""]
        lines += [f"![{eid}]({path.name})" if ex.suffix == "png" else path.read_text()]
        lines += ["", f"*{ctx.caption(ablations, NOTES.get(eid, ''))}*", ""]
        print(f"  {eid}: {path.name} ({points} points)")
    (folder / "exhibits.json").write_text(json.dumps(manifest, indent=1))
    index = folder / "index.md"
    index.write_text("\n".join(lines))
    return index


def _status_lines(ctx: Context) -> list[str]:
    t = ctx.table
    members = t.drop_duplicates(["run_dir", "seed"])
    counts = members["status"].value_counts().to_dict()
    lines = [f"Members: {', '.join(f'{n} {s}' for s, n in sorted(counts.items()))}. Results: `results.csv`.", ""]
    sessions = ctx.out / SESSIONS
    runs = [json.loads(line) for line in sessions.read_text().splitlines() if line.strip()] if sessions.exists() else []
    if runs:
        minutes = sum(r["wall_clock_s"] or 0 for r in runs) / 60
        lines.append(f"Wall clock: {minutes:.0f} min in {len(runs)} session(s) of `study run`:")
        for r in runs:
            took = f"{r['wall_clock_s'] / 60:.1f} min" if r["wall_clock_s"] is not None else "killed (no wall clock)"
            lines.append(f"* {r['started']}, {took}, {r['cpus']} CPUs on {r['machine']}: `{r['command']}`")
        lines.append("")
    for _, row in members[members["status"] == "failed"].iterrows():
        lines.append(f"* failed: `{row['run_dir']}`: {row['error']}")
    return lines + ([""] if len(lines) > 2 else [])
