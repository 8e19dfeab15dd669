"""A study folder is its own and the user's: ``study run --force`` deletes only what the study's
sessions wrote (a killed one's too), every file the user put in any of its folders stays, named in a
line; one session writes into a folder at a time."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from yahtzee_lightning.manifest import Manifest
from yahtzee_lightning.study import ownership
from yahtzee_lightning.study.model import StudyError
from yahtzee_lightning.study.running import runner
from yahtzee_lightning.study.spec import load_study

ROOT = Path(__file__).resolve().parents[2]

OURS = [
    "runs/c0/seed0/final.json",
    "runs/c0/seed0/history.jsonl",
    "runs/c0/seed0/checkpoints/last.ckpt",
    "runs/c0/seed0/lightning_logs/version_0/metrics.csv",
    "ray/cells-1234/experiment_state.json",
    "ray/cells-1234/c0-s0/result.json",
    "results.csv",
    "sessions.jsonl",
]
MINE = [
    "notes.txt",
    "runs/README_mine.txt",
    "runs/c0/mine.txt",
    "runs/c0/seed0/mine.txt",
    "runs/c0/seed0/checkpoints/mine.txt",
    "runs/c0/seed0/lightning_logs/mine.txt",
    "ray/mine/keep.txt",
    "ray/cells-1234/mine.txt",
    "report/my_notes.md",
]


def _study(tmp_path: Path):
    spec = {
        "name": "s",
        "base": str(ROOT / "conf" / "a2c_cpu.yaml"),
        "seeds": [0],
        "profiles": {"smoke": {"set": {"model.init_args.total_games": 128}}},
        "ablations": {"width": {"axes": {"model.init_args.d_h": [8]}}},
        "exhibits": {"F7": "width"},
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(spec))
    return load_study(path)


def _session(writes: list[str], killed: bool = False):
    """A stand-in for the trials of a session (Ray, Lightning, the trial): files written into the folder."""

    def run(study, out, address, cpus, force, command, retries):
        runner.prepare_folder(study, out, force)
        for name in writes:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_text(f"written by a session: {name}")
        if killed:  # the process dies here: nothing after this line runs, its manifest's session stays open
            ownership._SESSION.beat(skip=[ownership.REPORT], every_s=0)
            raise KeyboardInterrupt
        return 0

    return run


def _plant(out: Path) -> None:
    for name in MINE:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text("mine")
        later = time.time() + 30  # the user's files come later than the session's last heartbeat
        os.utime(out / name, (later, later))


@pytest.mark.parametrize("killed", [False, True])
def test_force_deletes_only_what_the_study_wrote(tmp_path, monkeypatch, capsys, killed):
    study, out = _study(tmp_path), tmp_path / "out"
    monkeypatch.setattr(runner, "_run_study", _session(OURS, killed))
    if killed:
        monkeypatch.setattr(Manifest, "end_session", lambda self, skip=(): None)  # killed: no end
        with pytest.raises(KeyboardInterrupt):
            runner.run_study(study, out)
        monkeypatch.undo()
    else:
        assert runner.run_study(study, out) == 0
    monkeypatch.setattr(runner, "_run_study", _session([]))
    # a report, and its caches in the study folder
    (out / "report").mkdir(exist_ok=True)
    for name in ("report/index.md", "report/F7.png", "fresh.json", "reference.json"):
        (out / name).write_text("report")
    Manifest.read(out / "report").add(["index.md", "F7.png"])
    Manifest.read(out).add(["fresh.json", "reference.json"])
    _plant(out)
    capsys.readouterr()
    assert runner.run_study(study, out, force=True) == 0
    err = capsys.readouterr().err
    for name in MINE:
        assert (out / name).read_text() == "mine", name
        assert f"kept {out / name}" in err, name
    for name in [*OURS, "report/index.md", "report/F7.png", "fresh.json", "reference.json"]:
        assert not (out / name).exists(), name
    assert not (out / "ray" / "cells-1234" / "c0-s0").exists()  # a folder of ours left empty goes too
    assert json.loads((out / "study.json").read_text())["study"]["name"] == "s"


def test_what_a_trial_wrote_after_its_study_was_killed_is_still_proven_by_its_run_folder(tmp_path, capsys):
    """A study's driver killed outright sweeps nothing more, while its trials may write on: the run
    folder's own manifests (the trial's records, the checkpoint callback's files) prove those."""
    study, out = _study(tmp_path), tmp_path / "out"
    runner.prepare_folder(study, out, force=False)
    run = out / "runs" / "c0" / "seed0"
    for name in ("final.json", "history.jsonl", "checkpoints/last.ckpt"):
        _plant(out)  # the user's files, in every folder
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_text("written by the trial")
    Manifest.read(run).add(["final.json", "history.jsonl"])  # as run_trial records them
    Manifest.read(run / "checkpoints").add(["last.ckpt"])  # as RunCheckpoint records its files
    (run / "checkpoints" / ".yahtzee-lightning.lock").write_text("")
    runner.prepare_folder(study, out, force=True)
    assert not [p for p in run.rglob("*") if p.name != "mine.txt" and p.is_file()]
    for name in MINE:
        assert (out / name).read_text() == "mine", name


def test_force_on_a_study_written_before_manifests_deletes_nothing(tmp_path):
    study, out = _study(tmp_path), tmp_path / "out"
    runner.prepare_folder(study, out, force=False)
    (out / "manifest.json").unlink()
    (out / "runs").mkdir()
    (out / "runs" / "final.json").write_text("old")
    with pytest.raises(StudyError, match="written before manifests or edited since.*nothing deleted"):
        runner.prepare_folder(study, out, force=True)
    assert (out / "runs" / "final.json").read_text() == "old"


HOLD = """
import sys, time
from yahtzee_lightning.manifest import folder_lock

with folder_lock(sys.argv[1], "yahtzee-lightning study run other.yaml"):
    print("held", flush=True)
    time.sleep(60)
"""


def test_one_session_writes_into_a_study_folder_and_a_killed_one_does_not_block(tmp_path):
    study, out = _study(tmp_path), tmp_path / "out"
    other = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "held"
        with pytest.raises(StudyError) as e:
            runner.run_study(study, out)
        message = str(e.value)
        assert "\n" not in message and f"pid {other.pid}" in message and "study run other.yaml" in message
        assert not (out / "study.json").exists()
    finally:
        other.kill()
        other.wait()
    runner.prepare_folder(study, out, force=False)  # the killed holder's lock is gone with it
    from yahtzee_lightning.manifest import folder_lock

    with folder_lock(out, "a test"):
        pass


def test_t1s_fresh_games_cache_is_keyed_by_the_checkpoint_it_played(tmp_path, monkeypatch):
    """A run trained again (another last.ckpt in the same folder, same seed and games) is played again;
    the entry of the weights it replaced is dropped, not kept beside it."""
    from types import SimpleNamespace

    import lightning as L

    from yahtzee_lightning.algorithms import Reinforce
    from yahtzee_lightning.study.drawing import tables
    from yahtzee_lightning.study.records import read_record
    from yahtzee_lightning.study.results import Trial

    def checkpoint(seed: int, path: Path) -> None:
        L.seed_everything(seed)
        model = Reinforce(
            total_games=20, games_per_batch=20, evaluations=1, eval_games=4, final_eval_games=0,
            d_h=16, n_layers=1, head_hidden=16, boxes=[0, 12], seed=seed,
        )  # fmt: skip
        trainer = L.Trainer(logger=False, enable_progress_bar=False, enable_checkpointing=False)
        trainer.fit(model)
        path.parent.mkdir(parents=True, exist_ok=True)
        trainer.save_checkpoint(path)

    run = tmp_path / "runs" / "c0" / "seed0"
    (run).mkdir(parents=True)
    (run / "final.json").write_text("{}")
    trial = Trial("cells", "c0", [0], "runs/c0/seed0")
    cell = SimpleNamespace(final_eval_games=8)
    ctx = SimpleNamespace(out=tmp_path, trials=[trial], study=SimpleNamespace(cells={"c0": cell}))
    played = []
    from yahtzee_lightning import evaluation

    evaluate = evaluation.evaluate
    monkeypatch.setattr(evaluation, "evaluate", lambda *a, **k: played.append(1) or evaluate(*a, **k))
    series = SimpleNamespace(cell="c0")
    checkpoint(0, run / "checkpoints" / "last.ckpt")
    tables.fresh_scores(ctx, series)
    tables.fresh_scores(ctx, series)  # cached: not played again
    assert len(played) == 1
    checkpoint(1, run / "checkpoints" / "last.ckpt")  # trained again
    tables.fresh_scores(ctx, series)
    assert len(played) == 2
    cache = read_record(tmp_path / tables.FRESH, "")
    assert len(cache) == 1 and next(iter(cache)).startswith("runs/c0/seed0#0#8#")
    # A committed copy without its weights: the column from what the cache played, nothing played.
    scores = tables.fresh_scores(ctx, series)
    (run / "checkpoints" / "last.ckpt").unlink()
    kept = tables.fresh_scores(ctx, series)
    assert len(played) == 2 and kept.to_dict("records") == scores.to_dict("records") and len(kept) == 1
    (tmp_path / tables.FRESH).unlink()
    assert tables.fresh_scores(ctx, series).empty  # no weights, no cache: "no weights"


def test_study_run_counts_are_bounded_in_one_line(tmp_path, capsys):
    from yahtzee_lightning.commands.study import main

    for flag, value, message in (
        ("--cpus", "0", "--cpus must be >= 1"),
        ("--retries", "1000", "--retries must be at most 100"),
    ):
        with pytest.raises(SystemExit) as e:
            main(["run", "s.yaml", "--out", str(tmp_path / "out"), flag, value])
        err = capsys.readouterr().err.strip().splitlines()
        assert e.value.code == 2 and len(err) == 1 and message in err[0] and "study run --help" in err[0]
    assert not (tmp_path / "out").exists()
