"""A committed study's cells keep their ids: each is a hash of its composed config (base recipe,
settings, callbacks), and a change to the recipes or the composition that alters it would make
``study run`` train finished runs again and strand the committed ones. Each committed study folder's
``study.json`` against its study file expanded now: every recorded cell is still there, under the
same id (cells added since, a new ablation, are allowed, and so is a change to a cell none of whose
runs had started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from yahtzee_lightning.study.results import load_plan
from yahtzee_lightning.study.spec import load_study

ROOT = Path(__file__).resolve().parents[2]
#: (docs/study/faithful is left out: its runs are the earlier learner's, trained from recipes that
#: have changed since, kept as they were and never resumed.)
COMMITTED = [
    ("conf/study/paper_faithful_rerun.yaml", "cpu", "docs/study/faithful_rerun"),
    ("conf/study/coverage.yaml", "long", "docs/study/coverage"),
    ("conf/study/paper_code.yaml", "paper", "docs/study/paper_code"),
]


@pytest.mark.parametrize(("file", "profile", "folder"), COMMITTED, ids=[c[2].rsplit("/", 1)[1] for c in COMMITTED])
def test_a_committed_studys_cells_keep_their_ids(file, profile, folder):
    recorded, trials = load_plan(ROOT / folder)
    study = load_study(str(ROOT / file), profile)
    # A cell added since (a new ablation) is new work, not a loss; so is one changed before any of its
    # runs started (its plan recorded, no run folder committed): only a cell with runs can be stranded.
    started = {t.cell for t in trials if (ROOT / folder / t.run_dir).exists()}
    stranded = (set(recorded.cells) - set(study.cells)) & started
    assert not stranded, f"{folder}: cells with runs there no longer in {file}: {sorted(stranded)}"
    assert started, f"{folder}: no run folder of its plan's trials found: the check would hold nothing"
