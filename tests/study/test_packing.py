"""Packing: cells that differ only in what an ensemble member may carry run as one trial, with the
numbers they would have had in trials of their own; a study folder copied elsewhere resumes."""

import json
import shutil
import subprocess

import pandas as pd
import pytest
import yaml
from test_smoke_study import ROOT, SMOKE, _finish, _study

from yahtzee_lightning.cli import main
from yahtzee_lightning.study.model import StudyError
from yahtzee_lightning.study.running.runner import _payloads, plan_trials, prepare_folder
from yahtzee_lightning.study.spec import load_study

TINY = {**yaml.safe_load(SMOKE.read_text())["profiles"]["smoke"]["set"], "model.init_args.final_eval_games": 40}
STUDY = {
    "name": "packing",
    "base": str(ROOT / "conf" / "a2c_cpu.yaml"),
    "seeds": [0, 1],
    "profiles": {"smoke": {"set": TINY}},
    "ablations": {
        "lr": {"axes": {"model.init_args.lr": [0.002, 0.004]}},  # with td0: one pack of three cells
        "td0": {"set": {"model.init_args.gae_lambda": 0.0}},
        "width": {"axes": {"model.init_args.d_h": [8]}},  # another shape: a trial of its own
    },
    "exhibits": {"F2": "all"},
}
KEEP = ["cell", "seed", "stage", "epoch", "games", "mean_score", "median", "regret_per_game", "single_turn_score"]


def _write(tmp_path, study: dict) -> str:
    path = tmp_path / f"{study['name']}.yaml"
    path.write_text(yaml.safe_dump(study))
    return str(path)


def _run(path: str, out, *flags: str) -> str:
    run = _study("run", path, "--out", str(out), "--cpus", "2", *flags, stderr=subprocess.PIPE)
    _, err = _finish(run)
    assert run.returncode == 0, err[-3000:]
    return err


def _numbers(out) -> pd.DataFrame:
    table = pd.read_csv(out / "results.csv")
    return table[[c for c in KEEP if c in table]].sort_values(["cell", "seed", "stage", "games"]).reset_index(drop=True)


@pytest.mark.slow("two Ray studies, packed and not, and a resume: about 80 s")
def test_a_packed_study_has_the_numbers_of_an_unpacked_one_and_a_copied_folder_resumes(tmp_path, default_table):
    path = _write(tmp_path, STUDY)
    trials = plan_trials(load_study(path))
    packs = {t.pack for t in trials}
    assert len(trials) == 4 and len(packs - {None}) == 1 and None in packs  # three cells packed, d_h 8 apart

    packed, unpacked = tmp_path / "packed", tmp_path / "unpacked"
    _run(path, packed)
    _run(path, unpacked, "--no-pack")
    assert len(list(packed.glob("runs/*/*/final.json"))) == 2 and len(list(unpacked.glob("runs/*/*/final.json"))) == 4
    a, b = _numbers(packed), _numbers(unpacked)
    assert len(a) == len(b) == 4 * 2 * 3 and set(a["stage"]) == {"eval", "final"}  # 2 evaluations + final a member
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=0, atol=1e-6)
    assert a.loc[a["stage"] == "final", "mean_score"].nunique() > 4  # the members are not copies of each other
    _t1_plays_each_packed_cells_own_members(packed)

    # The folder moved to another machine (another absolute path) as a commit carries it, without Ray's
    # own state (OUT/ray): every finished cell is skipped.
    moved = tmp_path / "elsewhere" / "packed"
    shutil.copytree(packed, moved, ignore=shutil.ignore_patterns("ray"))
    finals = {p.relative_to(moved): p.read_text() for p in moved.glob("runs/*/*/final.json")}
    logs = {p.relative_to(moved): p.read_text() for p in moved.glob("runs/*/*/fit.log")}
    err = _run(path, moved)
    assert "every run is finished; nothing to train" in err and not (moved / "ray").exists()  # no Ray started
    assert {p.relative_to(moved): p.read_text() for p in moved.glob("runs/*/*/final.json")} == finals
    assert {p.relative_to(moved): p.read_text() for p in moved.glob("runs/*/*/fit.log")} == logs  # nothing trained
    pd.testing.assert_frame_equal(_numbers(moved), a)


def _t1_plays_each_packed_cells_own_members(out) -> None:
    """T1's fresh games: each cell of a pack plays its own members (its place in the pack's ensemble),
    not the pack's first cell's, and the cells' cached results do not overwrite each other."""
    from yahtzee_lightning.algorithms import ALGORITHMS
    from yahtzee_lightning.evaluation import evaluate
    from yahtzee_lightning.loop.export import agent_from_checkpoint
    from yahtzee_lightning.loop.resume import last_checkpoint
    from yahtzee_lightning.study.drawing.tables import FRESH_SEED, fresh_scores
    from yahtzee_lightning.study.judging.context import Context

    ctx = Context(out)
    series = {s.cell: s for s in ctx.all_series(list(STUDY["ablations"]))}
    packed = sorted((t for t in ctx.trials if t.pack), key=lambda t: t.members[0])
    scores = [fresh_scores(ctx, series[t.cell]) for t in packed]  # the pack's first cell first, as the cache fills
    ckpt = last_checkpoint(out / packed[0].run_dir / "checkpoints")
    for t, got in zip(packed, scores, strict=True):
        for member, seed in zip(t.members, t.seeds, strict=True):
            agent = agent_from_checkpoint(ckpt, str(member), algorithms=ALGORITHMS)
            want = evaluate(
                agent.player(),
                TINY["model.init_args.final_eval_games"],
                seed + FRESH_SEED,
                with_optimal=False,
                regret=False,
            )
            assert got.set_index("seed").loc[seed, "mean_score"] == want["summary"]["score"]["mean"], (t.cell, member)
    assert len({tuple(s["mean_score"]) for s in scores}) == len(packed)


def test_the_trial_with_the_most_members_starts_first(tmp_path):
    """Tune starts trials in the order it is given them; a pack started after the single cells would
    add their time to its own, the longest of the study."""
    study = load_study(_write(tmp_path, STUDY))
    order = [len(p["seeds"]) for p in _payloads(plan_trials(study), study, tmp_path).values()]
    assert order == [6, 2]  # the pack of three cells x 2 seeds, then d_h 8 (listed last in the study)


def test_a_required_pack_of_cells_of_different_shapes_is_refused_naming_the_cell(tmp_path, capsys):
    study = {
        **STUDY,
        "pack": ["width_and_lr"],
        "ablations": {"width_and_lr": {"axes": {"model.init_args.d_h": [8, 16]}}},
    }
    path = _write(tmp_path, study)
    with pytest.raises(StudyError, match=r"pack: ablation 'width_and_lr': cell c\w+ \(d_h=16\) cannot"):
        plan_trials(load_study(path))
    capsys.readouterr()
    # The verb, in this process (refused before Ray is imported: a process of its own would add only
    # its imports).
    assert main(["study", "run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "model.init_args.d_h is 16 there, 8 in the others" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out" / "runs").exists()


def test_a_folder_resumes_packed_or_not_as_it_was_started(tmp_path, capsys):
    path = _write(tmp_path, {**STUDY, "ablations": {"lr": STUDY["ablations"]["lr"]}})
    study = load_study(path)
    prepare_folder(study, tmp_path / "out", force=False)
    planned = json.loads((tmp_path / "out" / "study.json").read_text())
    assert planned["study"]["pack"] is True and all(t["pack"] for t in planned["trials"])
    study.pack = False  # `study run --no-pack` on a folder started packed
    prepare_folder(study, tmp_path / "out", force=False)
    assert study.pack is True and "was started packed, and resumes so" in capsys.readouterr().err
    assert json.loads((tmp_path / "out" / "study.json").read_text()) == planned


def test_a_packs_final_result_is_its_members_mean():
    """Ray's last result for a packed trial, and the study's "done" line, is the mean over its members
    (it was the first member's alone: 228.6 said for a pack whose members averaged 227.8)."""
    from yahtzee_lightning.study.running.trial import final_metrics

    def summary(score: float, bonus: float) -> dict:
        return {"score": {"mean": score}, "upper_bonus_rate": bonus, "yahtzee_rate": 0.3}

    members = [{"summary": summary(s, b)} for s, b in ((228.6, 0.5), (226.9, 0.7), (229.0, 0.6))]
    pack = final_metrics({"games": 900, "summary": members[0]["summary"], "members": members})
    assert pack["final/mean_score"] == pytest.approx((228.6 + 226.9 + 229.0) / 3)
    assert pack["eval/mean_score"] == pack["final/mean_score"]
    assert pack["final/upper_bonus_rate"] == pytest.approx(0.6) and pack["final/members"] == 3
    single = final_metrics({"games": 900, "summary": summary(201.0, 0.4)})
    assert single["final/mean_score"] == 201.0 and single["final/members"] == 1
    assert final_metrics({"games": 0, "summary": None}) == {"done": 1.0, "final/games": 0.0}
