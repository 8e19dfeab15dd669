"""``study status DIR``: where a study folder stands, run by run, read without touching it.

A long study (the paper's table: some 100 core-hours over many sessions) is resumed and stopped
many times; this answers "what is done, what is under way and how far, what is left" from the
folder alone: each run's state, games trained of its budget, its last evaluation, its final
score, and for a run under way the age of its newest checkpoint and its pace; and for the whole
folder, the training time left at the paces its own runs of each recipe have shown.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..game.rules import episode_unit
from ..manifest import folder_holder
from .records import SESSIONS, read_lines
from .results import collect, load_plan

#: The words for ``collect``'s states: a run with evaluations but no final one may be running now or
#: stopped; the age of its checkpoint tells which.
STATES = {"done": "done", "unfinished": "under way", "pending": "not started", "failed": "failed"}


def _cell_names(study: Any) -> dict[str, str]:
    """Each cell by the first ablation that lists it and its values there (``table: a2c_250k``)."""
    names: dict[str, str] = {}
    for ablation in study.ablations.values():
        for cell_id, labels in ablation.cells:
            names.setdefault(cell_id, f"{ablation.name}: {', '.join(map(str, labels.values())) or cell_id}")
    return names


def _pace(evals: Any) -> float | None:
    """Games a second between the last two evaluations, where one fit wrote both (None where they
    lie either side of a resume, or there are fewer than two). Which fit wrote a line: its ``fit``
    (from 2026-11-30), else its Ray node (a new one each ``study run``), else a clock that went back."""
    if len(evals) < 2 or "wall_clock_s" not in evals:
        return None
    last = evals.tail(2)
    if any(key in last and last[key].nunique(dropna=False) > 1 for key in ("fit", "node")):
        return None
    (g0, t0), (g1, t1) = last[["games", "wall_clock_s"]].itertuples(index=False)
    return (g1 - g0) / (t1 - t0) if t1 > t0 and g1 > g0 else None


def _fit_paces(evals: Any) -> list[float]:
    """Games a second of each fit in ``evals`` (sorted by games): from its first line to its last,
    and the run's first fit from its start (no games, its clock at zero). A line's fit: its ``fit``,
    else its Ray node, else the stretch of a clock that did not go back."""
    if not len(evals) or "wall_clock_s" not in evals:
        return []
    fit = (evals["wall_clock_s"].diff() < 0).cumsum().map("clock {}".format)
    for key in ("node", "fit"):  # the most specific last: it wins where present
        if key in evals:
            fit = evals[key].where(evals[key].notna(), fit)
    paces = []
    for i, (_, lines) in enumerate(evals.groupby(fit, sort=False)):
        games, seconds = lines["games"].to_numpy(float), lines["wall_clock_s"].to_numpy(float)
        start = (0.0, 0.0) if i == 0 else (games[0], seconds[0])
        if games[-1] > start[0] and seconds[-1] > start[1]:
            paces.append((games[-1] - start[0]) / (seconds[-1] - start[1]))
    return paces


@dataclass
class _Left:
    """A run not done: its trial (the seeds it trains at once), recipe, games left, own pace."""

    trial: str
    recipe: str
    games: int
    pace: float | None
    under_way: bool


def _left_line(left: list[_Left], paces: dict[str, float], at_once: int) -> str | None:
    """The training the runs not done still need: one core's hours, each run at its own pace where it
    has one, else at the newest pace of its recipe (base config) in this folder: the last fit of the
    last run of it in the plan's order, the nearest in time to what runs next (machines change
    between sessions; an older pace may be another machine's). A trial's seeds train at once, so a
    trial counts for its slowest. Then the wall clock with ``at_once`` trials at a time (the runs
    under way first, the others in the plan's order, each on the first slot that frees)."""
    if not left:
        return None
    trials: dict[str, list[float | None]] = {}
    under_way: set[str] = set()
    for run in left:
        pace = run.pace or paces.get(run.recipe)
        trials.setdefault(run.trial, []).append(run.games / pace if pace else None)
        if run.under_way:
            under_way.add(run.trial)
    measured = {t: max(s) for t, s in trials.items() if None not in s}
    unmeasured = sum(len(s) for s in trials.values() if None in s)
    slots = [0.0] * max(at_once, 1)
    for t in sorted(measured, key=lambda t: t not in under_way):  # stable: the plan's order otherwise
        slots[slots.index(min(slots))] += measured[t]
    line = (
        f"left: about {_span(sum(measured.values()))} of training for one core, at each recipe's newest pace "
        f"here; about {_span(max(slots))} of wall clock at {at_once} at once"
    )
    if unmeasured:
        line += f" ({unmeasured} run{'s' if unmeasured > 1 else ''} of a recipe with no pace yet not counted)"
    return line


def _at_once(out: Path) -> int:
    """Trials at a time in the folder's latest ``study run`` (its CPUs: one trial a CPU), else one."""
    sessions = read_lines(out / SESSIONS)
    cpus = sessions[-1].get("cpus") if sessions else None
    return cpus if isinstance(cpus, int) and cpus >= 1 else 1


def _span(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def status_lines(out: str | Path, now: float | None = None) -> list[str]:
    """The folder's runs, one line each, under a line that counts them."""
    out = Path(out)
    study, trials = load_plan(out)
    results = collect(out)
    names = _cell_names(study)
    now = time.time() if now is None else now
    lines, counts = [], dict.fromkeys(STATES.values(), 0)
    paces: dict[str, float] = {}  # each recipe's newest games a second: its last run's last fit
    left: list[_Left] = []  # each run not done
    for t in trials:
        base = study.cells[t.cell].base if t.cell in study.cells else t.cell
        for seed in t.seeds:
            mine = results[(results["cell"] == t.cell) & (results["seed"] == seed)]
            final = mine[mine["stage"] == "final"].iloc[0]
            evals = mine[mine["stage"] == "eval"].sort_values("games") if "games" in mine else mine.iloc[:0]
            state = STATES[final["status"]]
            # a run whose fit holds its folder but has written no evaluation yet has started all the same
            holder = folder_holder(out / t.run_dir / "checkpoints") if state == "not started" else None
            state = "under way" if holder else state
            counts[state] += 1
            budget = int(final["total_games"])
            games = final.get("games") if state == "done" else (evals["games"].iloc[-1] if len(evals) else 0)
            games = 0 if games is None or (isinstance(games, float) and math.isnan(games)) else int(games)
            unit = episode_unit(final["task"])
            line = f"{names.get(t.cell, t.cell)}, seed {seed} ({t.cell}): {state}, {games:,} of {budget:,} {unit}"
            if fits := _fit_paces(evals):
                paces[base] = fits[-1]
            if len(evals):
                line += f", last evaluation {evals['mean_score'].iloc[-1]:.1f}"
            if state == "done":
                line += f", final {final['mean_score']:.2f} over {int(final['final_games']):,} games"
            elif holder:
                who = f"pid {holder['pid']} on {holder['host']} since {holder['since']}"
                line += f", before its first evaluation ({who})"
                left.append(_Left(t.run_dir, base, budget, None, True))
            elif state == "under way":
                ckpt = out / t.run_dir / "checkpoints" / "last.ckpt"
                if ckpt.exists():
                    line += f", checkpoint {_span(now - ckpt.stat().st_mtime)} ago"
                pace = _pace(evals)
                if pace:
                    line += f", {pace:.3g} {unit}/s: about {_span((budget - games) / pace)} of training left"
                left.append(_Left(t.run_dir, base, budget - games, pace, True))
            elif state == "not started":
                left.append(_Left(t.run_dir, base, budget, None, False))
            elif state == "failed":
                line += f": {final['error']}"
            lines.append(line)
    total = sum(counts.values())
    head = f"{study.name}: {counts['done']} of {total} runs done, " + ", ".join(
        f"{n} {state}" for state, n in counts.items() if n and state != "done"
    )
    total_left = _left_line(left, paces, _at_once(out))
    return [head.rstrip(", "), *([total_left] if total_left else []), *("  " + line for line in lines)]
