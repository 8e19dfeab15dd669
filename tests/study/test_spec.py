"""Study files: the shipped ones expand and check; bad ones end in one line naming the file and key,
before anything runs; a study folder is never overwritten by another study without --force."""

import json
import shutil
from pathlib import Path

import pytest
import torch
import yaml

from yahtzee_lightning.commands.study import main
from yahtzee_lightning.study.drawing.canvas import pareto_front
from yahtzee_lightning.study.model import StudyError
from yahtzee_lightning.study.running.runner import plan_trials, prepare_folder
from yahtzee_lightning.study.running.trial import retune, trial_config
from yahtzee_lightning.study.spec import EXHIBIT_IDS, load_study

ROOT = Path(__file__).resolve().parents[2]
BASE = str(ROOT / "conf" / "a2c_cpu.yaml")


def _write(tmp_path: Path, name: str = "s", **changes) -> Path:
    study = {
        "name": name,
        "base": BASE,
        "seeds": [0, 1],
        "profiles": {"smoke": {"set": {"model.init_args.total_games": 128}}},
        "ablations": {"width": {"axes": {"model.init_args.d_h": [8, 16]}}},
        "exhibits": {"F7": "width"},
    }
    study.update(changes)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(study))
    return path


@pytest.mark.parametrize(
    "profile",
    ["smoke"]
    + [
        pytest.param(p, marks=pytest.mark.slow("every cell of a profile parsed as fit parses it: about 15 s"))
        for p in ("cpu", "long", "full")
    ],
)
def test_the_paper_study_expands_for_each_profile(profile):
    study = load_study(ROOT / "conf" / "study" / "paper.yaml", profile)
    ablations = {"algorithm", "representation", "architecture", "layer_norm", "entropy", "gae_lambda", "single_turn"}
    assert ablations <= set(study.ablations)
    # Every exhibit but population-based training's, A1-A3, which every report draws unasked, and F17
    # (saturation), logged only by runs since the learner's fix: the paper study's runs are older.
    assert set(study.exhibits) == set(EXHIBIT_IDS) - {"B1", "B2", "A1", "A2", "A3", "F17"}
    algorithms = {study.cells[c].algorithm for c, _ in study.ablations["algorithm"].cells}
    assert algorithms == {"Reinforce", "A2C", "PPO"}
    # The study's A2C (TD(0)) and the GAE(0.95) recipe beside it, each named for what it is.
    a2c = {labels["algorithm"]: study.cells[c] for c, labels in study.ablations["algorithm"].cells}
    assert a2c["a2c_td0"].overrides["model.init_args.gae_lambda"] == 0.0
    assert a2c["a2c_gae95"].overrides["model.init_args.gae_lambda"] == 0.95


@pytest.mark.slow("every cell of the long profile parsed as fit parses it: about 20 s")
def test_the_long_profile_trains_past_the_greedy_players_budget_with_four_seeds_packed():
    study = load_study(ROOT / "conf" / "study" / "paper.yaml", "long")
    assert all(c.total_games >= 200_000 for c in study.cells.values())
    assert all(len(ab.seeds) >= 4 for ab in study.ablations.values())
    trials = plan_trials(study)
    assert len({t.pack or t.name for t in trials}) < len(trials)  # packed: fewer runs than cells


def test_the_smoke_and_pbt_studies_expand():
    smoke = load_study(ROOT / "conf" / "study" / "smoke.yaml")
    assert all(c.total_games <= 256 for c in smoke.cells.values())
    pbt = load_study(ROOT / "conf" / "study" / "pbt.yaml", "cpu")
    population = [ab for ab in pbt.ablations.values() if ab.scheduler]
    assert len(population) == 1 and population[0].scheduler["name"] == "pbt" and len(population[0].seeds) == 8


def test_cells_shared_by_ablations_run_once(tmp_path):
    widths = {"a": {"axes": {"model.init_args.d_h": [8, 16]}}, "b": {"axes": {"model.init_args.d_h": [16, 32]}}}
    path = _write(tmp_path, ablations=widths, exhibits={"F7": "all"})
    study = load_study(path)
    assert len(study.cells) == 3
    assert sum(len(t.seeds) for t in plan_trials(study)) == 6  # 3 cells x 2 seeds, the shared cell once


def _axes(axes: dict) -> dict:
    return {"ablations": {"w": {"axes": axes}}}


@pytest.mark.parametrize(
    ("changes", "key", "problem"),
    [
        (_axes({"model.init_args.d_hh": [8]}), "ablations.w.axes.model.init_args.d_hh", "d_hh"),
        (_axes({"trainer.max_epoch": [3]}), "trainer.max_epoch", "did you mean trainer.max_epochs"),  # as fit words it
        (_axes({"model.init_args.d_h": []}), "ablations.w.axes.model.init_args.d_h", "empty"),
        (_axes({"model.init_args.d_h": ["wide"]}), "model.init_args.d_h", "int"),
        (_axes({"model.class_path": ["nowhere.Algo"]}), "model.class_path", "nowhere"),
        (_axes({"entropy": {"low": {"model.init_args.beta_rol": 0.1}}}), "ablations.w.axes.entropy.low", "beta_rol"),
        ({"ablations": {"w": {"axis": {"model.init_args.d_h": [8]}}}}, "ablations.w.axis", "unknown key"),
        ({"seeds": [0, "one"]}, "seeds", "integers"),
        ({"exhibits": {"F99": "width"}}, "exhibits.F99", "unknown exhibit"),
        ({"exhibits": {"F7": "depth"}}, "exhibits.F7", "no ablation 'depth'"),
        ({"base": "conf/nothing.yaml"}, "base", "no such config file"),
        ({"profiles": {"smoke": {"set": {"model.init_args.total_games": "many"}}}}, "set", "total_games"),
    ],
)
def test_a_bad_study_file_fails_in_one_line_naming_the_file_and_key(tmp_path, changes, key, problem):
    path = _write(tmp_path, **changes)
    with pytest.raises(StudyError) as e:
        load_study(path)
    message = str(e.value)
    assert "\n" not in message and message.startswith(str(path)) and key in message and problem in message


def test_a_file_that_does_not_parse_or_lacks_the_profile(tmp_path, capsys):
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    assert main(["check", str(broken)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(broken) in err and "does not parse" in err
    assert main(["check", str(_write(tmp_path)), "--profile", "cluster"]) == 2
    assert "no profile 'cluster'" in capsys.readouterr().err


def test_a_folder_of_another_study_is_refused_and_kept_without_force(tmp_path):
    out = tmp_path / "out"
    prepare_folder(load_study(_write(tmp_path, "first")), out, force=False)
    (out / "runs").mkdir()
    (out / "runs" / "finished.txt").write_text("kept")
    other = load_study(_write(tmp_path, "second"))
    with pytest.raises(StudyError, match="holds the results of study 'first'.*--force"):
        prepare_folder(other, out, force=False)
    assert (out / "runs" / "finished.txt").read_text() == "kept"
    prepare_folder(other, out, force=True)  # the plan is the first study's: replaced; the planted file stays
    assert (out / "runs" / "finished.txt").read_text() == "kept"
    assert json.loads((out / "study.json").read_text())["study"]["name"] == "second"


def test_a_folder_that_holds_something_else_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(StudyError, match="not empty and holds no study"):
        prepare_folder(load_study(_write(tmp_path)), tmp_path, force=False)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_trial_logs_and_checkpoints_in_its_run_folder(tmp_path):
    study = load_study(_write(tmp_path))
    cell = next(iter(study.cells.values()))
    config = trial_config(cell, [3], tmp_path / "run", {"model.init_args.lr": 0.01})
    assert config["seed_everything"] == 3 and config["model"]["init_args"]["seed"] == 3
    assert config["model"]["init_args"]["lr"] == 0.01
    loggers = config["trainer"]["logger"]
    assert {lg["init_args"]["save_dir"] for lg in loggers[:-1]} == {str(tmp_path / "run")}
    assert loggers[-1]["class_path"].endswith("LatestMetrics")  # what an ensemble logs per member
    dirpaths = [cb["init_args"].get("dirpath") for cb in config["trainer"]["callbacks"]]
    assert str(tmp_path / "run" / "checkpoints") in dirpaths
    saving = [cb for cb in config["trainer"]["callbacks"] if cb["class_path"].endswith("RunCheckpoint")]
    assert saving and all(cb["init_args"]["runs_apart"] is False for cb in saving)  # one run per trial folder
    assert config["trainer"]["callbacks"][-1]["class_path"].endswith("StudyRecorder")


def test_an_evolved_learning_rate_is_written_into_the_inherited_checkpoint(tmp_path):
    ckpt = {
        "hyper_parameters": {"lr": 0.002},
        "optimizer_states": [{"param_groups": [{"lr": 0.001, "initial_lr": 0.002}]}],
        "lr_schedulers": [{"base_lrs": [0.002], "_last_lr": [0.001]}],
        "state_dict": {},
    }
    torch.save(ckpt, tmp_path / "donor.ckpt")
    retune(tmp_path / "donor.ckpt", tmp_path / "run" / "inherited.ckpt", {"model.init_args.lr": 0.004})
    out = torch.load(tmp_path / "run" / "inherited.ckpt", weights_only=True)
    assert out["hyper_parameters"]["lr"] == 0.004
    assert out["optimizer_states"][0]["param_groups"][0] == {"lr": 0.002, "initial_lr": 0.004}
    assert out["lr_schedulers"][0] == {"base_lrs": [0.004], "_last_lr": [0.002]}
    # sealed anew: what it now holds matches its sha256s, so the member that inherits it resumes from it
    from yahtzee_lightning.loop.resume import PARTS_DIGEST, checkpoint_problem

    assert (
        checkpoint_problem(out, "inherited.ckpt") is None and "lr_schedulers" in out["yahtzee_lightning"][PARTS_DIGEST]
    )
    # a donor edited after it was sealed is never passed on
    out["optimizer_states"][0]["param_groups"][0]["lr"] = 1.0
    torch.save(out, tmp_path / "edited.ckpt")
    with pytest.raises(
        ValueError, match=r"edited.ckpt: the checkpoint handed over cannot be trusted \(its optimizer state"
    ):
        retune(tmp_path / "edited.ckpt", tmp_path / "run2" / "inherited.ckpt", {"model.init_args.lr": 0.008})


def test_the_frontier():  # the intervals over seeds: tests/study/test_stats.py
    assert pareto_front([(1, 5), (2, 4), (1.5, 3), (3, 1)]) == [(1, 5), (2, 4), (3, 1)]


def test_the_ensemble_seam_makes_a_cells_seeds_members_of_one_trial(tmp_path):
    study = load_study(_write(tmp_path))
    assert all(cell.accepts_ensemble for cell in study.cells.values())  # A2C takes it (through **kwargs)
    trials = plan_trials(study)
    assert [t.seeds for t in trials] == [[0, 1], [0, 1]] and trials[0].run_dir.endswith("seed0-1")
    config = trial_config(study.cells[trials[0].cell], trials[0].seeds, tmp_path, {})
    assert config["model"]["init_args"]["ensemble"] == [{"seed": 0}, {"seed": 1}]
    study.seeds_as = "runs"
    assert [t.seeds for t in plan_trials(study)] == [[0], [1], [0], [1]]
    study.seeds_as = "auto"
    for cell in study.cells.values():
        cell.accepts_ensemble = False  # an algorithm without an ensemble: runs
    assert len(plan_trials(study)) == 4
    pbt = load_study(ROOT / "conf" / "study" / "pbt.yaml", "smoke")
    assert all(len(t.seeds) == 1 for t in plan_trials(pbt) if t.experiment == "population")  # a scheduler: runs


def test_force_on_a_folder_that_holds_no_study_deletes_nothing(tmp_path):
    for name in ("runs", "report"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "mine.txt").write_text("mine")
    (tmp_path / "results.csv").write_text("mine")
    with pytest.raises(StudyError, match="not empty and holds no study"):
        prepare_folder(load_study(_write(tmp_path)), tmp_path, force=True)
    assert (tmp_path / "runs" / "mine.txt").exists() and (tmp_path / "report" / "mine.txt").exists()
    assert (tmp_path / "results.csv").read_text() == "mine"


def test_a_report_never_deletes_a_users_file_in_its_folder(tmp_path, capsys, monkeypatch):
    from yahtzee_lightning.manifest import Manifest
    from yahtzee_lightning.study.drawing.report import write_report
    from yahtzee_lightning.study.judging import stats

    # What is at stake is the files, not the intervals: a few bootstrap draws (2,000 take minutes here).
    monkeypatch.setattr(stats.bootstrap, "__kwdefaults__", {**stats.bootstrap.__kwdefaults__, "reps": 20})

    # A study folder a report can be drawn from (a committed copy, no exhibits, one ablation of two
    # cells: the seven of the study took 10-40 s a report): the user's file is at stake.
    plan = json.loads((ROOT / "docs" / "study" / "cpu" / "study.json").read_text())
    plan["study"]["exhibits"] = {}
    plan["study"]["ablations"] = {"layer_norm": plan["study"]["ablations"]["layer_norm"]}
    (tmp_path / "study.json").write_text(json.dumps(plan))
    shutil.copy(ROOT / "docs" / "study" / "cpu" / "results.csv", tmp_path)
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "mine.md").write_text("mine")
    write_report(tmp_path)  # kept, beside the report
    assert (folder / "mine.md").read_text() == "mine" and (folder / "index.md").exists()
    written = {p.name for p in folder.iterdir()} - {"mine.md", "manifest.json"}
    assert {"index.md", "exhibits.json", "claims.md"} <= written == set(Manifest.read(folder).files)
    with pytest.raises(StudyError, match="a report is already there; add --force"):
        write_report(tmp_path)
    (folder / "notes").mkdir()
    (folder / "notes" / "mine.txt").write_text("mine")
    capsys.readouterr()
    write_report(tmp_path, force=True)
    err = capsys.readouterr().err
    assert f"kept {folder / 'mine.md'}" in err and f"kept {folder / 'notes' / 'mine.txt'}" in err
    assert (folder / "mine.md").read_text() == "mine" and (folder / "notes" / "mine.txt").read_text() == "mine"
    # One of ours edited since is not proven ours: refused before anything is deleted.
    (folder / "index.md").write_text("my edits")
    with pytest.raises(StudyError, match="index.md would be overwritten but was not written by a report"):
        write_report(tmp_path, force=True)
    assert (folder / "index.md").read_text() == "my edits" and (folder / "claims.md").exists()
    # A study folder whose study.json does not check: refused before the report is touched.
    (folder / "index.md").unlink()
    write_report(tmp_path, force=True)
    (tmp_path / "study.json").write_text("{damaged")
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    with pytest.raises(StudyError):
        write_report(tmp_path, force=True)
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before


def test_check_finds_settings_that_would_fail_every_cell(tmp_path, capsys):
    for changes, message in (
        ({"profiles": {"smoke": {"set": {"model.init_args.total_games": -5}}}}, "total_games must be >= 1, got -5"),
        ({"seeds": [-1, 0]}, "seeds must be integers in 0..2**32-1, got [-1]"),
        ({"profiles": {"smoke": {"set": {"model.init_args.eval_games": -2}}}}, "eval_games must be >= 0"),
    ):
        assert main(["check", str(_write(tmp_path, **changes)), "--profile", "smoke"]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and message in err, err


@pytest.mark.parametrize("fits", [True, False])
def test_pbt_pauses_a_member_only_where_the_population_does_not_fit_its_slots(monkeypatch, fits):
    """Ray's asynchronous PBT pauses a member at a perturbation point while another waits; where every
    member has a slot the waiting one starts anyway, and the pause would cost a fresh process."""
    from ray.tune.schedulers import PopulationBasedTraining, TrialScheduler

    from yahtzee_lightning.study.running.schedulers import scheduler

    spec = {
        "name": "pbt",
        "metric": "eval/mean_score",
        "mode": "max",
        "mutations": {"model.init_args.lr": [1e-4, 1e-2]},
    }
    pbt = scheduler(spec, max_t=9, fits=fits)
    assert isinstance(pbt, PopulationBasedTraining)
    for ray_says, want in [
        (TrialScheduler.PAUSE, TrialScheduler.CONTINUE if fits else TrialScheduler.PAUSE),
        (TrialScheduler.NOOP, TrialScheduler.NOOP),  # the member itself copies a better one: Ray's way
        (TrialScheduler.CONTINUE, TrialScheduler.CONTINUE),
    ]:
        monkeypatch.setattr(PopulationBasedTraining, "on_trial_result", lambda self, *a, said=ray_says: said)
        assert pbt.on_trial_result(None, None, {}) == want


def test_the_study_command_s_help_names_every_verb_it_has():
    """Its first line listed five verbs of seven (compare and prose were missing)."""
    import argparse

    from yahtzee_lightning.commands.study import _parser

    parser = _parser()
    (verbs,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    named = parser.description.split(":")[0].removeprefix("yahtzee-lightning study ").split("|")
    assert sorted(named) == sorted(verbs.choices)
