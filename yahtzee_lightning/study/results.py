"""A study folder read back into one tidy table (``OUT/results.csv``): a row per member and evaluation.

``stage`` ``eval`` rows are the evaluation history (every interval: games trained, mean score,
upper-bonus and Yahtzee rates, regret per game, single-turn score, head entropies, explained
variance); every member has one ``final`` row, with its ``status`` (done, failed with its
``error``, unfinished, or pending) and, when done, the final evaluation (mean, SD, SE, median,
rates, regret per game, decision and box, P(score >= n), per box: mean score, share as the first
box filled, median turn filled; the regret per game by box scored and by turn).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .hypothesis_file import REFERENCE_METRICS
from .model import Study, StudyError
from .records import LOG, PLAN, read_final, read_lines, read_record

TABLE = "results.csv"
#: The prefix of the columns ``fill_share/TURN/BOX``: the share of a member's final games that filled
#: BOX at TURN (1 = the first).
FILL_SHARE = "fill_share"
#: ``results.csv``'s sha256, in ``sha256sum`` format: a report drawn from the table alone (a committed
#: copy without run folders) refuses a table that was edited or damaged after ``study run`` wrote it.
TABLE_DIGEST = "results.sha256"


@dataclass
class Trial:
    """One Ray trial: a cell trained with one seed (or several, as ensemble members) in one folder."""

    experiment: str
    cell: str
    seeds: list[int]
    run_dir: str  # relative to the study folder
    #: Packed (``.packing``): the pack's trial, which trains these seeds as members of its ensemble,
    #: their indices there, and the settings each carries there (its seed and what differs in the pack).
    pack: str | None = None
    members: list[int] | None = None
    carries: list[dict[str, Any]] | None = None

    @property
    def name(self) -> str:
        return f"{self.cell}-s{'-'.join(map(str, self.seeds))}"


def load_plan(out: Path) -> tuple[Study, list[Trial]]:
    """The study and trials recorded in a study folder."""
    plan = Path(out) / PLAN
    if not plan.exists():
        raise StudyError(f"{out}: not a study folder (no {PLAN}); run `yahtzee-lightning study run FILE --out {out}`")
    data = read_plan(plan)
    try:
        return Study.from_json(data["study"]), [Trial(**t) for t in data["trials"]]
    except (KeyError, TypeError, ValueError) as e:
        raise StudyError(
            f"{plan}: not a study plan ({type(e).__name__}: {e}); restore it, or run the study again"
        ) from None


def read_plan(plan: Path) -> dict[str, Any]:
    """The record in a study folder's ``study.json``; a damaged or edited one is refused in one line."""
    if (data := read_record(plan, "refused")) is None:
        raise StudyError(f"{plan}: cannot be trusted (damaged or edited); restore it, or run the study again")
    return data


def _history(path: Path) -> list[dict[str, Any]]:
    """The evaluation lines of a run, the last one kept where a resumed run evaluated again."""
    rows: dict[tuple[int, float], dict[str, Any]] = {}
    for row in read_lines(path):  # a line cut short by a kill, damaged or edited: named and left out
        rows[(row.get("member", 0), row.get("eval/games", row.get("epoch")))] = row
    return [rows[k] for k in sorted(rows)]


def _eval_columns(row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in row.items():
        name = key.removeprefix("eval/").removeprefix("train/").removeprefix("loss_")
        out[name] = value
    return out


def final_columns(summary: dict[str, Any]) -> dict[str, Any]:
    """A final evaluation's summary (``evaluation.summarize``) as flat columns."""
    cols: dict[str, Any] = {
        "mean_score": summary["score"]["mean"],
        "sd": summary["score"]["sd"],
        "se": summary["score"]["se"],
        "median": summary["median"],
        "final_games": summary["games"],
    }
    for key in ("upper_bonus_rate", "yahtzee_rate", "yahtzee_bonus_rate", "share_at_least_250", "upper_bonus_mean"):
        cols[key] = summary[key]
    if "regret" in summary:
        r = summary["regret"]
        cols |= {"regret_per_game": r["per_game_mean"], "regret_keep": r["keep_mean"], "regret_box": r["box_mean"]}
        cols |= {f"regret_by_box/{box}": lost for box, lost in r.get("by_box", {}).items()}
        cols |= {f"regret_by_turn/{t + 1}": lost for t, lost in enumerate(r.get("by_turn", []))}
    cols |= {f"p_ge_{n}": p for n, p in summary["p_score_at_least"].items()}
    for box, s in summary["boxes"].items():
        cols |= {f"box_mean/{box}": s["mean"], f"first_box/{box}": s["first_box_share"]}
        cols[f"fill_turn/{box}"] = s["median_fill_turn"]
        if "zero_share" in s:  # evaluations from before it have none
            cols[f"box_zero/{box}"] = s["zero_share"]
        # the share of games filling the box at each turn (1 = the first); evaluations from before it have none
        cols |= {f"{FILL_SHARE}/{t + 1}/{box}": share for t, share in enumerate(s.get("fill_turn_share", ()))}
    return cols


def _member_records(record: dict[str, Any], seeds: list[int], index: list[int]) -> list[tuple[int, dict[str, Any]]]:
    """(seed, record) per member: one for a run, one per index of an ensemble's ``members`` (the
    trial's ``index``: its members' places in a packed ensemble)."""
    if "members" in record:  # the ensemble seam: members' final records, by index
        return [(seed, {**record, **record["members"][i]}) for seed, i in zip(seeds, index, strict=True)]
    return [(seeds[0], record)]


def collect(out: str | Path) -> pd.DataFrame:
    """Every member's history and final evaluation, from the run folders of a study folder."""
    out = Path(out)
    study, trials = load_plan(out)
    rows = []
    for t in trials:
        cell, run_dir = study.cells[t.cell], out / t.run_dir
        final_path, error_path = run_dir / "final.json", run_dir / "error.txt"
        history = _history(run_dir / "history.jsonl")
        record = read_final(final_path)
        status = "done" if record else "failed" if error_path.exists() else "unfinished" if history else "pending"
        error = error_path.read_text().strip() if status == "failed" else ""
        ident = {
            "experiment": t.experiment,
            "cell": t.cell,
            "run_dir": t.run_dir,
            "algorithm": cell.algorithm,
            "task": cell.task,
            "total_games": cell.total_games,
            "status": status,
            "error": error,
        }
        index = t.members or list(range(len(t.seeds)))  # each seed's member index in the run
        evals = {m: [_eval_columns(h) for h in history if h.get("member", 0) == index[m]] for m in range(len(t.seeds))}
        for member, seed in enumerate(t.seeds):
            rows += [{**ident, "seed": seed, "stage": "eval", **e} for e in evals[member]]
        if record is None:  # a member without a final evaluation: one row that says why
            rows += [{**ident, "seed": seed, "stage": "final"} for seed in t.seeds]
        for member, (seed, rec) in enumerate(_member_records(record, t.seeds, index) if record else []):
            last = evals[member][-1] if evals[member] else {}
            carried = {k: last.get(k, math.nan) for k in ("entropy_roll", "entropy_score", "explained_variance")}
            final = final_columns(rec["summary"]) if rec.get("summary") else {}
            settings = {f"setting/{k}": v for k, v in (rec.get("settings") or {}).items()}
            row = {**ident, "seed": seed, "stage": "final", "games": rec.get("games"), **carried, **settings, **final}
            row |= collapse(evals[member], cell.task == "full_game") | {"final_seed": rec.get("final_seed")}
            if rec.get("optimal"):  # the optimal player on this member's own final games: paired per seed
                row |= {f"optimal/{k}": v for k, v in reference_columns(rec["optimal"]).items()}
            row |= {k: rec[k] for k in ("node", "host") if k in rec}  # where it finished (a study on a cluster)
            rows.append(row | {"single_turn_score": rec.get("single_turn_score")})
    return pd.DataFrame(rows)


#: A member that collapsed, at its last evaluations: its value head explains no more of the returns'
#: variance than ``DEAD_VALUE``; or its keep head's entropy is this close to its maximum, ln 32 (random
#: rerolls); or its keep head narrowed onto a few patterns, the three most used keeps taking at least
#: ``NARROW_KEEP`` of the rolling decisions (on 1,000 games: the optimal player 0.40, greedy 0.29, the
#: shipped A2C and REINFORCE agents 0.41 and 0.48); or, in the full game, its score fell to at most
#: ``FALLEN`` of its best evaluation so far (in every study so far no run that did not collapse fell
#: below 0.93 of its best; the paper's A2C at its own settings fell to 0.29-0.68); or a head's logits
#: saturated, its largest absolute logit at least ``SATURATED_LOGIT`` (healthy members of the faithful
#: study: 54-243; every collapsed one: 2,800-24,000, a policy that plays one fixed action whatever
#: the dice and can no longer learn from its own samples).
DEAD_VALUE = 0.01
DEAD_KEEP = 0.99 * math.log(32)
NARROW_KEEP = 0.9
FALLEN = 0.8
SATURATED_LOGIT = 1000.0
COLLAPSE_WINDOW = 2  # the last evaluations a collapse must hold at


def collapse(evals: list[dict[str, Any]], full_game: bool = True) -> dict[str, Any]:
    """Whether a member collapsed: at each of its last ``COLLAPSE_WINDOW`` evaluations its value head
    was dead, its keep head random or narrowed onto three keeps, a head's logits saturated, or
    (``full_game``: the score is what it trains) its score had fallen from its best. ``collapse``
    names the sign(s), ``collapsed_at`` the games trained at the first evaluation from which it held
    to the end (empty where it did not)."""
    rows = sorted((e for e in evals if e.get("games") is not None), key=lambda e: e["games"])
    best = list(itertools.accumulate((_number(e.get("mean_score"), -math.inf) for e in rows), max))

    def dead(i: int) -> set[str]:
        e, out = rows[i], set()
        if _number(e.get("explained_variance")) <= DEAD_VALUE:
            out.add("value head")
        if _number(e.get("entropy_roll"), -math.inf) >= DEAD_KEEP:
            out.add("random keeps")
        if _number(e.get("top3_keep_share"), -math.inf) >= NARROW_KEEP:
            out.add("three keeps")
        logits = max(_number(e.get("max_logit_keep"), -math.inf), _number(e.get("max_logit_box"), -math.inf))
        if logits >= SATURATED_LOGIT:
            out.add("saturated logits")
        if full_game and best[i] > 0 and _number(e.get("mean_score")) <= FALLEN * best[i]:
            out.add("score fell")
        return out

    if len(rows) < COLLAPSE_WINDOW:
        return {"collapsed": False, "collapse": "", "collapsed_at": math.nan}
    heads = set.intersection(*(dead(i) for i in range(len(rows) - COLLAPSE_WINDOW, len(rows))))
    if not heads:
        return {"collapsed": False, "collapse": "", "collapsed_at": math.nan}
    start = len(rows) - 1
    while start > 0 and heads & dead(start - 1):
        start -= 1
    *most, last = sorted(heads)
    how = f"{', '.join(most)} and {last}" if most else last
    return {"collapsed": True, "collapse": how, "collapsed_at": rows[start]["games"]}


def _number(value: Any, missing: float = math.inf) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return missing
    return x if math.isfinite(x) else missing


def reference_columns(summary: dict[str, Any]) -> dict[str, Any]:
    """The quantities a reference player has on a member's games (a hypothesis may pair with them)."""
    return {k: v for k, v in final_columns(summary).items() if k.partition("/")[0] in REFERENCE_METRICS}


def write_table(out: str | Path) -> pd.DataFrame:
    """Collect the study folder's results and write them to ``OUT/results.csv``."""
    table = collect(out)
    save_table(table, Path(out))
    return table


def save_table(table: pd.DataFrame, out: Path) -> None:
    """``table`` as ``OUT/results.csv``, with its sha256 beside it (``OUT/results.sha256``)."""
    path = out / TABLE
    table.to_csv(path, index=False)
    (out / TABLE_DIGEST).write_text(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {TABLE}\n")


def load_table(out: str | Path) -> pd.DataFrame:
    """The results of a study folder: collected afresh from its run folders (and written to
    ``results.csv``), or, where the folder holds no run folders (a report's committed copy:
    ``study.json``, ``results.csv``, ``reference.json``), read back from ``results.csv``."""
    out = Path(out)
    if not (out / "runs").is_dir() and (out / TABLE).exists():
        check_table(out / TABLE)
        return pd.read_csv(out / TABLE)
    return write_table(out)


def check_table(path: Path) -> None:
    """Refuse a ``results.csv`` that does not match the sha256 written beside it; warn where there is
    none (a table written before digests)."""
    digest = path.with_name(TABLE_DIGEST)
    if not digest.exists():
        LOG.warning("warning: %s: carries no sha256 (written before digests; no %s beside it)", path, TABLE_DIGEST)
        return
    expected = digest.read_text().split()[:1]
    if expected != [hashlib.sha256(path.read_bytes()).hexdigest()]:
        raise StudyError(
            f"{path}: does not match its sha256 in {TABLE_DIGEST} (damaged or edited); restore it, or "
            "report from the study's run folders"
        )


def optimal_summary(out: str | Path) -> dict[str, Any] | None:
    """The exact optimum's summary from a finished member's final evaluation (same protocol, games of its seed)."""
    for path in sorted(Path(out).glob("runs/**/final.json")):
        record = read_final(path) or {}
        if record.get("optimal"):
            return {**record["optimal"], "final_seed": record.get("final_seed")}
    return None
