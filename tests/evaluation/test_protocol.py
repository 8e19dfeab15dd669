"""The evaluation protocol: repeatable, regret adds up, the CLI writes its report."""

import json

import pytest
import torch

from yahtzee_lightning.cli import main
from yahtzee_lightning.evaluation import evaluate, to_json
from yahtzee_lightning.evaluation.protocol import summarize
from yahtzee_lightning.evaluation.report import table_rows
from yahtzee_lightning.game import BOX_NAMES, Rules
from yahtzee_lightning.hub import YahtzeeAgent
from yahtzee_lightning.nn import PolicyValueNet
from yahtzee_lightning.players import GreedyPlayer, OptimalPlayer


def test_same_seed_same_numbers(default_table):
    a = to_json(evaluate(GreedyPlayer(), games=300, seed=4, with_optimal=False))
    b = to_json(evaluate(GreedyPlayer(), games=300, seed=4, with_optimal=False))
    c = to_json(evaluate(GreedyPlayer(), games=300, seed=5, with_optimal=False))
    assert a == b and a != c


def test_regret_of_the_optimum_is_zero_and_greedy_regret_adds_up(default_table):
    opt = evaluate(OptimalPlayer(table=default_table), games=300, seed=1, with_optimal=False)["summary"]
    assert opt["regret"]["per_game_mean"] < 1e-9
    res = evaluate(GreedyPlayer(), games=1500, seed=1)
    s = res["summary"]
    # Expected total regret = optimum - expected score of the player.
    gap = res["optimal"]["exact_expected_score"] - s["score"]["mean"]
    assert abs(s["regret"]["per_game_mean"] - gap) < 4 * s["score"]["se"]
    assert s["regret"]["keep_mean"] > 0 and s["regret"]["box_mean"] > 0
    assert abs(sum(b["first_box_share"] for b in s["boxes"].values()) - 1) < 1e-9


def test_fill_turn_share_counts_the_games_that_fill_each_box_at_each_turn():
    # three hand-made games: game 0 fills box b at turn b, games 1 and 2 in the reverse order
    order = torch.arange(13)
    raw = {
        "card": torch.zeros(3, 13, dtype=torch.int64),
        "bonuses": torch.zeros(3, dtype=torch.int64),
        "fill_turn": torch.stack([order, order.flip(0), order.flip(0)]),
    }
    boxes = summarize(raw, Rules())["boxes"]
    assert boxes["ones"]["fill_turn_share"][0] == pytest.approx(1 / 3)
    assert boxes["ones"]["fill_turn_share"][12] == pytest.approx(2 / 3)
    assert boxes["chance"]["fill_turn_share"][0] == pytest.approx(2 / 3)
    assert boxes["chance"]["first_box_share"] == pytest.approx(2 / 3)  # the first turn's share is the first box's
    assert boxes["four_of_a_kind"]["fill_turn_share"][5] == pytest.approx(2 / 3)  # 12 - 7 = 5
    assert all(len(b["fill_turn_share"]) == 13 for b in boxes.values())


def test_every_turn_of_a_played_game_fills_one_box():
    s = evaluate(GreedyPlayer(), games=200, seed=2, with_optimal=False)["summary"]
    shares = torch.tensor([b["fill_turn_share"] for b in s["boxes"].values()])  # (box, turn)
    assert torch.allclose(shares.sum(0), torch.ones(13), atol=1e-9)  # one box a turn
    assert torch.allclose(shares.sum(1), torch.ones(13), atol=1e-9)  # each box once a game
    for b in s["boxes"].values():
        assert b["fill_turn_share"][0] == pytest.approx(b["first_box_share"])


def test_the_table_names_the_box_each_player_fills_most_at_each_turn(default_table):
    res = evaluate(GreedyPlayer(), games=200, seed=2)
    rows = {r[0]: r[1:] for r in table_rows(res)}
    for t in range(13):
        players = (("greedy", res["summary"]), ("optimal", res["optimal"]))
        for (name, s), cell in zip(players, rows[f"turn {t + 1}: box filled most"], strict=True):
            shares = {b: v["fill_turn_share"][t] for b, v in s["boxes"].items()}
            box = max(shares, key=shares.get)
            assert cell == f"{box} {100 * shares[box]:.1f} %", name
    assert rows["turn 1: box filled most"][1].split()[0] != "four_of_a_kind"  # the optimum never opens with it


def test_table_breaks_the_regret_down_by_box_and_by_turn(default_table):
    res = evaluate(GreedyPlayer(), games=100, seed=3)
    rows = {r[0]: r[1:] for r in table_rows(res)}
    by_box = [float(v[0]) for k, v in rows.items() if k.startswith("regret scoring ")]
    by_turn = [float(v[0]) for k, v in rows.items() if k.startswith("regret in turn ")]
    assert len(by_box) == 13 and len(by_turn) == 13
    total = res["summary"]["regret"]["per_game_mean"]
    assert abs(sum(by_box) - total) < 0.1 and abs(sum(by_turn) - total) < 0.1  # both split the same total
    assert rows["regret in turn 1"][1] == "-"  # the optimal player's column loses nothing


def test_reduced_game_summary():
    res = evaluate(GreedyPlayer(Rules(boxes=(0, 12))), games=200, seed=0, rules=Rules(boxes=(0, 12)))
    assert set(res["summary"]["boxes"]) == {"ones", "chance"}
    assert res["summary"]["score"]["mean"] <= res["optimal"]["exact_expected_score"] + 5


def test_cli_table_json_and_report(tmp_path, capsys, default_table):
    assert main(["evaluate", "--agent", "random", "--games", "200", "--seed", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["agent"] == "random" and out["summary"]["games"] == 200 and "optimal" in out
    assert main(["evaluate", "--agent", "greedy", "--games", "100", "--report", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "greedy" in text and "optimal" in text and "regret per keep" in text
    for name in ("evaluation.json", "evaluation.md", "boxes.png", "scores.png"):
        assert (tmp_path / name).stat().st_size > 0
    markdown = (tmp_path / "evaluation.md").read_text()
    assert "![boxes](boxes.png)" in markdown and "![scores](scores.png)" in markdown  # the report shows its plots
    # Written again over its own files; a file of the user's at one of its names is never overwritten.
    (tmp_path / "notes.md").write_text("mine")
    assert main(["evaluate", "--agent", "greedy", "--games", "50", "--report", str(tmp_path)]) == 0
    (tmp_path / "evaluation.md").write_text("my edits")
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["evaluate", "--agent", "greedy", "--games", "50", "--report", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        e.value.code == 2 and len(err) == 1 and "evaluation.md there was not written by an evaluation report" in err[0]
    )
    assert (tmp_path / "evaluation.md").read_text() == "my edits" and (tmp_path / "notes.md").read_text() == "mine"


def test_cli_two_player_matches(capsys, default_table):
    assert main(["evaluate", "--agent", "greedy", "--players", "2", "--opponent", "random", "--games", "200"]) == 0
    out = capsys.readouterr().out
    assert "win rate" in out and "seats alternate" in out and "seated second" in out
    argv = ["evaluate", "--agent", "endgame:greedy", "--players", "2", "--opponent", "greedy", "--games", "20"]
    assert main([*argv, "--seat", "second", "--endgame-check", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["player"] == "endgame:greedy" and list(out["by_seat"]) == ["second"]
    assert out["endgame"]["decisions"] == 40 and out["endgame"]["agree"]["rate"] == 1
    # --batch-size: the same matches in smaller batches (each batch its own dice), a bad size named
    argv = ["evaluate", "--agent", "greedy", "--players", "2", "--games", "10"]
    assert main([*argv, "--batch-size", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["games"] == 10
    with pytest.raises(SystemExit):
        main([*argv, "--batch-size", "0"])
    assert "--batch-size must be >= 1" in capsys.readouterr().err


def test_cli_names_bad_arguments(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--agent", "genius", "--games", "10"])
    assert "unknown player 'genius'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate", "--boxes", "13", "--games", "10"])
    assert "Rules.boxes" in capsys.readouterr().err
    for players in ("0", "-2"):
        with pytest.raises(SystemExit):
            main(["evaluate", "--players", players, "--games", "10"])
        assert f"--players must be >= 1, got {players}" in capsys.readouterr().err
    # Every count has a bound that says why; a value error is one line and where the usage is, not the usage.
    for argv, message in (
        (["--players", "100000", "--games", "10"], "--players must be at most 8 (a match's length"),
        (["--games", "10000000000"], "--games must be at most 10,000,000 (every game's record is kept in memory"),
        (["--players", "2", "--batch-size", "10000000"], "--batch-size must be at most 65,536"),
        (["--games", "many"], "argument --games: invalid int value: 'many'"),
    ):
        with pytest.raises(SystemExit) as e:
            main(["evaluate", *argv])
        err = capsys.readouterr().err.strip().splitlines()
        assert e.value.code == 2 and len(err) == 1 and message in err[0], err
        assert err[0].endswith("(usage: yahtzee-lightning evaluate --help)")


def test_optimal_agent_is_its_own_optimal_column(default_table):
    res = to_json(evaluate(OptimalPlayer(table=default_table), games=200, seed=3))
    agent = {k: v for k, v in res["summary"].items() if k != "regret"}
    assert agent == {k: v for k, v in res["optimal"].items() if k != "exact_expected_score"}


def test_cli_evaluates_an_agent_under_its_own_rules(tmp_path, capsys):
    """An agent trained under other rules is evaluated under them; flags may restate, not change them."""
    rules = Rules(joker="forced", boxes=(0, 5, 8, 11, 12))  # five boxes: the optimal table solves in a blink
    torch.manual_seed(0)
    net = PolicyValueNet(d_h=16, n_layers=1, head_hidden=16, rules=rules.to_dict())
    folder = str(YahtzeeAgent(net, {"name": "tiny"}).save_pretrained(tmp_path / "tiny"))
    base = ["evaluate", "--agent", folder, "--games", "20", "--json"]
    for flags in ([], ["--joker", "forced"], ["--boxes", "12", "11", "8", "5", "0"]):
        assert main(base + flags) == 0
        out = json.loads(capsys.readouterr().out)
        assert Rules.from_dict(out["rules"]) == rules and out["summary"]["games"] == 20 and "optimal" in out
        assert set(out["summary"]["boxes"]) == {BOX_NAMES[b] for b in rules.boxes}
    for flags, asked in (
        (["--joker", "free"], "joker-free_bonus-on_boxes-0-5-8-11-12"),
        (["--boxes", "0", "12"], "joker-forced_bonus-on_boxes-0-12"),
        (["--no-yahtzee-bonus"], "joker-off_bonus-off_boxes-0-5-8-11-12"),
    ):
        with pytest.raises(SystemExit):
            main(base + flags)
        err = capsys.readouterr().err
        assert f"trained under rules {rules.tag()}, but the rules flags ask for {asked}" in err
    with pytest.raises(SystemExit):  # a reference opponent plays the agent's rules; a trained one must match
        main(["evaluate", "--agent", "greedy", "--players", "2", "--opponent", folder, "--games", "20"])
    err = capsys.readouterr().err
    assert f"opponent {folder!r} was trained under rules {rules.tag()}, but 'greedy' plays under" in err


def test_the_table_is_checked_only_where_the_evaluation_reads_it(tmp_path, monkeypatch, capsys):
    from yahtzee_lightning.solver.cache import table_path

    monkeypatch.setenv("YAHTZEE_LIGHTNING_CACHE", str(tmp_path))
    rules = Rules(boxes=(0, 12))
    table_path(rules).mkdir(parents=True)  # where the table would be: a folder, so any read or solve fails
    argv = ["evaluate", "--agent", "greedy", "--games", "2", "--boxes", "0", "12", "--json"]
    for needs_it in ([], ["--no-optimal"], ["--no-regret"]):  # the regret rows read it without the optimal row
        with pytest.raises(SystemExit) as e:
            main([*argv, *needs_it])
        assert e.value.code == 2 and "the table cache is a folder" in capsys.readouterr().err
    assert main([*argv, "--no-optimal", "--no-regret"]) == 0  # neither: nothing checked, read or solved
    result = json.loads(capsys.readouterr().out)
    assert "optimal" not in result and "regret" not in result["summary"]
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # no table written
