"""advise: typed positions, ranked choices checked against the exact oracle, bad input."""

import json

import pytest
import torch

from yahtzee_lightning.coach import Coach, keep_pattern, parse_box, parse_card, parse_dice
from yahtzee_lightning.commands.coach import advise_main
from yahtzee_lightning.game import BOX_NAMES, OPEN, Rules
from yahtzee_lightning.solver import TurnOracle, load_or_solve

SMALL = Rules(boxes=(0, 5, 8, 11, 12))  # a reduced game: solved in well under a second


@pytest.mark.parametrize(
    "text, box",
    [("sixes", 5), ("Sixes", 5), ("6", 5), ("aces", 0), ("full", 8), ("fh", 8), ("full house", 8), ("lar", 10),
     ("3k", 6), ("three-of-a-kind", 6), ("four_of", 7), ("y", 11), ("c", 12), ("ss", 9)],
)  # fmt: skip
def test_box_names_prefixes_and_aliases(text, box):
    assert parse_box(text) == box


@pytest.mark.parametrize("text, why", [("f", "ambiguous"), ("s", "ambiguous"), ("bogus", "no box"), ("", "no box")])
def test_bad_box_names_say_why(text, why):
    with pytest.raises(ValueError, match=why):
        parse_box(text)


def test_keeps_are_typed_as_dice_values():
    dice = (1, 2, 4, 6, 6)
    assert keep_pattern("66 4", dice) == 0b11100
    assert keep_pattern("6", dice) == 0b01000
    assert keep_pattern("1,2", dice) == 0b00011
    assert keep_pattern("all", dice) == 0b11111
    assert keep_pattern("none", dice) == 0
    with pytest.raises(ValueError, match="cannot keep 6 6 6"):
        keep_pattern("666", dice)
    with pytest.raises(ValueError, match="not a keep"):
        keep_pattern("6x", dice)
    with pytest.raises(ValueError, match="type the dice to keep"):
        keep_pattern("  ", dice)


def test_cards_and_dice_are_checked():
    card = parse_card("ones=3 sixes=24 yahtzee=50", Rules())
    assert card[0] == 3 and card[5] == 24 and card[11] == 50 and int((card == OPEN).sum()) == 10
    assert parse_dice(["6", "6", "4", "2", "1"]) == (1, 2, 4, 6, 6) == parse_dice("66421")
    for text, why in [
        ("ones=7", "impossible"),
        ("full_house=20", "impossible"),
        ("ones=3 aces=2", "given twice"),
        ("ones", "not BOX=SCORE"),
        ("twos=4", "not in play"),  # SMALL has no twos box
    ]:
        with pytest.raises(ValueError, match=why):
            parse_card(text, SMALL if "twos" in text else Rules())
    with pytest.raises(ValueError, match="full"):
        parse_card(" ".join(f"{BOX_NAMES[b]}=0" for b in SMALL.boxes), SMALL)
    for dice, why in [("6 6 4 2", "need 5 dice"), ("6 6 4 2 7", "1..6"), ("a b c d e", "1..6")]:
        with pytest.raises(ValueError, match=why):
            parse_dice(dice)


def _oracle_values(rules, dice, roll, card):
    oracle = TurnOracle(rules, load_or_solve(rules, progress=False))
    return oracle.action_values(torch.tensor([dice]), torch.tensor([roll]), card.reshape(1, -1))


@pytest.mark.parametrize("roll", [0, 1, 2])
def test_advise_matches_the_oracle(roll, capsys):
    argv = ["--card", "ones=3 yahtzee=50", "--dice", "6", "6", "4", "2", "1", "--roll", str(roll), "--json"]
    argv += ["--boxes", *map(str, SMALL.boxes)]
    assert advise_main(argv) == 0
    ranked = json.loads(capsys.readouterr().out)
    keep_values, box_values = _oracle_values(SMALL, (1, 2, 4, 6, 6), roll, parse_card("ones=3 yahtzee=50", SMALL))
    values = [c["value"] for c in ranked]
    assert values == sorted(values, reverse=True)
    if roll < 2:
        # One row per distinct kept multiset: 2 sixes -> 3 ways, the other dice 2 each: 3 * 2**3 = 24.
        assert len(ranked) == 24 and all(c["kind"] == "keep" for c in ranked)
        for c in ranked:
            assert c["value"] == pytest.approx(float(keep_values[0, c["action"]]), abs=1e-9)
        assert ranked[0]["value"] == pytest.approx(float(keep_values.max()), abs=1e-9)
    else:
        legal = box_values[0].isfinite()
        assert sorted(c["action"] for c in ranked) == legal.nonzero().flatten().tolist() == [5, 8, 12]
        for c in ranked:
            assert c["label"] == BOX_NAMES[c["action"]]
            assert c["value"] == pytest.approx(float(box_values[0, c["action"]]), abs=1e-9)


def test_advise_table_under_the_standard_rules(default_table, capsys):
    argv = ["--card", "ones=3 sixes=24", "--dice", "6", "6", "4", "2", "1", "--roll", "2", "--top", "3"]
    assert advise_main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 + 3  # heading, column names, three choices
    card = parse_card("ones=3 sixes=24", Rules())
    best = Coach(Rules(), default_table).choices((1, 2, 4, 6, 6), 2, card)[0]
    _, box_values = _oracle_values(Rules(), (1, 2, 4, 6, 6), 2, card)
    assert best.value == pytest.approx(float(box_values.max()))
    assert out[2].split()[1] == best.label and float(out[2].split()[2]) == pytest.approx(best.value, abs=0.005)


@pytest.mark.parametrize(
    "argv, why",
    [
        (["--card", "ones=7", "--dice", "1", "1", "1", "1", "1", "--roll", "0"], "ones never scores 7"),
        (["--card", "sixes=24", "--dice", "1", "1", "9", "1", "1", "--roll", "0"], "face values 1..6"),
        (["--dice", "1", "1", "1", "--roll", "0"], "need 5 dice"),
        (["--card", "bogus=3", "--dice", "1", "2", "3", "4", "5", "--roll", "1"], "no box called 'bogus'"),
    ],
)
def test_advise_bad_input_is_one_line_and_exit_2(argv, why, capsys):
    assert advise_main([*argv, "--boxes", *map(str, SMALL.boxes)]) == 2
    err = capsys.readouterr().err
    assert why in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_advise_bad_roll_is_a_usage_error():
    with pytest.raises(SystemExit) as e:
        advise_main(["--dice", "1", "2", "3", "4", "5", "--roll", "3"])
    assert e.value.code == 2
