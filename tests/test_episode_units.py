"""A single-turn run trains on turns (an episode is one turn): every place that says a budget says so,
where the check listing, the plan line and the report called 3,380,000 turns "games" (thirteen times
the training)."""

from yahtzee_lightning.game.rules import episodes_text


def test_a_budget_is_said_in_its_tasks_own_unit():
    assert episodes_text(3_380_000, "single_turn") == "3,380,000 turns"
    assert episodes_text(250_000.0, "full_game") == "250,000 games"


def test_the_plan_line_counts_a_single_turn_runs_batches_and_budget_in_turns():
    from yahtzee_lightning.algorithms import Reinforce

    turns = Reinforce(d_h=8, n_layers=1, head_hidden=8, total_games=520, games_per_batch=26, task="single_turn")
    plan = turns.plan_line()
    assert "x 26 turns a batch = 26 turns an update; 20 updates (520 turns)" in plan
    assert "games a batch" not in plan and "an evaluation of" in plan  # the evaluations play whole games
    games = Reinforce(d_h=8, n_layers=1, head_hidden=8, total_games=40, games_per_batch=8).plan_line()
    assert "x 8 games a batch = 8 games an update; 5 updates (40 games)" in games


def test_study_check_lists_a_single_turn_cells_budget_in_turns(capsys):
    from pathlib import Path

    from yahtzee_lightning.commands.study import main

    study = Path(__file__).resolve().parents[1] / "conf" / "study" / "paper_code.yaml"
    assert main(["check", str(study), "--profile", "paper"]) == 0
    listing = capsys.readouterr().out
    assert "[Reinforce, single_turn, 3,380,000 turns]" in listing and "single_turn, 3,380,000 games" not in listing
    assert "[A2C, full_game, 250,000 games]" in listing
