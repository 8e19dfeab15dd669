"""What every exhibit of a study's report reads: the study, its results table, the reference
players' statistics, the cells' legends (what each line trains), and a cell's seeds turned into a
mean with its interval (``stats``: a t interval over seeds, cut at the quantity's range)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...digest import record_sha256
from ...game import BOX_NAMES
from ...game.rules import UPPER_BONUS, episode_unit
from ..chain import chain_label
from ..model import Cell, Study, StudyError
from ..records import REFERENCE, digested_text, read_record
from ..results import load_plan, load_table, optimal_summary
from ..results import reference_columns as reference_columns_of
from .stats import Interval, interval, method_text

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
    picked_from: int = 1  # the cells this one was picked from after the fact (T1's "best"), 1: none


@dataclass
class Exhibit:
    title: str
    draw: Callable[[Context, list[str], Path], int]  # returns how many data points it shows
    suffix: str = "png"
    spread: str = "bands"  # what shows the interval over seeds: bands, error bars, brackets


class Context:
    """What every exhibit reads: the study, its table, the reference players and the budgets."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.study, self.trials = load_plan(out)
        self.table = load_table(out)
        self.reference = references(out, self.study)
        # One block per dtype (a deep copy consolidates the column a block each the CSV gave): every
        # exhibit's row selection takes each block once, and the claims make thousands of them.
        self.table = with_greedy(out, self.reference, self.table).copy()

    def label(self, cell_id: str, labels: dict[str, str]) -> str:
        """A cell's legend: its labels, a config file named by what it trains (``A2C, GAE(0.95)``); a
        chained cell without axes by where it starts (not ``base``)."""
        if "config" in labels:
            labels = {**labels, "config": recipe(self.study.cells[cell_id])}
        return chain_label(self.study, cell_id, labels)

    def series(self, ablation: str) -> list[Series]:
        ab = self.study.ablations[ablation]
        experiment = ab.experiment
        t = self.table
        recipes = [recipe(self.study.cells[cell_id]) for cell_id, _ in ab.cells]
        names = legends(ab.axes, [self.label(cell_id, labels) for cell_id, labels in ab.cells], recipes)
        out = []
        for (cell_id, _), name in zip(ab.cells, names, strict=True):
            rows = t[(t["cell"] == cell_id) & (t["experiment"] == experiment) & t["seed"].isin(ab.seeds)]
            evals, finals = rows[rows["stage"] == "eval"], rows[rows["stage"] == "final"]
            out.append(Series(name, ablation, cell_id, evals, finals))
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

    def caption(self, ablations: list[str], what: str = "", spread: str = "") -> str:
        """Budget, seeds (and how the intervals over them are made) and games of the cells behind an exhibit."""
        cells = [self.study.cells[c] for a in ablations for c, _ in self.study.ablations[a].cells]
        seeds = {len(self.study.ablations[a].seeds) for a in ablations}
        t = self.table  # a study still running: the n of the finished seeds, not the planned one
        done = t[(t["stage"] == "final") & (t["status"] == "done") & t["cell"].isin({c.id for c in cells})]
        if done["cell"].nunique() and done.groupby("cell")["seed"].nunique().lt(max(seeds)).any():
            seeds = set(done.groupby("cell")["seed"].nunique())

        def values(name: str) -> str:
            return " / ".join(f"{v:,}" for v in sorted({getattr(c, name) for c in cells}))

        parts = [
            f"Budget {budget_text(cells)} (profile {self.study.profile})",
            method_text(seeds, spread),
            f"{values('evaluations')} evaluations of {values('eval_games')} games",
            f"final evaluation {values('final_eval_games')} games",
        ]
        if spread == "bands":  # a learning curve: exactly which evaluations it draws
            evals = t[(t["stage"] == "eval") & t["cell"].isin({c.id for c in cells})].dropna(subset=["games"])
            if len(evals):
                n = " / ".join(map(str, sorted(set(evals.groupby(["cell", "seed"]).size()))))
                parts.append(
                    f"curves draw {n} in-training evaluations a member, from {evals['games'].min():,.0f} to "
                    f"{evals['games'].max():,.0f} games (turns for a single-turn cell), and, where the quantity has "
                    f"one, the final evaluation at {budget_text(cells, per='')}"
                )
        if self.reference:
            games = self.reference["key"]["games"]
            parts.append(f"optimal and greedy players on the {games:,} games of a member's final evaluation")
        return ("; ".join(parts) + ". " + what).strip()


def budget_text(cells: list[Cell], per: str = " per run") -> str:
    """The cells' budgets in their own units: a full-game cell trains on games, a single-turn cell on
    turns (an episode is one turn, so its count is 13 times its games'), never both called games."""
    parts = []
    for unit in ("games", "turns"):
        found = sorted({c.total_games for c in cells if episode_unit(c.task) == unit})
        if found:
            which = " of a single-turn cell" if unit == "turns" else ""
            parts.append(f"{' / '.join(f'{v:,}' for v in found)} {unit}{per}{which}")
    return " and ".join(parts)


def recipe(cell: Cell) -> str:
    """What a cell trains, as its legend says it: the algorithm and how its advantage is estimated."""
    name = {"Reinforce": "REINFORCE"}.get(cell.algorithm, cell.algorithm)
    lam = cell.gae_lambda
    if lam is None:
        return name
    return f"{name}, " + ("TD(0)" if lam == 0 else "Monte Carlo (lambda 1)" if lam == 1 else f"GAE({lam:g})")


def legends(axes: list[str], labels: list[str], recipes: list[str]) -> list[str]:
    """An ablation's legend entries: its cells' labels, or what each cell trains where the axes are
    named values (``a2c_td0: {config: ...}``, no setting's key) that each train something else (an
    algorithm, an advantage): the reader sees ``A2C, TD(0)``, not the study file's name for it."""
    named = all("." not in axis for axis in axes)
    return recipes if named and len(recipes) > 1 and len(set(recipes)) == len(recipes) else labels


@cache
def box_maxima() -> dict[str, float]:
    """The most a box can score (from the game's score table, jokers included), by name."""
    from ...game.tables import tables

    top = tables("cpu").score_rows.amax(0)
    return {BOX_NAMES[b]: float(top[b]) for b in range(len(BOX_NAMES))}


def bounds(metric: str) -> tuple[float, float]:
    """The range a quantity cannot leave: rates, shares and probabilities 0-1, fill turns 0-12
    (stored from 0), explained variance at most 1, a head's entropy at most that of a uniform choice
    (ln 32 keeps, ln 13 boxes), a box's points 0 to its most, the upper bonus
    0-35, a full game's score 0-1575, the policy loss any sign, the rest >= 0."""
    base, _, box = metric.partition("/")
    if base.endswith(("_rate", "_share")) or base in ("first_box", "share_at_least_250") or base.startswith("p_ge_"):
        return 0.0, 1.0
    if base in ("policy", "explained_variance"):  # no lower end: the policy loss (either sign), EV (at most 1)
        return -math.inf, math.inf if base == "policy" else 1.0
    if base == "box_mean":
        return 0.0, box_maxima()[box]
    if base == "upper_bonus_mean":
        return 0.0, float(UPPER_BONUS)
    if base == "fill_turn":
        return 0.0, 12.0
    if base in ("entropy_roll", "entropy_score"):  # at most a uniform choice: ln 32 keeps, ln 13 boxes
        return 0.0, math.log(32 if base == "entropy_roll" else 13)
    return 0.0, 1575.0 if base in ("mean_score", "median") else math.inf


def collapsed(finals: pd.DataFrame) -> pd.Series:
    """Which of these final rows are collapsed members (``results.collapse``; read back: text)."""
    if "collapsed" not in finals:
        return pd.Series(False, index=finals.index)
    return finals["collapsed"].astype(str) == "True"


def stat(values: pd.Series | np.ndarray, metric: str) -> Interval:
    """The mean of a cell's seeds and its interval, within ``metric``'s range."""
    return interval(values, bounds(metric))


def percent(metric: str) -> float:
    """100 for a rate (drawn and printed in %), else 1."""
    return 100.0 if metric.endswith("_rate") else 1.0


def curve(evals: pd.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Games, mean over seeds and the interval's ends at each evaluation (the mean where there is none)."""
    if metric not in evals or evals.empty:
        return np.array([]), np.array([]), np.array([]), np.array([])
    rows = evals.dropna(subset=[metric])
    stats = [(g, stat(d[metric], metric)) for g, d in rows.groupby("games")]
    mean = np.array([s.mean for _, s in stats])
    low = np.array([s.low if s.has_interval else s.mean for _, s in stats])
    high = np.array([s.high if s.has_interval else s.mean for _, s in stats])
    return np.array([g for g, _ in stats]), mean, low, high


def references(out: Path, study: Study) -> dict[str, Any]:
    """The optimum's and the greedy player's statistics on a member's final-evaluation games (cached;
    a folder without run folders, a report's committed copy, reads the cached ones as they are)."""
    path = out / REFERENCE
    optimal = optimal_summary(out)
    if optimal is None:
        if not path.exists() or (out / "runs").is_dir():
            return {}
        if (kept := read_record(path, "no run folders here to compute it again")) is None:
            raise StudyError(f"{path}: cannot be trusted (see the warning); restore it from the study folder")
        return kept
    # Keyed by what it summarises: the games, and the optimal player's record on them.
    key = {"games": optimal["games"], "seed": optimal.get("final_seed"), "optimal": record_sha256(optimal)}
    if (cached := read_record(path, "computed again")) is not None and cached.get("key") == key:
        return cached
    from ...evaluation import evaluate, play_single_turns
    from ...game import Rules
    from ...players import GreedyPlayer, OptimalPlayer

    rules, seed = Rules(), key["seed"] or 0
    greedy = evaluate(GreedyPlayer(rules), key["games"], seed, rules, with_optimal=False, regret=True)["summary"]
    single = {
        name: float(play_single_turns(p, key["games"], seed, rules).double().mean())
        for name, p in (("greedy", GreedyPlayer(rules)), ("optimal", OptimalPlayer(rules)))
    }
    ref = {"key": key, "optimal": optimal, "greedy": greedy, "single_turn": single}
    path.write_text(digested_text(ref))
    return ref


def with_greedy(out: Path, ref: dict[str, Any], table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the greedy player's numbers on each member's own final-evaluation games
    (``greedy/...`` beside the members' ``optimal/...``), so that a member is judged against both
    on its own dice, paired per seed. Played once per seed and cached in ``reference.json``; a
    folder without run folders (a committed copy) uses what is cached."""
    if not ref or "final_seed" not in table:
        return table
    finals = table[(table["stage"] == "final") & table["final_seed"].notna() & table["final_games"].notna()]
    keys = {
        _games_key(s, g): (int(s), int(g)) for s, g in zip(finals["final_seed"], finals["final_games"], strict=True)
    }
    cached = ref.setdefault("greedy_by_seed", {})
    missing = [k for k in keys if k not in cached]
    if missing and (out / "runs").is_dir():
        from ...evaluation import evaluate
        from ...game import Rules
        from ...players import GreedyPlayer

        rules = Rules()
        for k in missing:
            seed, games = keys[k]
            summary = evaluate(GreedyPlayer(rules), games, seed, rules, with_optimal=False, regret=False)["summary"]
            cached[k] = reference_columns_of(summary)
        (out / REFERENCE).write_text(digested_text(ref))
    table = table.copy()
    at = table.index.isin(finals.index)
    seeds = [_games_key(s, g) for s, g in zip(table.loc[at, "final_seed"], table.loc[at, "final_games"], strict=True)]
    for column in sorted({c for k in seeds if k in cached for c in cached[k]}):
        table.loc[at, f"greedy/{column}"] = [cached.get(k, {}).get(column, math.nan) for k in seeds]
    return table


def _games_key(seed: float, games: float) -> str:
    """A final evaluation's games, as ``reference.json`` names them: their seed and number."""
    return f"{int(seed)}#{int(games)}"


def agents(ctx: Context, ablations: list[str]) -> list[Series]:
    """The best cell (final mean score over seeds) of each algorithm and task: the rows of T1, P1-P4
    and R1. Picked after the fact from its rivals (``picked_from``), on the games it is judged on:
    an optimistic estimate, which T1 re-evaluates on fresh games."""
    best: dict[tuple[str, str, str], tuple[float, Series]] = {}
    rivals: dict[tuple[str, str, str], int] = {}
    for s in ctx.all_series(ablations):
        if s.finals.empty or "mean_score" not in s.finals:
            continue
        cell = ctx.study.cells[s.cell]
        mean = stat(s.finals["mean_score"], "mean_score").mean
        key = (cell.algorithm, cell.task, cell.start_from or "")  # a chain: its own row
        if math.isnan(mean):  # no finished member yet (a running study): not a rival it was picked from
            continue
        rivals[key] = rivals.get(key, 0) + 1
        if key not in best or mean > best[key][0]:
            best[key] = (mean, s)
    out = []
    for key, (_, s) in sorted(best.items()):
        cell = ctx.study.cells[s.cell]
        source = ctx.study.cells.get(cell.start_from or "")
        s.label = recipe(cell) + (" (single-turn, transferred)" if cell.task == "single_turn" else "")
        s.label += f" ({chain_label(ctx.study, s.cell, {})})" if source else ""
        s.picked_from = rivals[key]
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


def mean_and_interval(values: pd.Series, metric: str, digits: int = 1) -> str:
    """A table's cell: ``mean [low, high]`` over seeds (in % for a rate or share), within the quantity's range."""
    scale = 100.0 if bounds(metric) == (0.0, 1.0) else 1.0
    return stat(values, metric).text(scale, digits)


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
            return ctx.label(cell_id, labels)
    return s.cell
