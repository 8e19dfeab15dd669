"""The faithful study and its hypotheses: the paper's own settings per algorithm, its claims written
down as tests before the runs, and a hypothesis naming a cell or metric the study lacks refused in one
line by ``study check``, before anything trains."""

import re
from pathlib import Path

import pytest
import yaml

from yahtzee_lightning.commands.study import main
from yahtzee_lightning.study.model import StudyError
from yahtzee_lightning.study.running.runner import plan_trials
from yahtzee_lightning.study.spec import load_study

ROOT = Path(__file__).resolve().parents[2]
FAITHFUL = ROOT / "conf" / "study" / "paper_faithful.yaml"


def _paper_columns() -> dict[str, dict[str, list[float]]]:
    """docs/hyperparameters.md's table of the three algorithms: key -> algorithm -> the values in its cell."""
    text = (ROOT / "docs" / "hyperparameters.md").read_text()
    out: dict[str, dict[str, list[float]]] = {}
    for line in text.splitlines():
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) == 5 and cols[0].startswith("`") and cols[0] != "key":
            keys = re.findall(r"`(\w+)`", cols[0])
            for algo, cell in zip(("reinforce", "a2c", "ppo"), cols[2:], strict=True):
                values = [float(v) for v in re.findall(r"[\d.e-]+", cell)]
                for key, value in zip(keys, values, strict=True):
                    out.setdefault(key, {})[algo] = value
    return out


@pytest.mark.parametrize("algo", ["reinforce", "a2c", "ppo"])
def test_each_algorithm_config_is_the_papers_column(algo):
    columns = _paper_columns()
    assert {"lr", "lambda_v", "beta_roll_max", "entropy_anneal", "tau_clip"} <= set(columns)
    args = yaml.safe_load((ROOT / "conf" / f"{algo}.yaml").read_text())["model"]["init_args"]
    for key, by_algo in columns.items():
        assert float(args[key]) == pytest.approx(by_algo[algo]), (algo, key)
    shared = {"games_per_batch": 20, "dropout": 0.1, "layer_norm": True, "d_h": 600, "n_layers": 3}
    assert {k: args[k] for k in shared} == shared


@pytest.mark.parametrize("profile", ["smoke", "cpu", "full"])
def test_the_faithful_study_runs_each_algorithm_at_its_own_settings_sharing_the_rest(profile):
    study = load_study(FAITHFUL, profile)
    cells = {labels["algorithm"]: study.cells[c] for c, labels in study.ablations["algorithm"].cells}
    assert {Path(c.base).name for c in cells.values()} == {"reinforce.yaml", "a2c.yaml", "ppo.yaml"}
    assert cells["a2c"].gae_lambda == 0.0  # the paper's A2C: the one-step TD error
    # Every cell gets the same overrides on top of its algorithm's own config (the A2C's lambda aside).
    shared = [{k: v for k, v in c.overrides.items() if k != "model.init_args.gae_lambda"} for c in cells.values()]
    assert shared[0] == shared[1] == shared[2]
    assert len({c.total_games for c in cells.values()}) == 1
    if profile != "smoke":
        assert len(study.ablations["algorithm"].seeds) >= 6
        assert all(c.total_games >= 500_000 for c in cells.values())


def test_the_cpu_profile_splits_each_algorithms_seeds_over_the_cores():
    study = load_study(FAITHFUL, "cpu")
    trials = plan_trials(study)
    assert sorted(len(t.seeds) for t in trials) == [3] * 6
    assert {s for t in trials for s in t.seeds} == set(range(6))


def test_the_papers_claims_are_hypotheses_with_a_direction():
    study = load_study(FAITHFUL, "cpu")
    h = study.hypotheses
    assert h["H1"].compare == ["a2c", "reinforce"] and h["H1"].direction == "greater"
    assert h["H2"].direction == "either"  # the drafts disagree
    assert h["H11a"].metric == "median" and h["H11a"].compare == ["a2c", 241.78]
    assert {x.against() for x in h.values()} == {"cell", "player", "value"}


def _study(tmp_path: Path, hypothesis: dict) -> Path:
    data = yaml.safe_load(FAITHFUL.read_text())
    data["hypotheses"] = {"H9": {"claim": "x", "ablation": "algorithm", "metric": "mean_score", **hypothesis}}
    for key in ("base",):
        data[key] = str(ROOT / data[key])
    axes = data["ablations"]["algorithm"]["axes"]["algorithm"]
    for value in axes.values():
        value["config"] = str(ROOT / value["config"])
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    "hypothesis, says",
    [
        ({"compare": ["a2c_gae", "reinforce"]}, r"hypotheses\.H9\.compare: no cell 'a2c_gae' in ablation 'algorithm'"),
        ({"compare": ["a2c", "dqn"]}, r"hypotheses\.H9\.compare: no cell 'dqn'"),
        ({"compare": ["a2c", "ppo"], "metric": "win_rate"}, r"hypotheses\.H9\.metric: no metric 'win_rate'"),
        ({"compare": ["a2c", "ppo"], "metric": "box_mean/sevens"}, r"hypotheses\.H9\.metric: no metric"),
        ({"compare": ["a2c", "ppo"], "ablation": "entropy"}, r"hypotheses\.H9\.ablation: no ablation 'entropy'"),
        ({"compare": ["a2c", "greedy"], "metric": "regret_per_game"}, r"the greedy player has no 'regret_per_game'"),
        ({"compare": ["a2c", "ppo"], "direction": "up"}, r"hypotheses\.H9\.direction: must be one of"),
        ({"compare": ["a2c", 200], "statistic": "spread"}, r"a spread over seeds is compared between two cells"),
    ],
)
def test_a_hypothesis_naming_what_the_study_lacks_is_refused_in_one_line(tmp_path, capsys, hypothesis, says):
    path = _study(tmp_path, hypothesis)
    with pytest.raises(StudyError, match=says):
        load_study(path, "smoke")
    assert main(["check", str(path), "--profile", "smoke"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(says, err)


def test_run_refuses_a_bad_hypothesis_before_anything_is_written(tmp_path, capsys):
    path = _study(tmp_path, {"compare": ["a2c", "dqn"]})
    out = tmp_path / "out"
    assert main(["run", str(path), "--profile", "smoke", "--out", str(out)]) == 2
    assert not out.exists()
    assert "no cell 'dqn'" in capsys.readouterr().err


def test_members_per_trial_caps_a_pack(tmp_path):
    study = {
        "name": "cap",
        "base": str(ROOT / "conf" / "a2c_cpu.yaml"),
        "seeds": [0, 1],
        "profiles": {"smoke": {"set": {"model.init_args.total_games": 64}}},
        "ablations": {"lr": {"axes": {"model.init_args.lr": [0.001, 0.002, 0.003]}}},
        "exhibits": {"F2": "lr"},
    }
    sizes = {}
    for cap in (0, 4, 1):
        path = tmp_path / f"cap{cap}.yaml"
        path.write_text(yaml.safe_dump({**study, "members_per_trial": cap}))
        trials = plan_trials(load_study(path))
        runs: dict[str, int] = {}
        for t in trials:
            runs[t.pack or t.run_dir] = runs.get(t.pack or t.run_dir, 0) + len(t.seeds)
        sizes[cap] = sorted(runs.values())
    assert sizes == {0: [6], 4: [2, 4], 1: [1] * 6}  # no cap: one pack of 3 cells x 2 seeds
    path.write_text(yaml.safe_dump({**study, "members_per_trial": -1}))
    with pytest.raises(StudyError, match="members_per_trial: must be an integer >= 1"):
        load_study(path)


def test_a_report_before_any_run_finished_lists_the_hypotheses_it_will_test(tmp_path):
    from yahtzee_lightning.study.drawing.report import write_report
    from yahtzee_lightning.study.running.runner import prepare_folder

    study = load_study(FAITHFUL, "smoke")
    prepare_folder(study, tmp_path, force=False)
    index = write_report(tmp_path).read_text()
    assert "No member has finished yet" in index
    assert "* H1: A2C (TD(0)) performs better than REINFORCE (claim 1) (a2c vs reinforce, mean_score, greater)" in index


def test_describe_writes_each_hypothesis_in_words():
    from yahtzee_lightning.commands.study import describe

    study = load_study(ROOT / "conf" / "study" / "paper_code.yaml", "smoke")
    text = describe(study)
    directions = {h.id: h.direction for h in study.hypotheses.values()}
    assert {"equal", "greater", "either"} <= set(directions.values())
    for hid, direction in directions.items():
        line = next(x for x in text.splitlines() if x.startswith(f"hypothesis {hid}:"))
        words = {
            "greater": " greater than ",
            "less": " less than ",
            "either": " different from ",
            "equal": " equal to ",
        }
        assert words[direction] in line, line
