"""`study status`: a study folder's runs, one line each, read without touching the folder."""

from __future__ import annotations

import os
import re
import shutil
import time

import pandas as pd

from yahtzee_lightning.commands.study import main
from yahtzee_lightning.study.records import append_lines, read_lines
from yahtzee_lightning.study.results import load_plan
from yahtzee_lightning.study.status import _fit_paces, _Left, _left_line, status_lines


def _stop_seed_1(study, evals):
    """Seed 1's run as stopped before its final evaluation, its history ``evals``: (games, score,
    seconds into the fit, fit), the same for every member where seeds are packed in one run."""
    _, trials = load_plan(study)
    trial = next(t for t in trials if 1 in t.seeds)
    run = study / trial.run_dir
    (run / "final.json").unlink()
    (run / "history.jsonl").unlink()
    members = trial.members or list(range(len(trial.seeds)))
    append_lines(
        run / "history.jsonl",
        [
            {"eval/games": g, "eval/mean_score": m, "eval/wall_clock_s": s, "fit": f, "member": k}
            for k in members
            for g, m, s, f in evals
        ],
    )
    return trial, run


def test_status_counts_the_runs_and_says_how_far_one_under_way_has_come(finished_study, tmp_path, capsys):
    study = tmp_path / "study"
    shutil.copytree(finished_study, study)
    lines = status_lines(study)
    assert lines[0] == "tiny: 2 of 2 runs done"
    assert all(", final " in line and "32 of 32 games" in line for line in lines[1:]) and len(lines) == 3
    # Each evaluation line names the fit that wrote it (one fit a run here: no resume).
    for history in study.rglob("history.jsonl"):
        fits = {row["fit"] for row in read_lines(history)}
        assert len(fits) == 1 and len(fits.pop()) == 12
    # Seed 1's run stopped before its final evaluation (with seed 0's, where the two are packed in one
    # run): two evaluations (8 games in 800 s of its process), its checkpoint ten minutes old.
    trial, run = _stop_seed_1(study, [(16, 50.0, 100.0, "a"), (24, 60.5, 900.0, "a")])
    ckpt = run / "checkpoints" / "last.ckpt"
    ckpt.parent.mkdir(exist_ok=True)
    ckpt.touch()
    now = time.time()
    os.utime(ckpt, (now - 600, now - 600))
    before = {p: p.stat().st_mtime_ns for p in study.rglob("*") if p.is_file()}
    lines = status_lines(study, now=now)
    n = len(trial.seeds)
    assert lines[0] == f"tiny: {2 - n} of 2 runs done, {n} under way"
    under_way = next(line for line in lines if "seed 1" in line)
    assert "under way" in under_way and "24 of 32 games" in under_way and "last evaluation 60.5" in under_way
    assert "checkpoint 10 min ago" in under_way
    assert "0.01 games/s: about 13 min of training left" in under_way  # 8 games left at 8 games / 800 s
    # What is left, once for a trial however many seeds it trains at once: 800 s, alone on its slot.
    assert lines[1].startswith("left: about 13 min of training for one core, at each recipe's newest pace here; ")
    assert re.search(r"; about 13 min of wall clock at \d+ at once$", lines[1]), lines[1]
    assert {p: p.stat().st_mtime_ns for p in study.rglob("*") if p.is_file()} == before  # read only
    assert main(["status", str(study)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == lines[0] and len(printed) == len(lines)


def test_status_gives_no_pace_across_a_resume(finished_study, tmp_path):
    """Two evaluations from two fits (either side of a resume) give no pace, even where the second
    fit's clock, restarted, happens to read later than the first's."""
    study = tmp_path / "study"
    shutil.copytree(finished_study, study)
    _stop_seed_1(study, [(16, 50.0, 100.0, "a"), (24, 60.5, 150.0, "b")])
    under_way = next(line for line in status_lines(study) if "seed 1" in line)
    assert "under way" in under_way and "24 of 32 games" in under_way and "games/s" not in under_way
    # Without a pace of its own, a run is counted at its recipe's newest: here its own first fit's,
    # from the start (16 games in 100 s), not the resumed fit's single line: 8 games left, 50 s.
    lines = status_lines(study)
    assert lines[1].startswith("left: about 1 min of training for one core")


def test_each_fit_gives_its_pace_and_a_run_of_an_unmeasured_recipe_is_said_not_counted():
    evals = pd.DataFrame(
        {
            "games": [10, 20, 30, 40, 50, 60, 70],
            "wall_clock_s": [5.0, 10.0, 4.0, 8.0, 100.0, 2.0, 12.0],
            "fit": ["a", "a", "b", "b", None, None, None],  # the last three from before fit ids
            "node": [None, None, None, None, "n1", "n2", "n2"],
        }
    )
    # a: from its start, 20 games in 10 s; b: 10 games in 4 s; n1 a single line, not the first fit:
    # none; n2: 10 games in 10 s.
    assert _fit_paces(evals) == [2.0, 2.5, 1.0]
    # No fit or node at all: the fits are where the clock went back.
    assert _fit_paces(evals[["games", "wall_clock_s"]].iloc[:4]) == [2.0, 2.5]
    # Trials in the plan's order: a and b not started (100 s and 200 s at their recipe's pace), c under
    # way (600 s at its own pace), d two seeds at once (its slower, 120 s), e of a recipe with no pace.
    # Two at once, the run under way first: c, and beside it a, b, then d: the last (c) ends at 600 s.
    left = [
        _Left("a", "ppo.yaml", 100, None, False),
        _Left("b", "ppo.yaml", 200, None, False),
        _Left("c", "ppo.yaml", 300, 0.5, True),
        _Left("d", "ppo.yaml", 60, None, False),
        _Left("d", "ppo.yaml", 120, None, False),
        _Left("e", "dqn.yaml", 10, None, False),
    ]
    assert _left_line(left, {"ppo.yaml": 1.0}, at_once=2) == (
        "left: about 17 min of training for one core, at each recipe's newest pace here; about 10 min of "
        "wall clock at 2 at once (1 run of a recipe with no pace yet not counted)"
    )
    assert "about 17 min of wall clock at 1 at once" in _left_line(left, {"ppo.yaml": 1.0}, at_once=1)
    assert _left_line([], {}, 2) is None


def test_a_run_whose_fit_holds_its_folder_before_its_first_evaluation_is_under_way(finished_study, tmp_path):
    """A fit writes its owner file as it takes its run folder's lock, minutes before the first evaluation:
    such a run is under way, named with the process; an owner file left by a process that has ended (a
    killed fit's stays behind) is not, so the run reads as not started."""
    import json
    import socket
    import subprocess
    import sys

    study = tmp_path / "study"
    shutil.copytree(finished_study, study)
    trial, run = _stop_seed_1(study, [])
    owner = run / "checkpoints" / ".yahtzee-lightning.owner"
    owner.parent.mkdir(exist_ok=True)
    record = {"host": socket.gethostname(), "since": "2026-11-30 13:50:33 UTC", "command": "yahtzee-lightning fit"}
    owner.write_text(json.dumps(record | {"pid": os.getpid()}))
    n = len(trial.seeds)
    lines = status_lines(study)
    assert lines[0] == f"tiny: {2 - n} of 2 runs done, {n} under way"
    line = next(line for line in lines if "seed 1" in line)
    assert line.endswith(f"under way, 0 of 32 games, before its first evaluation (pid {os.getpid()} on "
                         f"{socket.gethostname()} since 2026-11-30 13:50:33 UTC)")  # fmt: skip
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    owner.write_text(json.dumps(record | {"pid": ended.pid}))
    assert status_lines(study)[0] == f"tiny: {2 - n} of 2 runs done, {n} not started"
