"""What every exhibit of a study's report reads: the study, its results table, the reference
players' statistics, and the helpers that turn a cell's seeds into a mean with a 95 % confidence
band (1.96 standard errors over the seeds)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..game import BOX_NAMES
from .results import load_plan, optimal_summary, write_table
from .runner import POOL
from .spec import Study

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


def new_figure(width: float = 8, height: float = 4.5, ncols: int = 0) -> tuple[Any, Any]:
    """A figure and its axes (a list of ``ncols`` panels when ``ncols`` is given)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, max(ncols, 1), figsize=(width, height), squeeze=False)
    return fig, list(axes[0]) if ncols else axes[0][0]


def save_figure(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


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


def reference_columns(ctx: Context) -> list[tuple[str, dict[str, Any]]]:
    ref = ctx.reference
    return [("optimal", ref["optimal"]), ("greedy", ref["greedy"])] if ref else []


def best_member(s: Series) -> int | None:
    source = s.finals if not s.finals.empty else s.evals
    if source.empty:
        return None
    return int(source.loc[source["mean_score"].idxmax(), "seed"])


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def plus_minus(values: pd.Series, scale: float = 1, digits: int = 1) -> str:
    m, h = mean_ci(values * scale)
    return "-" if math.isnan(m) else f"{m:.{digits}f} ± {h:.{digits}f}"


def reference_rows(ctx: Context, pick: Callable[[dict[str, Any]], list[float]]) -> list[list[str]]:
    out = []
    for name, summary in reference_columns(ctx):
        mean, bonus, yahtzee = pick(summary)
        out.append(
            [name, "-", f"{mean:.1f}", f"{100 * bonus:.1f}", f"{100 * yahtzee:.1f}", "0" if name == "optimal" else "-"]
        )
    return out


def label_of_cell(ctx: Context, s: Series) -> str:
    for cell_id, labels in ctx.study.ablations[s.ablation].cells:
        if cell_id == s.cell:
            return label_of(labels)
    return s.cell
