"""Chained cells (transfer): an ablation whose agents start, seed by seed, from another cell's trained
agents; planned after their sources, one seed a trial; bad ``start_from`` refused in one line."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file
from tiny_study import TINY  # noqa: E402  (tests/ is on the path: conftest.py)

from yahtzee_lightning.algorithms import ALGORITHMS
from yahtzee_lightning.loop.export import agent_from_checkpoint
from yahtzee_lightning.study.chain import scratch_twin, start_weights
from yahtzee_lightning.study.drawing.aggregates import table_improvement
from yahtzee_lightning.study.drawing.report import beside_the_mean
from yahtzee_lightning.study.judging.claims import write_claims
from yahtzee_lightning.study.judging.context import Context, agents
from yahtzee_lightning.study.model import StudyError
from yahtzee_lightning.study.results import load_plan, load_table
from yahtzee_lightning.study.running.runner import plan_trials
from yahtzee_lightning.study.spec import load_study

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"


def _write(tmp_path: Path, transfer: dict, name: str = "chain", scratch: bool = False) -> Path:
    """A single-turn ablation and a chain from it (``scratch``: and the chain's settings from a random start)."""
    study = {
        "name": "chain",
        "seeds": [0, 1],
        "profiles": {"smoke": {"set": TINY}},
        "ablations": {
            "single_turn": {"base": f"{CONF}/single_turn.yaml", "axes": {"model.init_args.lr": [0.001, 0.003]}},
            **({"scratch": {"base": f"{CONF}/reinforce_cpu.yaml"}} if scratch else {}),
            "transfer": {"base": f"{CONF}/reinforce_cpu.yaml", **transfer},
        },
        "exhibits": {"T1": "all"},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(study))
    return path


START = {"start_from": {"ablation": "single_turn", "cell": {"lr": 0.003}}}


@pytest.fixture
def chained(tmp_path):
    return _write(tmp_path, START)


def test_a_chained_cell_trains_a_trial_per_seed_after_its_source(chained):
    study = load_study(chained)
    ab = study.ablations["transfer"]
    source = next(
        cid for cid, labels in study.ablations["single_turn"].cells if labels["model.init_args.lr"] == "0.003"
    )
    assert ab.start_from == source and study.cells[ab.cells[0][0]].start_from == source
    trials = plan_trials(study)
    chain = [t for t in trials if t.experiment == "transfer"]
    assert [t.seeds for t in chain] == [[0], [1]]  # each seed from its own agent: never an ensemble
    assert all(t.experiment == "cells" for t in trials if t not in chain)
    # Progress lines name a chained trial by where it starts, as the report's legends do (not "base").
    from yahtzee_lightning.study.running.runner import _trial_labels

    assert {_trial_labels(study)[t.name] for t in chain} == {"(transfer: fine-tuned from single-turn agents)"}
    # The same settings from a random start are another cell.
    scratch = load_study(_write(chained.parent, {}, "scratch"))
    assert ab.cells[0][0] not in scratch.cells


@pytest.mark.parametrize(
    ("start_from", "key", "problem"),
    [
        ({"ablation": "nowhere"}, "transfer.start_from.ablation", "no ablation 'nowhere' above"),
        ({"ablation": "single_turn"}, "transfer.start_from.cell", "names 2 of"),
        ({"ablation": "single_turn", "cell": {"lr": 0.5}}, "transfer.start_from.cell", "names 0 of"),
        ({"ablation": "single_turn", "cell": {"beta": 1}}, "transfer.start_from.cell.beta", "has no axis 'beta'"),
        ("single_turn", "transfer.start_from", "must be a mapping"),
    ],
)
def test_a_bad_start_from_fails_in_one_line_naming_the_key(tmp_path, start_from, key, problem):
    with pytest.raises(StudyError) as e:
        load_study(_write(tmp_path, {"start_from": start_from}))
    message = str(e.value)
    assert "\n" not in message and key in message and problem in message


def test_a_chain_whose_network_cannot_take_its_sources_weights_is_refused_before_training(tmp_path):
    path = _write(tmp_path, {**START, "axes": {"model.init_args.roll_head": ["bernoulli"]}})
    with pytest.raises(StudyError) as e:
        load_study(path)
    assert "\n" not in str(e.value) and "transfer.start_from" in str(e.value) and "differ in roll_head" in str(e.value)
    load_study(_write(tmp_path, {**START, "set": {"model.init_args.dropout": 0.2}}))  # dropout alone: no weights


def test_a_chain_needs_its_seeds_trained_by_its_source(tmp_path):
    path = _write(tmp_path, {"start_from": {"ablation": "single_turn", "cell": {"lr": 0.001}}, "seeds": [0, 7]})
    with pytest.raises(StudyError, match=r"seeds \[7\] are not trained in 'single_turn'"):
        load_study(path)


def test_a_chain_whose_source_has_not_finished_is_refused(tmp_path):
    with pytest.raises(RuntimeError, match="has not finished"):
        start_weights(tmp_path / "run", {"run_dir": str(tmp_path / "source"), "member": 0})
    assert not (tmp_path / "run" / "start").exists()


@pytest.mark.slow("a chained Ray study, each seed from its source: about 35 s")
def test_each_chained_run_starts_from_its_own_seeds_source_agent(tmp_path, default_table):
    chained = _write(tmp_path, START, scratch=True)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "yahtzee_lightning.cli", "study", "run", str(chained), "--out", str(out)]
    done = subprocess.run([*command, "--cpus", "1"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    study, trials = load_plan(out)
    source = study.ablations["transfer"].start_from
    table = load_table(out)
    finals = table[(table["stage"] == "final") & (table["cell"] == study.ablations["transfer"].cells[0][0])]
    assert sorted(finals["seed"]) == [0, 1] and set(finals["status"]) == {"done"}
    starts = []
    for seed in (0, 1):
        run = next(t for t in trials if t.experiment == "transfer" and t.seeds == [seed])
        config = yaml.safe_load((out / run.run_dir / "config.yaml").read_text())
        assert config["model"]["init_args"]["init_from"] == str(out / run.run_dir / "start")
        origin = next(t for t in trials if t.cell == source and seed in t.seeds)  # a pack of both lrs' seeds
        member = origin.members[origin.seeds.index(seed)]
        expected = agent_from_checkpoint(
            out / origin.run_dir / "checkpoints" / "last.ckpt", str(member), algorithms=ALGORITHMS
        ).net
        started = load_file(out / run.run_dir / "start" / "model.safetensors")
        assert all(torch.equal(started[k], v) for k, v in expected.state_dict().items())
        starts.append(started)
    assert not all(torch.equal(starts[0][k], starts[1][k]) for k in starts[0])  # each seed its own source
    # The report's agents: the fine-tuned cell is a row of its own, named for what it started from.
    ctx = Context(out)
    rows = {s.cell: s.label for s in agents(ctx, list(ctx.study.ablations))}
    assert "fine-tuned from single-turn agents" in rows[study.ablations["transfer"].cells[0][0]]
    assert any("single-turn, transferred" in label for label in rows.values())  # the best single-turn cell
    # ... and in the ablation's legends too (a chained cell without axes; not "base").
    assert ctx.label(*study.ablations["transfer"].cells[0]) == "fine-tuned from single-turn agents"
    assert ctx.label(*study.ablations["single_turn"].cells[0]) == "lr=0.001"
    # The comparison a transfer is for: against its settings from a random start (the scratch cell),
    # in the claims and in A2, whose pairs never cross ablations otherwise.
    scratch = study.ablations["scratch"].cells[0][0]
    assert scratch_twin(study, study.ablations["transfer"].cells[0][0]) == ("scratch", scratch)
    write_claims(ctx, tmp_path / "claims.md")
    claims = [line for line in (tmp_path / "claims.md").read_text().splitlines() if line.startswith("| transfer |")]
    assert len(claims) == 1 and "vs the same settings from a random start (scratch: base)" in claims[0]
    assert beside_the_mean(study)["A2"] == ["scratch", "single_turn", "transfer"]  # a chain, and its twin
    table_improvement(ctx, ["single_turn", "scratch", "transfer"], tmp_path / "A2.md")
    pairs = [line.split(" | ")[:2] for line in (tmp_path / "A2.md").read_text().splitlines()[2:]]
    assert pairs == [
        ["| single_turn: lr=0.001", "single_turn: lr=0.003"],
        ["| transfer: fine-tuned from single-turn agents", "scratch: base"],
    ]


def test_a_stopped_experiment_keeps_the_chain_after_it_waiting(chained, tmp_path, monkeypatch):
    """A study stopped (a signal) in its first experiment does not go on to the chained one, whose
    sources have not finished; one whose trials failed (each with its error.txt) does."""
    from yahtzee_lightning.study.running import runner

    study = load_study(chained)
    ran = []
    monkeypatch.setattr(runner, "init_ray", lambda address, cpus: 1)
    monkeypatch.setattr(runner, "run_experiment", lambda name, *args, **kwargs: ran.append(name))  # nothing ends
    assert runner.run_study(study, tmp_path / "stopped") == 0
    assert ran == ["cells"]

    def failing(name, trials, *args, **kwargs):
        ran.append(name)
        for t in trials:
            (tmp_path / "failed" / t.run_dir).mkdir(parents=True, exist_ok=True)
            (tmp_path / "failed" / t.run_dir / "error.txt").write_text("RuntimeError: a failed trial\n")

    ran.clear()
    monkeypatch.setattr(runner, "run_experiment", failing)
    runner.run_study(study, tmp_path / "failed")
    assert ran == ["cells", "transfer"]

    # The stopped study resumed with its first experiment finished: the count starts at the runs done.
    from yahtzee_lightning.study.records import final_text

    plan = plan_trials(study)
    for t in plan:
        if t.experiment == "cells":
            (tmp_path / "stopped" / t.run_dir).mkdir(parents=True, exist_ok=True)
            (tmp_path / "stopped" / t.run_dir / "final.json").write_text(final_text({"cell": t.cell}))
    ran.clear()
    runner.run_study(study, tmp_path / "stopped")
    done = len({t.pack or t.name for t in plan if t.experiment == "cells"})
    assert ran == ["transfer"] and runner._PROGRESS.ended == done > 0
    assert runner._PROGRESS.total == len({t.pack or t.name for t in plan})
