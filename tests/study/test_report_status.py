"""`study report` at any time: right after a study starts, before any run has finished."""

import json
from pathlib import Path

from yahtzee_lightning.study.drawing.report import write_report
from yahtzee_lightning.study.running.runner import prepare_folder
from yahtzee_lightning.study.spec import load_study

SMOKE = Path(__file__).resolve().parents[2] / "conf" / "study" / "smoke.yaml"


def test_a_report_before_any_run_finished_names_every_cell_pending_and_draws_nothing(tmp_path):
    study = load_study(SMOKE)
    prepare_folder(study, tmp_path, force=False)  # what `study run` writes before its first trial starts
    index = write_report(tmp_path).read_text()
    pending = [line for line in index.splitlines() if line.startswith("* pending: ")]
    assert len(pending) == sum(len(ab.cells) for ab in study.ablations.values()) > 1  # a shared cell under each
    assert "No member has finished yet" in index
    assert json.loads((tmp_path / "report" / "exhibits.json").read_text()) == {}
    assert sorted(p.name for p in (tmp_path / "report").iterdir()) == ["exhibits.json", "index.md", "manifest.json"]
