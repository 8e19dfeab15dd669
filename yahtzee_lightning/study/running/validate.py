"""Settings that would fail every cell at run time, found by ``study check`` (and before ``study run``
starts anything): counts of games below what training and evaluation need, seeds out of range."""

from __future__ import annotations

from ..model import Study, StudyError

SEED_MAX = 2**32 - 1  # numpy's and torch's seeds


def check_settings(study: Study) -> None:
    """Raise ``StudyError`` (one line) naming every cell or ablation whose settings cannot run."""
    problems = []
    for cell in study.cells.values():
        if cell.total_games < 1:
            problems.append(f"{cell.id}: total_games must be >= 1, got {cell.total_games}")
        for key in ("evaluations", "eval_games", "final_eval_games"):
            if getattr(cell, key) < 0:
                problems.append(f"{cell.id}: {key} must be >= 0, got {getattr(cell, key)}")
        if cell.evaluations > 0 and cell.eval_games < 1:
            problems.append(f"{cell.id}: evaluations {cell.evaluations} need eval_games >= 1, got {cell.eval_games}")
    for ab in study.ablations.values():
        if not ab.seeds:
            problems.append(f"ablation {ab.name}: no seeds")
        bad = [s for s in ab.seeds if not isinstance(s, int) or isinstance(s, bool) or not 0 <= s <= SEED_MAX]
        if bad:
            problems.append(f"ablation {ab.name}: seeds must be integers in 0..2**32-1, got {bad}")
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise StudyError(f"{study.path}: " + "; ".join(problems[:3]) + more)
