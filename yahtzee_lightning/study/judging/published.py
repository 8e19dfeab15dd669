"""A study's cells beside a paper's published rows: the table of every seed and the paper's line,
and for each row whether the paper's number falls inside our seeds' prediction interval for one
new run.

The published numbers come from a JSON file (``published_file``). A cell is matched to a row by its
label on the study's ``row`` axis; a row's variants (a label that extends its name, an ablation's
other arm) stand beside that row's numbers (``matched_arms``).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...game import BOX_NAMES
from ...game.rules import UPPER_BONUS
from ..model import StudyError
from ..results import FILL_SHARE
from .published_file import QUANTITIES
from .stats import interval, t_quantile

#: The columns of ``table.csv``: a line per row and seed, plus a line per row whose seed is ``paper``.
TABLE_COLUMNS = ("row", "seed", "games", "eval_games", "mean", "variance", "bonus_rate", "yahtzee_rate", "share_250")
AXIS = "row"


@dataclass(frozen=True)
class Band:
    """Our seeds' mean of a quantity, its 95 % interval and the 95 % prediction interval for one new
    seed (Student's t, ``n - 1`` df: ``mean +- t s sqrt(1 + 1/n)``; none with one seed)."""

    mean: float
    low: float
    high: float
    predict_low: float
    predict_high: float
    n: int

    def holds(self, value: float) -> bool | None:
        """Whether ``value`` lies in the prediction interval (None: no interval, n < 2)."""
        if self.n < 2:
            return None
        return bool(self.predict_low <= value <= self.predict_high)


def band(values: list[float], bounds: tuple[float, float] = (-math.inf, math.inf), level: float = 0.95) -> Band:
    """``Band`` of one value per seed, its intervals cut to ``bounds`` (a rate's [0, 1]); ``level``: the
    prediction interval's (the mean's interval stays at 95 %)."""
    x = np.asarray([v for v in values if math.isfinite(v)], dtype=float)
    mean = interval(x, bounds)
    if len(x) < 2:
        return Band(mean.mean, math.nan, math.nan, math.nan, math.nan, len(x))
    half = t_quantile(0.5 + level / 2, len(x) - 1) * float(x.std(ddof=1)) * math.sqrt(1 + 1 / len(x))
    low, high = max(mean.mean - half, bounds[0]), min(mean.mean + half, bounds[1])
    return Band(mean.mean, mean.low, mean.high, low, high, len(x))


def matched_rows(study: Any, published: dict[str, Any]) -> dict[str, str]:
    """Each cell id with a ``row`` label that the published file has, to that label."""
    cells = {}
    for ablation in study.ablations.values():
        for cell_id, labels in ablation.cells:
            if labels.get(AXIS) in published["rows"]:
                cells[cell_id] = labels[AXIS]
    if not cells:
        raise StudyError(f"no cell of study {study.name!r} has a '{AXIS}' label among {sorted(published['rows'])}")
    return cells


def matched_arms(study: Any, cells: dict[str, str], published: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """The variants of the published rows, each cell to ``(label, row)``: its name here and the row
    whose published numbers it stands beside. A cell whose ``row`` label the file lacks but which
    extends a row's name (``ppo_250k_shaped``: the longest such row, ``ppo_250k``); and the other arms
    of the rows' ablations: each cell of a one-axis ablation that holds exactly one matched cell
    (``cells``, from ``matched_rows``), itself unmatched, named for the row with the cell's value on
    that axis as a suffix (``ppo_50k_unstepped``: the same recipe with one setting changed). An arm
    is a base in its turn: an ablation whose one named cell is an arm names its others after it
    (``ppo_250k_unstepped_as_published``: one more setting changed), in the file's order."""
    arms = {}
    for ablation in study.ablations.values():
        for cell_id, labels in ablation.cells:
            label = labels.get(AXIS)
            if cell_id in cells or not isinstance(label, str):
                continue
            bases = [row for row in published["rows"] if label.startswith(f"{row}_")]
            if bases:
                arms[cell_id] = (label, max(bases, key=len))
    named = -1
    while len(arms) > named:  # until a pass names nothing new (an arm named late can be a base)
        named = len(arms)
        for ablation in study.ablations.values():
            known = {cell_id: (row, row) for cell_id, row in cells.items()} | arms  # (its name, its row)
            bases = {known[cell_id] for cell_id, _ in ablation.cells if cell_id in known}
            if len(bases) != 1 or any(len(labels) != 1 for _, labels in ablation.cells):
                continue
            (label, row) = bases.pop()
            for cell_id, labels in ablation.cells:
                if cell_id not in known and AXIS not in labels:  # a row label names its own cell, or none
                    arms[cell_id] = (f"{label}_{next(iter(labels.values()))}", row)
    return arms


def started(results: Any) -> set[str]:
    """The cells with an evaluation during training or a finished run: a variant is set beside its row
    only from then (a pending one would add an empty column to every table)."""
    return set(results.loc[(results["stage"] == "eval") | (results["status"] == "done"), "cell"])


def with_arms(published: dict[str, Any], arms: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """``published`` with each arm's label as a row holding its base row's numbers (no paper line of
    its own in ``table.csv``: ``paper_lines`` is given the paper's rows only)."""
    added = {label: published["rows"][row] for label, row in arms.values()}
    return {**published, "rows": {**published["rows"], **added}}


def in_whole_games(results: Any, study: Any) -> Any:
    """``results`` with a single-turn cell's ``games`` counted as the published table counts them:
    whole games of 13 turns. Such a cell trains on turns (an episode is one turn), so its own count
    is 13 times larger; a full-game cell's is left as it is."""
    single = [cell_id for cell_id, cell in study.cells.items() if cell.task == "single_turn"]
    turns = results["cell"].isin(single)
    return results.assign(games=results["games"].where(~turns, results["games"] / len(BOX_NAMES)))


def seed_lines(results: Any, cells: dict[str, str]) -> list[dict[str, Any]]:
    """``table.csv``'s line of every finished seed of a matched cell, row by row in the order of
    ``cells`` (``results``: the study's collected results, one final row per member)."""
    final = results[(results["stage"] == "final") & (results["status"] == "done") & results["cell"].isin(cells)]
    order = {label: i for i, label in enumerate(dict.fromkeys(cells.values()))}  # the rows as ``cells`` lists them
    final = final.assign(_order=final["cell"].map(lambda c: order[cells[c]]))
    lines = []
    for _, r in final.sort_values(["_order", "seed"]).iterrows():
        lines.append(
            {
                "row": cells[r["cell"]],
                "seed": int(r["seed"]),
                "games": round(r["games"]),
                "eval_games": int(r["final_games"]),
                "mean": float(r["mean_score"]),
                "variance": float(r["sd"]) ** 2,
                "bonus_rate": float(r["upper_bonus_rate"]),
                "yahtzee_rate": float(r["yahtzee_rate"]),
                "share_250": float(r["share_at_least_250"]),
                **{f"box/{b}": float(r[f"box_mean/{b}"]) for b in BOX_NAMES},
                "box/upper_bonus": float(r["upper_bonus_mean"]),
                # the median turn each box is filled, 1 = the first (as the published logs count)
                **{f"fill/{b}": float(r[f"fill_turn/{b}"]) + 1 for b in BOX_NAMES if f"fill_turn/{b}" in r},
                # the share of games filling each box at each turn (evaluations from before it: none)
                **{k: float(v) for k, v in r.items() if k.startswith(f"{FILL_SHARE}/") and not _missing(v)},
                # the optimal player's shares on this seed's own final games (a yardstick for the log's)
                **{k: float(v) for k, v in r.items() if k.startswith(f"optimal/{FILL_SHARE}/") and not _missing(v)},
            }
        )
    return lines


def paper_lines(published: dict[str, Any], rows: list[str]) -> list[dict[str, Any]]:
    """The paper's line of each row: its table's numbers, evaluated over its logs' games."""
    return [
        {
            "row": row,
            "seed": "paper",
            "games": published["rows"][row]["games"],
            "eval_games": published["rows"][row].get("eval_games", 100_000),
            **{k: published["rows"][row][k] for k, *_ in QUANTITIES},
        }
        for row in rows
    ]


def write_table(path: Path, ours: list[dict[str, Any]], paper: list[dict[str, Any]]) -> None:
    """``table.csv``: per row our seeds' lines, then the paper's, rates as fractions; then a variant's
    seeds (``ROW_SUFFIX``: no paper line of its own)."""
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, TABLE_COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for row in dict.fromkeys(line["row"] for line in [*paper, *ours]):  # a row's seeds, then the paper's line
            for line in [*(o for o in ours if o["row"] == row), *(p for p in paper if p["row"] == row)]:
                writer.writerow({k: _plain(line[k]) for k in TABLE_COLUMNS})


def _plain(value: Any) -> Any:
    return f"{value:.6g}" if isinstance(value, float) else value


def side_by_side(ours: list[dict[str, Any]], published: dict[str, Any], rows: list[str]) -> list[dict[str, Any]]:
    """Per row and quantity: the paper's number, our band over seeds, and whether it holds."""
    out = []
    for row in rows:
        seeds = [line for line in ours if line["row"] == row]
        for key, _, name, scale, digits in QUANTITIES:
            b = band([line[key] for line in seeds], (0.0, 1.0) if key.endswith(("rate", "250")) else (0.0, math.inf))
            paper = published["rows"][row][key]
            out.append({"row": row, "quantity": name, "key": key, "paper": paper, "band": b, "holds": b.holds(paper)})
            out[-1] |= {"scale": scale, "digits": digits}
    return out


@dataclass(frozen=True)
class BoxGap:
    """One box (or the upper bonus) of a row: our seeds' ``band`` of its mean points, the paper's mean,
    and ``family``: the prediction interval widened for the row's number of boxes (Bonferroni), since
    with 14 boxes a row one paper number in 20 falls outside a 95 % interval where nothing differs."""

    name: str
    band: Band
    paper: float
    family: Band

    @property
    def outside(self) -> bool:
        """The paper's number outside our 95 % prediction interval (False with fewer than 2 seeds)."""
        return self.band.holds(self.paper) is False

    @property
    def outside_family(self) -> bool:
        """The paper's number outside the interval widened for the row's number of boxes."""
        return self.family.holds(self.paper) is False


def per_box_differences(
    ours: list[dict[str, Any]], published: dict[str, Any], rows: list[str]
) -> dict[str, list[BoxGap]]:
    """Per row: for each box and the upper bonus, our band of its mean points beside the paper's mean."""
    names = [*BOX_NAMES, "upper_bonus"]
    family_level = 1 - 0.05 / len(names)
    out = {}
    for row in rows:
        seeds = [line for line in ours if line["row"] == row]
        per_box = published["rows"][row]["per_box"]
        out[row] = []
        for i, name in enumerate(names):
            values = [s[f"box/{name}"] for s in seeds]
            out[row].append(BoxGap(name, band(values), float(per_box[i][0]), band(values, level=family_level)))
    return out


def learning_curves(
    results: Any, cells: dict[str, str], published: dict[str, Any], rows: list[str]
) -> dict[str, dict[str, Any]]:
    """Per row whose published file has a ``curve``: the paper's ``[games, mean]`` points and each of our
    seeds' evaluations during training (finished or not), ``{seed: [(games, mean), ...]}``; and
    ``matched``: our evaluations at games where the paper's curve has a point, ``(games, ours minus the
    paper's)``."""
    evals = results[(results["stage"] == "eval") & results["cell"].isin(cells)]
    out = {}
    for row in rows:
        curve = published["rows"][row].get("curve")
        if not curve:
            continue
        paper = {int(g): float(m) for g, m in curve}
        seeds: dict[int, list[tuple[float, float]]] = {}
        for _, r in evals[evals["cell"].map(cells) == row].sort_values(["seed", "games"]).iterrows():
            seeds.setdefault(int(r["seed"]), []).append((float(r["games"]), float(r["mean_score"])))
        matched = [(g, m - paper[int(g)]) for points in seeds.values() for g, m in points if int(g) in paper]
        out[row] = {"paper": [(float(g), m) for g, m in paper.items()], "ours": seeds, "matched": matched}
    return out


def fill_turns(ours: list[dict[str, Any]], published: dict[str, Any], rows: list[str]) -> dict[str, list[tuple]]:
    """Per row whose published file has ``fill_turn``: for each box, our seeds' mean of their median
    fill turn (NaN without seeds) and the paper's median, both counting the first turn as 1."""
    out = {}
    for row in rows:
        paper = published["rows"][row].get("fill_turn")
        if paper is None:
            continue
        seeds = [line for line in ours if line["row"] == row]
        out[row] = [
            (name, float(np.mean([s[f"fill/{name}"] for s in seeds])) if seeds else math.nan, float(paper[i]))
            for i, name in enumerate(BOX_NAMES)
        ]
    return out


@dataclass(frozen=True)
class TurnTop:
    """One turn of a row: the paper's three most used boxes there, each with the paper's share of games
    and our seeds' mean share, and our own three most used (ties in the boxes' order)."""

    turn: int
    paper: list[tuple[str, float, float]]
    ours: list[tuple[str, float]]


@dataclass(frozen=True)
class RowTurns:
    """A row's turns (``TurnTop`` each) over our ``seeds``. Over the log's entries: ``seed_to_log``, how
    far one seed of ours lies from the log (the mean |seed - log| share, averaged over our seeds), and
    ``between_seeds``, how far our seeds lie from each other (the mean |seed - seed| share over every
    pair; NaN with one seed): the yardstick for the first, as two draws of the same recipe; and
    ``optimal_to_log``, how far the optimal player lies from the log on our seeds' own games (averaged
    over the seeds whose evaluation played it with the shares; NaN where none did): a player that
    plays another schedule."""

    seeds: int
    turns: list[TurnTop]
    seed_to_log: float
    between_seeds: float
    optimal_to_log: float = math.nan


def turn_tops(ours: list[dict[str, Any]], published: dict[str, Any], rows: list[str]) -> dict[str, RowTurns]:
    """Per row whose published file has ``top_by_turn`` and with a seed of ours that has the shares, its
    ``RowTurns``, the turns counted from 1 (as the published logs count)."""
    out = {}
    for row in rows:
        paper = published["rows"][row].get("top_by_turn")
        seeds = [line for line in ours if line["row"] == row and f"{FILL_SHARE}/1/{BOX_NAMES[0]}" in line]
        if paper is None or not seeds:
            continue
        turns = []
        for turn, top in enumerate(paper, start=1):
            share = {b: float(np.mean([s[f"{FILL_SHARE}/{turn}/{b}"] for s in seeds])) for b in BOX_NAMES}
            mine = sorted(share.items(), key=lambda pair: -pair[1])[:3]
            turns.append(TurnTop(turn, [(b, float(p), share[b]) for b, p in top], mine))
        entries = [(f"{FILL_SHARE}/{turn}/{b}", p) for turn, top in enumerate(paper, start=1) for b, p in top]
        to_log = float(np.mean([np.mean([abs(s[k] - p) for k, p in entries]) for s in seeds]))
        pairs = [(a, b) for i, a in enumerate(seeds) for b in seeds[i + 1 :]]
        between = [float(np.mean([abs(a[k] - b[k]) for k, _ in entries])) for a, b in pairs]
        played = [s for s in seeds if all(f"optimal/{k}" in s for k, _ in entries)]
        optimal = [float(np.mean([abs(s[f"optimal/{k}"] - p) for k, p in entries])) for s in played]
        out[row] = RowTurns(len(seeds), turns, to_log, _mean_or_nan(between), _mean_or_nan(optimal))
    return out


def turn_agreement(turns: list[TurnTop]) -> tuple[float, float, int, int]:
    """How closely our seeds fill the boxes the paper's log lists: over its (turn, box) entries, the
    mean and median of |ours - the paper's| share, and how many of them are among our own three at
    that turn, of how many."""
    gaps = [abs(mine - theirs) for t in turns for _, theirs, mine in t.paper]
    ours = [{box for box, _ in t.ours} for t in turns]
    hits = sum(box in top for t, top in zip(turns, ours, strict=True) for box, _, _ in t.paper)
    return float(np.mean(gaps)), float(np.median(gaps)), hits, len(gaps)


def _mean_or_nan(values: list[float]) -> float:
    return float(np.mean(values)) if values else math.nan


def _missing(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def engine_check(results: Any, published: dict[str, Any]) -> dict[str, Any] | None:
    """Our optimal player's mean points per box and upper bonus, over the distinct game sets of the
    study's final evaluations (each seed's evaluation plays the optimal player on its games; two cells'
    seed 0 share theirs), beside the published DP player's (``dp_baseline``): per box ``(name, ours,
    theirs, z)``, ``z`` our mean less theirs over their standard error at our number of games (their
    variance). None without a baseline or an evaluation with the optimal player."""
    baseline = published.get("dp_baseline", {}).get("per_box")
    column = f"optimal/box_mean/{BOX_NAMES[0]}"
    if not baseline or column not in results:
        return None
    final = results[(results["stage"] == "final") & (results["status"] == "done") & results[column].notna()]
    games_sets = final.drop_duplicates(subset=["final_seed", "final_games"])
    games = float(games_sets["final_games"].sum())
    if not games:
        return None
    weights = games_sets["final_games"] / games
    ours = [float((games_sets[f"optimal/box_mean/{b}"] * weights).sum()) for b in BOX_NAMES]
    ours.append(UPPER_BONUS * float((games_sets["optimal/upper_bonus_rate"] * weights).sum()))
    rows = []
    for name, mine, (mean, var) in zip([*BOX_NAMES, "upper_bonus"], ours, baseline, strict=False):
        rows.append((name, mine, float(mean), (mine - mean) / math.sqrt(var / games) if var > 0 else math.nan))
    return {"games": int(games), "sets": len(games_sets), "boxes": rows}
