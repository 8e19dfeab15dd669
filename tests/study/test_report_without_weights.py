"""Weights live on the Hub, not in git: a finished study folder without them (as the repository keeps
it) still rebuilds every exhibit of its report from its records, the same as with them."""

import json
import shutil

from yahtzee_lightning.cli import main


def test_a_study_whose_weights_were_removed_reports_every_exhibit_as_before(finished_study, tmp_path, capsys):
    copy = tmp_path / "study"
    shutil.copytree(finished_study, copy)
    weights = [p for p in copy.rglob("*") if p.suffix in (".ckpt", ".safetensors")]
    assert weights and all("checkpoints" in p.parts for p in weights)
    for p in weights:
        p.unlink()
    shutil.rmtree(copy / "report")
    assert main(["study", "report", str(copy)]) == 0, capsys.readouterr().err
    before, after = finished_study / "report", copy / "report"
    exhibits = json.loads((before / "exhibits.json").read_text())
    assert "T1" in exhibits and json.loads((after / "exhibits.json").read_text()) == exhibits
    assert sorted(p.name for p in after.iterdir()) == sorted(p.name for p in before.iterdir())
    for p in before.glob("*.md"):  # every table and the index: the same text, T1's games played again too
        assert (after / p.name).read_text() == p.read_text(), p.name
    assert "no weights" not in (after / "T1.md").read_text()  # from fresh.json, the record of that play
    assert not list(copy.rglob("*.ckpt"))  # nothing was trained or fetched again
