"""``yahtzee-lightning expert-iteration``: the loop from nothing in one command, resumed where it was
killed, never reading the exact table, and bad settings refused in one line before any training."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
import yaml

from yahtzee_lightning.commands import expert_iteration, iteration_record
from yahtzee_lightning.commands.iteration_config import read_loop_config
from yahtzee_lightning.commands.iteration_record import LoopState, timed_step

SMOKE = Path(__file__).resolve().parents[2] / "conf" / "expert_iteration_loop_smoke.yaml"


def loop_config(tmp_path: Path, **changes) -> Path:
    """The smoke config, its output in ``tmp_path``, with ``changes`` (``section.key`` for a section's key)."""
    data = yaml.safe_load(SMOKE.read_text())
    data["out"] = str(tmp_path / "loop")
    for key, value in changes.items():
        section, _, name = key.partition("__")
        if name:
            data[section] = {**(data.get(section) or {}), name: value}
        else:
            data[section] = value
    path = tmp_path / "loop.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def digests(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by its sha256 and its modification time."""
    return {
        str(p.relative_to(folder)): f"{hashlib.sha256(p.read_bytes()).hexdigest()} {p.stat().st_mtime_ns}"
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


def test_the_loop_runs_from_nothing_to_an_agent_without_the_exact_table(tmp_path, no_table, capsys):
    from yahtzee_lightning.hub import YahtzeeAgent

    config = loop_config(tmp_path)
    assert expert_iteration.main(["--config", str(config)]) == 0
    out = tmp_path / "loop"
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("stage ")]
    assert [line.split()[1] for line in lines] == ["0/2", "1/2", "2/2"]  # a progress line per stage
    assert all("network" in line and "search" in line and "held-out error" in line for line in lines)
    history = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
    assert [row["stage"] for row in history] == [0, 1, 2]
    assert all(row["eval_seed"] == 7 and row["search"]["mean"] > 0 for row in history)
    # The value's TD rounds went on after stage 1 (the schedule) and not after stage 2's search-taught fit.
    state = json.loads((out / "loop_state.json").read_text())
    assert state["stages"]["1"]["value"]["updated"] and not state["stages"]["2"]["value"]["updated"]
    assert (out / "stages.png").stat().st_size > 1000
    agent = YahtzeeAgent.from_pretrained(out / "agent")
    assert agent.turn_value is not None and agent.net.config["d_h"] == 16
    assert [row["stage"] for row in agent.training["stages"]] == [0, 1, 2]
    assert agent.training["games"] == 32 + 2 * 8
    card = (out / "agent" / "README.md").read_text()
    assert "| stage | network alone | with its search |" in card and "expert-iteration --config" in card
    assert (out / "agent" / "loop.yaml").is_file()  # the recipe beside the weights


@pytest.mark.slow("a tiny loop run whole and again killed at each step: about 25 s")
def test_a_killed_loop_resumes_with_the_same_command_and_loses_nothing(tmp_path, monkeypatch, capsys, default_table):
    config = loop_config(tmp_path, judge_games=6)  # judged at the end: the exact table, read once the loop is done
    out = tmp_path / "loop"
    assert expert_iteration.main(["--config", str(config), "--stop-after", "1"]) == 0
    assert not (out / "stage_2").exists() and not (out / "agent").exists()
    before = {stage: digests(out / f"stage_{stage}") for stage in (0, 1)}

    def killed(*args, **kwargs):  # a kill in stage 2, after its fit, export and value were done
        raise KeyboardInterrupt

    monkeypatch.setattr(expert_iteration, "evaluate_stage", killed)
    with pytest.raises(KeyboardInterrupt):
        expert_iteration.main(["--config", str(config)])
    monkeypatch.undo()
    fits = []
    real_fit = expert_iteration.fit_stage
    monkeypatch.setattr(expert_iteration, "fit_stage", lambda *a: fits.append(a[-1]) or real_fit(*a))
    capsys.readouterr()
    assert expert_iteration.main(["--config", str(config)]) == 0
    assert fits == []  # stage 2's fit was finished before the kill: not run again
    assert [line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("stage ")] == ["2/2"]
    assert {stage: digests(out / f"stage_{stage}") for stage in (0, 1)} == before
    assert [json.loads(line)["stage"] for line in (out / "history.jsonl").read_text().splitlines()] == [0, 1, 2]
    card = (out / "agent" / "README.md").read_text()  # both numbers on the judged agent's card
    assert "| statistic | lookahead | network alone |" in card and "## Evaluation against the exact optimum" in card


def test_the_shipped_loop_config_is_valid_and_teaches_a_wide_student_from_nothing():
    config = read_loop_config("expert_iteration_loop")  # by name, as from an installed package
    assert (config.student["settings"]["d_h"], config.student["settings"]["n_layers"]) == (256, 3)
    stages = [expert_iteration.stage_recipe(config, Path("out"), k)["model"]["init_args"] for k in (0, 1, 2)]
    assert [s.get("init_from") for s in stages] == [None, None, str(Path("out/stage_1/agent").resolve())]
    assert all(s["final_eval_games"] == 0 and s["diagnose_games"] == 0 for s in stages)  # never the table
    assert stages[1]["value_from"] == str(Path("out/stage_0/agent").resolve()) and stages[1]["lr"] == 0.001


def test_a_loop_may_be_extended_but_not_changed():
    """The state's digest leaves out the stage count (a resume with more stages goes on from the last)
    and the output folder; any other setting changes it."""
    config = read_loop_config(str(SMOKE))

    def digest(**changes) -> str:
        return dataclasses.replace(config, raw={**config.raw, **changes}).digest()

    assert digest() == digest(stages=5) == digest(out="elsewhere")
    assert digest() != digest(games_per_stage=16) and digest() != digest(seed=1)


@pytest.mark.slow("a tiny loop run, then extended by one stage: about 18 s")
def test_a_finished_loop_extended_by_a_stage_goes_on_from_its_last(tmp_path, capsys):
    from yahtzee_lightning.hub import YahtzeeAgent

    out = tmp_path / "loop"
    assert expert_iteration.main(["--config", str(loop_config(tmp_path, stages=1, value_updates__after=[]))]) == 0
    first = digests(out / "stage_1")
    assert expert_iteration.main(["--config", str(loop_config(tmp_path, stages=2, value_updates__after=[]))]) == 0
    fit = yaml.safe_load((out / "stage_2" / "fit.yaml").read_text())["model"]["init_args"]
    assert fit["init_from"] == str((out / "stage_1" / "agent").resolve())  # from the last stage, not anew
    assert digests(out / "stage_1") == first
    agent = YahtzeeAgent.from_pretrained(out / "agent")  # written again, after the new last stage
    assert [row["stage"] for row in agent.training["stages"]] == [0, 1, 2]


def test_a_resume_under_another_config_is_refused_before_training(tmp_path, capsys):
    first = read_loop_config(str(loop_config(tmp_path)))
    (tmp_path / "loop").mkdir()
    LoopState(tmp_path / "loop", first.digest(), first.raw).write()  # a loop of these settings ran there
    other = loop_config(tmp_path, games_per_stage=32)
    with pytest.raises(SystemExit) as raised:
        expert_iteration.main(["--config", str(other)])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert "holds a loop of other settings" in err and err.count("\n") == 1
    assert sorted(p.name for p in (tmp_path / "loop").iterdir()) == ["loop_state.json"]  # nothing trained


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"games_per_stage": 0}, "games_per_stage must be a whole number >= 1"),
        ({"stages": 0}, "stages must be a whole number >= 1"),
        ({"self_play__games": 0}, "self_play.games must be a whole number >= 1"),
        ({"value_updates__td_rounds": 0}, "value_updates.td_rounds must be"),
        ({"eval_games": 0}, "eval_games must be"),
        ({"value_updates__after": [2]}, "between stages 1..1"),
        ({"eval_seed": 1}, "eval_seed 1 is a seed of other games"),
        ({"value_updates__games_from": "optimal"}, "games_from must be one of"),
        ({"stage_count": 3}, "unknown settings ['stage_count']"),
        ({"student__settings": {"dh": 3}}, "unknown key 'dh'"),  # fit's own check, before stage 0 trains
        ({"value__td_keep": "first"}, "td_keep must be one of"),
        # Settings by which the loop would read the exact table, or start from an agent made elsewhere:
        ({"student__settings": {"diagnose_games": 4}}, "diagnose_games 4: would read the exact table"),
        ({"self_play__settings": {"final_eval_games": 10}}, "final_eval_games 10: would read the exact table"),
        ({"student__settings": {"teacher": "optimal"}}, "teacher 'optimal': the teacher is the search"),
        ({"self_play__recipe": "conf/distill_small.yaml"}, "trains Distill, whose teacher is the exact table"),
        ({"student__recipe": "conf/distill.yaml"}, "student.recipe must train ExpertIteration"),
        ({"value__diagnostic_games": 100}, "unknown settings ['diagnostic_games'] in value"),
        ({"student__settings": {"init_from": "checkpoints/distilled-256x3"}}, "the loop sets these itself"),
    ],
)
def test_bad_settings_are_refused_in_one_line_before_training(tmp_path, capsys, changes, why):
    with pytest.raises(SystemExit) as raised:
        expert_iteration.main(["--config", str(loop_config(tmp_path, **changes))])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1, err
    assert not (tmp_path / "loop").exists()  # refused before anything was written


def test_a_killed_step_keeps_its_seconds_and_its_resume_adds_to_them(tmp_path, monkeypatch):
    """The loop's wall clock from nothing counts the time a kill cost: a step's seconds so far are in
    the state every heartbeat while it runs (a kill the process cannot see) and when it ends early
    (one it can); the resumed step's record holds both runs' seconds, and says how many came first."""
    import time

    monkeypatch.setattr(iteration_record, "HEARTBEAT_S", 0.02)
    state = LoopState(tmp_path, "digest", {})
    with timed_step(state, 1, "fit"):
        time.sleep(0.2)
        on_disk = json.loads((tmp_path / "loop_state.json").read_text())  # as a SIGKILL would leave it
        assert on_disk["running"]["step"] == "fit" and 0.0 < on_disk["running"]["seconds"] <= 0.2
    with pytest.raises(KeyboardInterrupt), timed_step(state, 1, "value"):
        time.sleep(0.1)
        raise KeyboardInterrupt  # Ctrl-C, or an error
    resumed = LoopState(tmp_path, "digest", {})  # the next run of the same command
    before = resumed.interrupted(1, "value")
    assert before >= 0.1 and resumed.interrupted(1, "fit") == 0.0  # only the step that was running
    with timed_step(resumed, 1, "value") as elapsed:
        time.sleep(0.05)
    resumed.record(1, "value", expert_iteration.step_record({}, elapsed(), before))
    record = LoopState(tmp_path, "digest", {}).done(1, "value")
    assert record["seconds"] >= 0.15 and record["seconds_before_a_kill"] == round(before, 1)
    assert "running" not in json.loads((tmp_path / "loop_state.json").read_text())  # finished: nothing in flight


def test_a_value_update_that_would_repeat_one_that_kept_its_start_is_skipped(tmp_path, monkeypatch):
    """On stage 0's games with the value's own seed, TD rounds from the same value give the same rounds:
    an update that kept the value it started from (its best round the warm start) would keep it again
    from there. The real run measured it: stage 2's rounds repeated stage 1's to the digit."""
    config = read_loop_config(str(loop_config(tmp_path, stages=4, value_updates__after=[1, 2, 3])))
    state = LoopState(tmp_path, "digest", {})
    for stage, sha in ((0, "A"), (1, "A")):  # stage 1's update kept stage 0's value, A
        state.record(stage, "value", {"updated": True})
        state.record(stage, "evaluate", {"value_sha256": sha})
    assert expert_iteration.repeated_update(config, state, 2, "A") == 1
    assert expert_iteration.repeated_update(config, state, 2, "B") is None  # another start: rounds of their own
    state.record(1, "evaluate", {"value_sha256": "B"})  # had stage 1's update learned something, B
    assert expert_iteration.repeated_update(config, state, 2, "B") is None
    state.record(1, "evaluate", {"value_sha256": "A"})
    own_games = dataclasses.replace(config, value_updates={**config.value_updates, "games_from": "stage"})
    assert expert_iteration.repeated_update(own_games, state, 2, "A") is None  # each stage's games differ

    agent = tmp_path / "loop" / "stage_2" / "agent"
    agent.mkdir(parents=True)
    (agent / "config.json").write_text(json.dumps({"turn_value": {"turn_value_sha256": "A"}}))
    from yahtzee_lightning.commands import turn_value

    monkeypatch.setattr(turn_value, "main", lambda argv: pytest.fail("the TD rounds ran again"))
    record = expert_iteration.learn_value(config, tmp_path / "loop", 2, state)
    assert record["updated"] is False and "stage 1's" in record["skipped"]
