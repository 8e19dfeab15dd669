"""play: whole scripted games through the input stream, regrets checked against the exact oracle."""

import io
import re

import pytest
import torch

from yahtzee_lightning import cli
from yahtzee_lightning.coach.advice import KEEP_ALL, parse_box
from yahtzee_lightning.coach.game import CoachedGame
from yahtzee_lightning.coach.terminal import play
from yahtzee_lightning.commands.coach import play_main
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.env.yahtzee_env import YahtzeeEnv
from yahtzee_lightning.game import BOX_NAMES, Rules
from yahtzee_lightning.players import GreedyPlayer
from yahtzee_lightning.solver import TurnOracle, load_or_solve

SMALL = Rules(boxes=(0, 5, 8, 11, 12))
BAD = ["7 7", "f", "", "bogus", "66666 6"]  # never legal, whatever the dice: each must re-ask


def script(rules: Rules) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """Lines that play every box in order, whatever the dice, and the (keep, box) actions they make.

    Turns vary: re-roll twice then name the box; name the box at once (the dice are kept); keep
    all once then name it. Bad lines and requests for help are mixed in. Each step is judged as a
    decision of its own ("judge"), or is the decision to score early ("early": one decision, the
    rolls left unused), or is one of those unused rolls ("unused": no decision of its own).
    """
    lines, actions = [], []
    for t, b in enumerate(rules.boxes):
        name = BOX_NAMES[b]
        bad = BAD[t % len(BAD)]
        if t % 3 == 0:
            lines += ["none", bad, "-", "?", name]
            actions.append([(0, 0, "judge"), (0, 0, "judge"), (0, b, "judge")])
        elif t % 3 == 1:
            lines += ["card", bad, name[:4] if name != "four_of_a_kind" else "4k"]
            actions.append([(KEEP_ALL, b, "early"), (KEEP_ALL, 0, "unused"), (0, b, "unused")])
        else:
            lines += ["all", "help", bad, name]
            actions.append([(KEEP_ALL, 0, "judge"), (KEEP_ALL, b, "early"), (0, b, "unused")])
    return lines, actions


def _losses(out: str, who: str) -> list[float]:
    found = re.findall(rf"^  {re.escape(who)}: .*; (?:optimal|.*lost (\d+\.\d+))$", out, flags=re.M)
    return [float(x) if x else 0.0 for x in found]


def test_a_whole_scripted_solitaire_game_against_the_oracle(default_table):
    seed, rules = 11, Rules()
    lines, actions = script(rules)
    out = io.StringIO()
    assert play_main(["--seed", str(seed)], inp=io.StringIO("\n".join(lines) + "\n"), out=out) == 0
    text = out.getvalue()

    # Replay the same actions on the same seed and price each with the oracle.
    env, oracle = YahtzeeEnv(1, rules=rules, seed=seed), TurnOracle(rules, default_table)
    td, regrets = env.reset(), []
    for turn in actions:
        for keep, box, how in turn:
            if how == "judge":
                regret = oracle.regret(td[K.DICE], td[K.ROLL], td[K.CARD], torch.tensor([keep]), torch.tensor([box]))
                regrets.append(float(regret[0]))
            elif how == "early":  # the best choice at this roll against the box's value with these dice
                best = oracle.action_values(td[K.DICE], td[K.ROLL], td[K.CARD])[0].max()
                box_value = oracle.action_values(td[K.DICE], torch.tensor([2]), td[K.CARD])[1][0, box]
                regrets.append(max(float(best - box_value), 0.0))
            td = env.step(
                td.set(K.KEEP, torch.tensor([keep])).set(K.BOX, torch.tensor([box if how != "early" else 0]))
            )["next"]
    assert bool(td[K.DONE].all())

    assert _losses(text, "you") == pytest.approx(regrets, abs=0.005 + 1e-9)
    total = float(re.search(r"your total regret: (\d+\.\d+)", text).group(1))
    assert total == pytest.approx(sum(regrets), abs=0.005) and total > 0  # re-rolling everything is never free
    assert f"your score: {int(td[K.SCORE][0])}" in text
    assert text.count("(type '?' for the ranked choices") == len(rules.boxes)  # one hint per bad line
    early = re.findall(r"^  you: score (\w+) after roll (\d) ", text, flags=re.M)  # a box typed at a keep prompt
    names = [BOX_NAMES[b] for t, b in enumerate(rules.boxes) if t % 3 != 0]
    assert [name for name, _ in early] == names and not re.search(
        r"^  you: keep all", text[: text.find(names[0])], re.M
    )
    assert "Game over." in text and "Traceback" not in text


def test_a_game_against_an_agent_judges_both_sides(capsys):
    table = load_or_solve(SMALL, progress=False)
    game = CoachedGame(SMALL, table, opponent=GreedyPlayer(SMALL), seed=5)
    lines, _ = script(SMALL)
    out = io.StringIO()
    play(game, io.StringIO("\n".join(lines) + "\n"), out)
    text = out.getvalue()
    decisions = sum(sum(how != "unused" for *_, how in turn) for turn in script(SMALL)[1])
    assert game.over and len(game.you.log) == decisions and len(game.agent.log) == 3 * SMALL.n_turns
    # The game's history: every decision in the order made (each side's in its own order; the agent's
    # turn right after the person's scoring decision).
    assert [d for d in game.history if d.who == "you"] == game.you.log
    assert [d for d in game.history if d.who == "greedy"] == game.agent.log
    scored = [i for i, d in enumerate(game.history) if d.who == "you" and d.chosen.kind == "box"]
    assert all(game.history[i + 1].who == "greedy" for i in scored[:-1]) and len(scored) == SMALL.n_turns

    oracle = TurnOracle(SMALL, table)
    for d in game.you.log + game.agent.log:
        dice, card = torch.tensor([d.dice]), torch.tensor([d.card])
        if d.chosen.kind == "box" and d.roll < 2:  # scored early: against the best choice at that roll
            best = oracle.action_values(dice, torch.tensor([d.roll]), card)[0].max()
            want = best - oracle.action_values(dice, torch.tensor([2]), card)[1][0, d.chosen.action]
        else:
            keep, box = (d.chosen.action, 0) if d.roll < 2 else (0, d.chosen.action)
            want = oracle.regret(dice, torch.tensor([d.roll]), card, torch.tensor([keep]), torch.tensor([box]))[0]
        assert d.regret == pytest.approx(max(float(want), 0.0), abs=1e-9)
    assert _losses(text, "you") == pytest.approx([d.regret for d in game.you.log], abs=0.005 + 1e-9)
    assert _losses(text, "greedy") == pytest.approx([d.regret for d in game.agent.log], abs=0.005 + 1e-9)
    assert f"your total regret: {game.you.regret:.2f}" in text
    assert f"greedy's total regret: {game.agent.regret:.2f}" in text
    # The agent's whole game went through the environment: its card is full and adds up.
    assert int((game.agent_card >= 0).sum()) == 13 and f"{game.total} to {game.agent_total}" in text
    # The greedy player is the one-turn optimum: it never loses at a scoring choice of the last turn.
    assert game.agent.log[-1].regret == pytest.approx(0.0, abs=1e-9)


def test_quit_end_of_input_and_ctrl_c_leave_cleanly(monkeypatch):
    argv = ["--boxes", *map(str, SMALL.boxes), "--seed", "1"]
    out = io.StringIO()
    assert play_main(argv, inp=io.StringIO("none\nquit\n"), out=out) == 0
    assert "left the game" in out.getvalue() and "you: re-roll all" in out.getvalue()

    class CtrlC(io.StringIO):
        def readline(self, *a):
            raise KeyboardInterrupt

    out = io.StringIO()
    assert play_main(argv, inp=CtrlC(), out=out) == 130
    assert "left the game (Ctrl-C)" in out.getvalue()

    # Through the console script's dispatcher, from stdin: end of input leaves with 0.
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert cli.main(["play", *argv]) == 0


def test_the_same_seed_deals_the_same_dice_and_boxes_refuse_bad_choices():
    table = load_or_solve(SMALL, progress=False)
    a, b = CoachedGame(SMALL, table, seed=3), CoachedGame(SMALL, table, seed=3)
    assert a.dice == b.dice and a.keep(0)[0].dice == b.keep(0)[0].dice and a.dice == b.dice
    a.score(parse_box("chance"))
    with pytest.raises(ValueError, match="chance is already filled"):
        a.score(parse_box("chance"))
    a.keep(0)
    a.keep(0)
    with pytest.raises(ValueError, match="no roll is left"):
        a.keep(0)


def test_an_unknown_opponent_is_a_usage_error():
    with pytest.raises(SystemExit) as e:
        play_main(["--opponent", "nobody"], inp=io.StringIO(""), out=io.StringIO())
    assert e.value.code == 2


@pytest.mark.parametrize("seed", ["-1", str(2**40)])
def test_a_seed_out_of_range_is_refused_in_one_line(capsys, seed):
    with pytest.raises(SystemExit):
        play_main(["--seed", seed], inp=io.StringIO("quit\n"), out=io.StringIO())
    assert f"--seed must be in 0..2**32-1, got {seed}" in capsys.readouterr().err


def test_a_long_agent_name_keeps_its_own_column_in_the_cards():
    """``distilled-128x2`` is wider than the column: it once ran into 'you' (``youdistilled-128x2``)."""
    from yahtzee_lightning.coach.terminal import format_cards

    table = load_or_solve(SMALL, progress=False)
    opponent = GreedyPlayer(SMALL)
    opponent.name = "distilled-128x2-long-name"
    game = CoachedGame(SMALL, table, opponent=opponent, seed=5)
    head, *rows = format_cards(game).splitlines()
    assert head.split() == ["box", "you", "distilled-128x2-long-name"]
    assert all(len(row) == len(head) for row in rows), [head, *rows]  # the columns line up
