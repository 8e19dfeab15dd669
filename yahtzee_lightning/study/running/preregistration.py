"""A study's hypotheses are written down before its runs: a folder that has run keeps them as they were.

``study.json`` records the study as its first ``study run`` expanded it, hypotheses included;
``study run`` (resuming) and ``study check --out`` compare the file's hypotheses with those.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..model import StudyError
from ..records import PLAN, read_record


def check_preregistered(study: Any, out: Path) -> None:
    """Refuse, in one line, a study file whose hypotheses differ from those its folder ``out``
    recorded at its first run (``study.json``): a hypothesis is written down before the runs, and a
    changed, added or removed one after them is no longer a test of a prediction."""
    plan = Path(out) / PLAN
    if not plan.exists():
        return
    record = read_record(plan, "refused")
    if record is None:
        raise StudyError(f"{plan}: cannot be trusted (damaged or edited); restore it, or run the study again")
    old = record["study"]
    if old.get("name") != study.name:
        return  # another study's folder: refused as such where the folder is used
    before = old.get("hypotheses", {})
    now = {k: asdict(h) for k, h in study.hypotheses.items()}
    for hid in sorted(set(before) | set(now)):
        if hid not in now:
            what = "is no longer in the file"
        elif hid not in before:
            what = "was not in it (a hypothesis added after the runs started is exploratory, not a test)"
        elif before[hid] != now[hid]:
            field = next(k for k in now[hid] if before[hid].get(k) != now[hid][k])
            what = f"changed its {field} ({before[hid].get(field)!r} -> {now[hid][field]!r})"
        else:
            continue
        raise StudyError(
            f"{study.path}: hypotheses.{hid} {what}: {plan} pre-registered the hypotheses before its first run; "
            "keep them as they were, or start a new study folder"
        )
