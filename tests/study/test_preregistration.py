"""Hypotheses are written down before the runs: a changed one is refused; an earlier study's cell (an
earlier implementation's runs) can be the second term; a claim about the paper's scale is not
contradicted by a smaller cell."""

import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from yahtzee_lightning.commands.study import main
from yahtzee_lightning.study.judging import hypotheses
from yahtzee_lightning.study.model import StudyError
from yahtzee_lightning.study.results import TABLE
from yahtzee_lightning.study.running.runner import prepare_folder
from yahtzee_lightning.study.spec import load_study

ROOT = Path(__file__).resolve().parents[2]

STUDY = """
name: {name}
base: {root}/conf/a2c.yaml
seeds: [0, 1, 2]
profiles:
  tiny:
    set: {{model.init_args.total_games: 100, model.init_args.d_h: 16, model.init_args.n_layers: 1}}
ablations:
  algorithm:
    axes:
      algorithm:
        a2c: {{config: {root}/conf/a2c.yaml}}
        ppo: {{config: {root}/conf/ppo.yaml}}
exhibits: {{F2: algorithm}}
hypotheses:
{hypotheses}
"""
H1 = """  H1:
    claim: A2C beats PPO
    ablation: algorithm
    metric: mean_score
    compare: [a2c, ppo]
    direction: {direction}
"""


def _study(tmp_path: Path, name: str, hyps: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(STUDY.format(name=name, root=ROOT, hypotheses=hyps))
    return path


def test_a_hypothesis_changed_after_the_first_run_is_refused_in_one_line(tmp_path, capsys):
    path = _study(tmp_path, "pre", H1.format(direction="greater"))
    out = tmp_path / "out"
    prepare_folder(load_study(path), out, force=False)  # what `study run` records before its first trial
    assert main(["check", str(path), "--out", str(out)]) == 0
    path.write_text(path.read_text().replace("direction: greater", "direction: less"))
    capsys.readouterr()
    assert main(["check", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "hypotheses.H1 changed its direction ('greater' -> 'less')" in err and "pre-registered" in err
    with pytest.raises(StudyError, match="hypotheses.H1 changed its direction"):
        prepare_folder(load_study(path), out, force=False)  # `study run` refuses it too
    path.write_text(
        path.read_text().replace("direction: less", "direction: greater")
        + H1.replace("H1", "H2").format(direction="less")
    )
    with pytest.raises(StudyError, match="hypotheses.H2 was not in it"):
        prepare_folder(load_study(path), out, force=False)


def _earlier(tmp_path: Path, scores: list[float]) -> Path:
    """An earlier study folder: its plan and its committed results table (no run folders)."""
    folder = tmp_path / "earlier"
    study = load_study(_study(tmp_path, "old", H1.format(direction="greater")))
    prepare_folder(study, folder, force=False)
    cell = next(c for c, labels in study.ablations["algorithm"].cells if labels["algorithm"] == "a2c")
    rows = [
        {"experiment": "pool", "cell": cell, "stage": "final", "status": "done", "seed": s, "mean_score": v}
        for s, v in enumerate(scores)
    ]
    pd.DataFrame(rows).to_csv(folder / TABLE, index=False)
    return folder


def test_an_earlier_studys_cell_is_compared_over_seeds(tmp_path, monkeypatch):
    earlier = _earlier(tmp_path, [100.0, 104.0, 98.0])
    monkeypatch.chdir(tmp_path)
    hyp = """  L1:
    claim: the new learner beats the old one
    ablation: algorithm
    metric: mean_score
    compare: [a2c, {study: earlier, cell: a2c}]
    direction: greater
"""
    study = load_study(_study(tmp_path, "new", hyp))
    h = study.hypotheses["L1"]
    assert h.against() == "earlier" and h.second() == "earlier: a2c"
    cell = next(c for c, labels in study.ablations["algorithm"].cells if labels["algorithm"] == "a2c")
    table = pd.DataFrame(
        [
            {"cell": cell, "stage": "final", "status": "done", "seed": s, "mean_score": v}
            for s, v in enumerate([200.0, 205.0, 202.0])
        ]
    )
    ctx = SimpleNamespace(out=tmp_path / "new_out", study=study, table=table)
    (judged,) = hypotheses.judge(ctx)
    assert judged.comparison.test.startswith("Welch") and judged.comparison.n == "3 vs 3 seeds"
    assert judged.comparison.effect == pytest.approx(202.3333 - 100.6667, abs=1e-3)
    # confirmed, and said at which scale (a 16 x 1 network, 100 games: not the paper's agent)
    assert judged.verdict == f"{hypotheses.CONFIRMED} at this scale (16 x 1, 100 games)"
    # A cell or a folder the earlier study lacks: one line, before anything runs.
    with pytest.raises(StudyError, match=r"L1\.compare\[1\]: no cell 'sarsa' in earlier; its cells: a2c, ppo"):
        load_study(_study(tmp_path, "bad", hyp.replace("cell: a2c", "cell: sarsa")))
    shutil.rmtree(earlier)
    with pytest.raises(StudyError, match=r"L1\.compare\[1\]: no study folder 'earlier'"):
        load_study(_study(tmp_path, "gone", hyp))


def test_a_claim_about_the_papers_agent_is_not_contradicted_by_a_smaller_one(tmp_path):
    hyp = """  H11:
    claim: A2C reaches a median of 241.78
    ablation: algorithm
    metric: median
    compare: [a2c, 241.78]
    direction: greater
    scale: paper
"""
    study = load_study(_study(tmp_path, "scale", hyp))
    cell = next(c for c, labels in study.ablations["algorithm"].cells if labels["algorithm"] == "a2c")
    rows = [
        {"cell": cell, "stage": "final", "status": "done", "seed": s, "median": v}
        for s, v in enumerate([200.0, 201.0, 199.5])
    ]
    ctx = SimpleNamespace(out=tmp_path, study=study, table=pd.DataFrame(rows))
    (judged,) = hypotheses.judge(ctx)
    assert judged.verdict == hypotheses.NOT_TESTABLE  # 16 x 1 at 100 games: far below it
    study.cells[cell].overrides.update({"model.init_args.d_h": 600, "model.init_args.n_layers": 3})
    study.cells[cell].total_games = 1_000_000
    (judged,) = hypotheses.judge(ctx)
    assert judged.verdict == hypotheses.CONTRADICTED  # at the paper's scale the same result contradicts it
    with pytest.raises(StudyError, match=r"hypotheses\.H11\.scale: must be one of any, paper"):
        load_study(_study(tmp_path, "badscale", hyp.replace("scale: paper", "scale: huge")))
