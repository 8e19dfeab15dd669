"""The smoke study end to end on a local Ray instance: run, kill in the middle, resume, report."""

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from yahtzee_lightning.machine import describe_machine

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "conf" / "study" / "smoke.yaml"


def _study(*args: str, cwd: Path = ROOT, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "yahtzee_lightning.cli", "study", *args]
    # A session of its own, so that the kill takes the local Ray instance it started with it.
    return subprocess.Popen(command, cwd=cwd, env=env, start_new_session=True, text=True, **kwargs)


def _finish(proc: subprocess.Popen, limit: float = 600) -> tuple[str, str]:
    """Wait for a study command; past ``limit`` seconds kill it with its Ray instance and fail the
    test, rather than leave a study running behind the suite."""
    try:
        return proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"{' '.join(proc.args[3:6])}: still running after {limit} s; killed") from None


def _caught_in_the_middle(out: Path) -> Path | None:
    """A run that has saved a checkpoint but not finished, once some others have finished."""
    finished = list(out.glob("runs/*/*/final.json"))
    if len(finished) < 2:
        return None
    for run in out.glob("runs/*/*"):
        if list(run.glob("checkpoints/*.ckpt")) and not (run / "final.json").exists():
            return run
    return None


@pytest.mark.slow("a Ray study run, killed, resumed and reported: about 170 s on 2 cores")
def test_the_smoke_study_runs_is_killed_resumes_and_reports(tmp_path, default_table):
    out = tmp_path / "smoke"
    first = _study("run", str(SMOKE), "--out", str(out), "--cpus", "1", stderr=subprocess.DEVNULL)
    deadline, caught = time.monotonic() + 600, None  # a limit, not a timing
    while caught is None and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        caught = _caught_in_the_middle(out)
    with contextlib.suppress(ProcessLookupError):  # before the assert: a failed test leaves no study running
        os.killpg(first.pid, signal.SIGKILL)
    assert caught is not None, "the study ended (or hung) before a run could be caught in the middle"
    first.wait()
    finished = {p: p.read_text() for p in out.glob("runs/*/*/final.json")}
    mtimes = {p: p.stat().st_mtime_ns for p in finished}
    _a_report_of_the_finished_cells_names_the_pending_ones(out, tmp_path / "partial")

    second = _study("run", str(SMOKE), "--out", str(out), "--cpus", "2", stderr=subprocess.PIPE)
    _, err = _finish(second)
    assert second.returncode == 0, err[-3000:]
    # Finished cells were not run again; the one caught in the middle continued from its checkpoint.
    assert all(p.read_text() == text and p.stat().st_mtime_ns == mtimes[p] for p, text in finished.items())
    assert "resuming from" in (caught / "fit.log").read_text()
    # Resumed with more CPUs than it started with: a fresh Tune experiment (a restored one keeps the
    # first session's concurrency). Counting trials at once is no test: under load one may end
    # before the second worker is up.
    assert "resuming experiment" not in err and "on 2 CPUs" in err

    table = pd.read_csv(out / "results.csv")
    trials = json.loads((out / "study.json").read_text())["trials"]
    finals = table[table["stage"] == "final"]
    assert len(finals) == sum(len(t["seeds"]) for t in trials) and set(finals["status"]) == {"done"}
    assert finals.groupby("cell")["seed"].nunique().eq(2).all()  # every cell, both seeds (runs or members)
    assert finals["mean_score"].between(0, 1575).all() and finals["regret_per_game"].ge(0).all()
    evals = table[table["stage"] == "eval"]
    assert evals.groupby(["cell", "seed"]).size().eq(2).all()  # two evaluations a member, none lost or doubled

    report = _study("report", str(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, err = _finish(report, 300)
    assert report.returncode == 0, err[-3000:]
    exhibits = yaml.safe_load(SMOKE.read_text())["exhibits"]
    manifest = json.loads((out / "report" / "exhibits.json").read_text())
    assert set(manifest) == set(exhibits) | {"A1", "A2", "A3"}  # median and IQM, P(improvement), profiles: always
    index = (out / "report" / "index.md").read_text()
    sessions = [json.loads(line) for line in (out / "sessions.jsonl").read_text().splitlines()]
    assert [s["wall_clock_s"] is None for s in sessions] == [True, False]  # the killed session, then the resume
    assert sessions[1]["command"].startswith("yahtzee-lightning study run") and sessions[1]["cpus"] == 2
    assert sessions[1]["machine"] == describe_machine()
    assert len(sessions[1]["commit"]) == 40 and "Code: the sessions trained with `" in index
    assert "Wall clock:" in index and "killed (no wall clock)" in index and "cores" in index
    for eid, entry in manifest.items():
        path = out / "report" / entry["file"]
        assert path.stem == eid and path.stat().st_size > 0
        assert entry["points"] > 0, f"{eid} has no data"
        assert f"## {eid}." in index and (entry["file"] in index or path.suffix == ".md")
    _the_report_says_what_it_shows(out, finals)


def _a_report_of_the_finished_cells_names_the_pending_ones(out: Path, partial: Path) -> None:
    """A copy of the killed study (no checkpoints, no Ray folder) reports what is finished, names what is not."""
    from yahtzee_lightning.study.drawing.report import write_report

    shutil.copytree(out, partial, ignore=shutil.ignore_patterns("ray", "*.ckpt"))
    index = write_report(partial).read_text()
    assert "Still running:" in index and "* pending: " in index
    # The bar charts keep a pending cell's row and say why it has no bar (it read as a score of nothing).
    from yahtzee_lightning.study.drawing.figures import NO_FINAL

    pending = [line.removeprefix("* pending: ") for line in index.splitlines() if line.startswith("* pending: ")]
    rows = _figure_text(partial / "report" / "F2.png")["Rows"].split(" ; ")
    marked = [r.removesuffix(f" {NO_FINAL}") for r in rows if r.endswith(NO_FINAL)]
    assert marked and set(marked) <= set(pending), (marked, pending)
    lines = (partial / "report" / "claims.md").read_text().splitlines()
    rows = [r.split(" | ") for r in lines if "(ranked after the fact)" in r or "no finished seed yet" in r]
    assert rows
    # Cells are ranked by their finished members only: every ordering is a non-negative difference or pending.
    for row in rows:
        assert row[2].startswith("+") and "nan" not in row[2] or row[3].startswith("pending"), row


def _figure_text(path: Path) -> dict[str, str]:
    """What a report's PNG says it draws (its legend entries and axes), from the file's text chunks."""
    from PIL import Image

    with Image.open(path) as image:
        return dict(image.text)


def _the_report_says_what_it_shows(out: Path, finals: pd.DataFrame) -> None:
    report = out / "report"
    index = (report / "index.md").read_text()
    # Intervals: Student's t over the n = 2 seeds of every cell, and the captions say so.
    assert "1.96" not in index and "95 % Student's t interval with n - 1 degrees of freedom" in index
    assert "mean over n = 2 seeds a cell" in index and "(1 df)" in index
    assert "positive where it was still rising" in index  # every learning curve's end says so
    assert "curves draw 2 in-training evaluations a member" in index  # and which evaluations it draws
    # Legends say what each line trains: the algorithm and its advantage, not a config file's name.
    # (A toy run's heads may well be dead: the legend then counts its collapsed seeds after the name.)
    f1 = [
        re.sub(r" \(\d of \d seeds collapsed\)$", "", e) for e in _figure_text(report / "F1.png")["Legend"].split(" | ")
    ]
    assert {"REINFORCE", "A2C, GAE(0.95)", "PPO, GAE(0.95)"} <= set(f1) and "a2c_cpu" not in " ".join(f1)
    s1 = _figure_text(report / "S1.png")["Legend"]
    assert "greedy player = single-turn optimum" in s1 and "optimal full-game player" in s1
    # Rates are drawn in %, on an axis that goes past 1 (the greedy player's upper-bonus rate is 2.7 %).
    for eid in ("F3", "F5", "F11"):
        axes = _figure_text(report / f"{eid}.png")["Axes"]
        assert "(%" in axes and "rate" in axes, (eid, axes)
    # The diagnostics over training (F14-F16) come from each evaluation's history line.
    assert "KL" in _figure_text(report / "F14.png")["Axes"] and "top-3" in _figure_text(report / "F15.png")["Axes"]
    assert {"kl", "top3_keep_share", "value"} <= set(pd.read_csv(out / "results.csv"))
    # T1: the median, the post-hoc pick named as such, and its members played again on fresh games.
    t1 = (report / "T1.md").read_text()
    assert "| median |" in t1 and "after the fact" in t1 and "fresh games" in t1 and "no weights" not in t1
    assert (out / "fresh.json").exists()
    # The last checkpoint holds a member's final weights: played again on its final games, it scores the same.
    from yahtzee_lightning.algorithms import ALGORITHMS
    from yahtzee_lightning.evaluation import evaluate
    from yahtzee_lightning.loop.export import agent_from_checkpoint

    run = next(p.parent for p in sorted(out.glob("runs/*/*/final.json")) if "members" in json.loads(p.read_text()))
    member = json.loads((run / "final.json").read_text())["members"][1]
    agent = agent_from_checkpoint(run / "checkpoints" / "last.ckpt", "1", algorithms=ALGORITHMS)
    again = evaluate(agent.player(), member["summary"]["games"], member["final_seed"], with_optimal=False, regret=False)
    assert again["summary"]["score"]["mean"] == member["summary"]["score"]["mean"]
    # R1: regret by box and by turn, each summing to the regret per game of every member.
    assert _figure_text(report / "R1.png")["Legend"].count("A2C") == 2  # one entry a panel
    by_box = finals.filter(like="regret_by_box/").sum(axis=1)
    by_turn = finals.filter(like="regret_by_turn/").sum(axis=1)
    assert np.allclose(by_box, finals["regret_per_game"]) and np.allclose(by_turn, finals["regret_per_game"])
    claims = (report / "claims.md").read_text()
    assert "Welch t-test" in claims and "one-sample t-test" in claims and "## Claims" in index
    assert "### Exploratory" in claims and "paired t-test" in claims  # greedy on each seed's own games
    assert "(factorial)" in claims  # the width x depth ablation as a factorial, not as neighbours
    assert "| IQM |" in (report / "A1.md").read_text()
    # The committed copy of a report (study.json, results.csv, reference.json, no run folders) redraws.
    copy = out.parent / "copy"
    copy.mkdir()
    for name in ("study.json", "results.csv", "results.sha256", "reference.json"):
        shutil.copy(out / name, copy / name)
    from yahtzee_lightning.study.drawing.report import write_report

    write_report(copy)
    assert "no weights" in (copy / "report" / "T1.md").read_text()
    assert (copy / "report" / "claims.md").read_text() == claims


@pytest.mark.slow("a Ray study under ASHA: about 50 s")
def test_a_failed_cell_is_reported_and_the_others_run_also_under_asha(tmp_path, default_table):
    tiny = yaml.safe_load(SMOKE.read_text())["profiles"]["smoke"]["set"]
    study = {
        "name": "failing",
        "base": str(ROOT / "conf" / "a2c_cpu.yaml"),
        "seeds": [0],
        "pack": False,  # packed, the two lr cells would be one trial, and fail as one (docs/study.md)
        "profiles": {"smoke": {"set": {**tiny, "model.init_args.evaluations": 3}}},
        "ablations": {
            "lr": {"axes": {"model.init_args.lr": [0.002, -1.0]}},  # -1 parses, and the module refuses it
            "asha": {"seeds": [0, 1], "scheduler": {"name": "asha", "grace_period": 1}},
        },
        "exhibits": {"F2": "all", "T1": "all"},
    }
    path = tmp_path / "failing.yaml"
    path.write_text(yaml.safe_dump(study))
    out = tmp_path / "out"
    run = _study(  # --out relative to the working folder, as a user types it
        "run",
        str(path),
        "--out",
        "out",
        "--cpus",
        "2",
        "--report",
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stdout, err = _finish(run)
    assert run.returncode == 1, err[-3000:]
    members = pd.read_csv(out / "results.csv").drop_duplicates(["run_dir", "seed"]).set_index("run_dir")
    bad = members[members["status"] == "failed"]
    assert len(bad) == 1 and "lr must be > 0" in bad["error"].iloc[0]
    assert "lr must be > 0" in err and "failed:" in err
    assert (members["status"] == "done").sum() >= 2  # the good cell, and ASHA's survivors
    assert (members.loc[members.index.str.startswith("runs/asha/"), "status"] != "failed").all()
    index = (out / "report" / "index.md").read_text()
    assert "failed" in index and "lr must be > 0" in index


@pytest.mark.slow("population-based training on Ray: about 90 s")
def test_population_based_training_perturbs_the_worst_and_is_set_against_fixed_settings(tmp_path, default_table):
    out = tmp_path / "pbt"
    # conf/study/pbt.yaml with a population of 4 (its worst quarter is one member), not 8: PBT pauses
    # and restarts trials, each a fresh process, and 8 members on 2 cores take three times as long.
    # A Ray slot for each member (--cpus 4 on 2 cores): the population fits, so no member is paused
    # to let another run (study/running/schedulers.py), each pause a fresh process (146 s with 2 slots).
    study = yaml.safe_load((ROOT / "conf" / "study" / "pbt.yaml").read_text())
    study["base"] = str(ROOT / study["base"])
    study["ablations"]["population"]["seeds"] = [0, 1, 2, 3]
    # Ray's PBT is asynchronous: a member is exploited only where, at one of its perturbation points, it
    # is the worst of the others' latest results and the best had saved at its own; with 3 points a
    # member (8 evaluations) no member was exploited in one run of 2 on an idle 2-core box. 12
    # evaluations give each member 5 chances.
    study["profiles"]["smoke"]["set"] |= {"model.init_args.total_games": 384, "model.init_args.evaluations": 12}
    pbt = tmp_path / "pbt.yaml"
    pbt.write_text(yaml.safe_dump(study))
    run = _study(
        "run", str(pbt), "--profile", "smoke", "--out", str(out), "--cpus", "4", "--report", stderr=subprocess.PIPE
    )
    _, err = _finish(run)
    assert run.returncode == 0, err[-3000:]
    table = pd.read_csv(out / "results.csv")
    population, fixed = table[table["experiment"] == "population"], table[table["experiment"] == "cells"]
    members = population[population["stage"] == "eval"].groupby(["run_dir", "seed"])
    assert members.ngroups == 4 and fixed["seed"].nunique() == 4
    # Every member's first draw is its own; a member of the worst quarter then continues from a
    # better one's checkpoint with perturbed settings, so its learning rate changes during training.
    assert (members["setting/model.init_args.lr"].nunique() > 1).any()
    assert population["setting/model.init_args.lr"].between(0.0003 * 0.8**3, 0.01 * 1.2**3).all()
    b2 = (out / "report" / "B2.md").read_text()
    assert "population: best member" in b2 and "population mean" in b2 and "fixed settings" in b2
    manifest = json.loads((out / "report" / "exhibits.json").read_text())
    assert set(manifest) == {"B1", "B2"} and all(entry["points"] > 0 for entry in manifest.values())
