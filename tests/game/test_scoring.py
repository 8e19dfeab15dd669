"""Every box on hand-checked examples, bonuses and the joker rule."""

import pytest
import torch

from yahtzee_lightning.game import OPEN, Rules, box_options, card_total, dice_index, empty_card, score_box

R = Rules()


def idx(*dice: int) -> torch.Tensor:
    return dice_index(torch.tensor(dice))


def card(**filled: int) -> torch.Tensor:
    from yahtzee_lightning.game import BOX_NAMES

    c = torch.full((13,), OPEN, dtype=torch.int64)
    for name, v in filled.items():
        c[BOX_NAMES.index(name)] = v
    return c


def scores(dice, c=None, rules=R):
    c = card() if c is None else c
    s, legal, bonus = box_options(idx(*dice), c, rules)
    return s.tolist(), legal.tolist(), int(bonus)


@pytest.mark.parametrize(
    "dice, expected",
    [
        # ones..sixes, 3k, 4k, fh, ss, ls, yahtzee, chance
        ((1, 1, 2, 3, 4), [2, 2, 3, 4, 0, 0, 0, 0, 0, 30, 0, 0, 11]),
        ((2, 3, 4, 5, 6), [0, 2, 3, 4, 5, 6, 0, 0, 0, 30, 40, 0, 20]),
        ((1, 2, 3, 4, 5), [1, 2, 3, 4, 5, 0, 0, 0, 0, 30, 40, 0, 15]),
        ((3, 4, 4, 5, 6), [0, 0, 3, 8, 5, 6, 0, 0, 0, 30, 0, 0, 22]),  # straight with a duplicate
        ((1, 3, 4, 5, 6), [1, 0, 3, 4, 5, 6, 0, 0, 0, 30, 0, 0, 19]),  # 3-4-5-6 small only
        ((1, 2, 3, 5, 6), [1, 2, 3, 0, 5, 6, 0, 0, 0, 0, 0, 0, 17]),  # no straight
        ((2, 2, 3, 3, 3), [0, 4, 9, 0, 0, 0, 13, 0, 25, 0, 0, 0, 13]),  # full house
        ((6, 6, 6, 6, 2), [0, 2, 0, 0, 0, 24, 26, 26, 0, 0, 0, 0, 26]),
        ((5, 5, 5, 5, 5), [0, 0, 0, 0, 25, 0, 25, 25, 0, 0, 0, 50, 25]),  # no FH without joker
    ],
)
def test_box_scores_on_empty_card(dice, expected):
    s, legal, bonus = scores(dice)
    assert s == expected
    assert all(legal)
    assert bonus == 0


def test_filled_boxes_are_illegal_and_score_zero():
    c = card(chance=20, ones=3)
    s, legal, _ = scores((1, 1, 1, 2, 3), c)
    assert legal[0] is False and legal[12] is False and sum(legal) == 11
    assert s[0] == 0 and s[12] == 0


def test_upper_bonus_at_exactly_63():
    # 3*1 + 3*2 + 3*3 + 3*4 + 3*5 = 45; three sixes = 18 -> 63 exactly.
    c = card(ones=3, twos=6, threes=9, fours=12, fives=15)
    new_card, _, reward, legal = score_box(idx(6, 6, 6, 1, 2), c, torch.tensor(0), torch.tensor(5), R)
    assert bool(legal) and int(reward) == 18 + 35
    assert int(card_total(new_card, torch.tensor(0))) == 63 + 35
    # One short of 63: no bonus.
    c2 = card(ones=2, twos=6, threes=9, fours=12, fives=15)
    _, _, reward2, _ = score_box(idx(6, 6, 6, 1, 2), c2, torch.tensor(0), torch.tensor(5), R)
    assert int(reward2) == 18
    # Already over 63: the bonus is not paid twice.
    c3 = card(ones=3, twos=6, threes=9, fours=12, fives=15, sixes=18)
    _, _, reward3, _ = score_box(idx(6, 6, 6, 1, 2), c3, torch.tensor(0), torch.tensor(6), R)
    assert int(reward3) == 21  # three of a kind, no second bonus


def test_yahtzee_bonus_second_and_third_yahtzee():
    c = card(yahtzee=50)
    bonuses = torch.tensor(0)
    new_card, bonuses, reward, _ = score_box(idx(4, 4, 4, 4, 4), c, bonuses, torch.tensor(3), R)
    assert int(reward) == 20 + 100 and int(bonuses) == 1
    new_card[1] = 6  # twos filled: the next Yahtzee of twos is a joker
    new_card, bonuses, reward, _ = score_box(idx(2, 2, 2, 2, 2), new_card, bonuses, torch.tensor(8), R)
    assert int(reward) == 25 + 100 and int(bonuses) == 2  # joker full house, third Yahtzee
    assert int(card_total(new_card, bonuses)) == 50 + 20 + 6 + 25 + 200


def test_no_yahtzee_bonus_after_a_scratched_yahtzee_but_joker_applies():
    c = card(yahtzee=0, threes=6)
    s, legal, bonus = scores((3, 3, 3, 3, 3), c)
    assert bonus == 0
    assert s[8] == 25 and s[9] == 30 and s[10] == 40


def test_yahtzee_is_full_house_only_as_joker():
    assert scores((2, 2, 2, 2, 2))[0][8] == 0  # Yahtzee box open: no joker
    assert scores((2, 2, 2, 2, 2), card(yahtzee=50, twos=4))[0][8] == 25
    off = Rules(joker="off")
    s, _, bonus = scores((2, 2, 2, 2, 2), card(yahtzee=50), off)
    assert s[8] == 0 and s[9] == 0 and bonus == 100  # bonus still paid, no joker values
    nobonus = Rules(yahtzee_bonus=False)
    s, _, bonus = scores((2, 2, 2, 2, 2), card(yahtzee=50), nobonus)
    assert s[8] == 0 and bonus == 0


def test_free_joker_allows_any_open_box():
    s, legal, _ = scores((5, 5, 5, 5, 5), card(yahtzee=50, fives=20))
    assert sum(legal) == 11
    assert s[8] == 25 and s[9] == 30 and s[10] == 40 and s[0] == 0 and s[6] == 25


def test_free_joker_is_no_joker_while_its_upper_box_is_open():
    s, legal, bonus = scores((5, 5, 5, 5, 5), card(yahtzee=50))
    assert sum(legal) == 12 and bonus == 100
    assert s[4] == 25 and s[8] == 0 and s[9] == 0 and s[10] == 0 and s[12] == 25


def test_forced_joker_own_upper_box_first():
    forced = Rules(joker="forced")
    _, legal, _ = scores((5, 5, 5, 5, 5), card(yahtzee=50), forced)
    assert [i for i, ok in enumerate(legal) if ok] == [4]


def test_forced_joker_then_lower_boxes_at_joker_values():
    forced = Rules(joker="forced")
    s, legal, _ = scores((5, 5, 5, 5, 5), card(yahtzee=50, fives=15, chance=20), forced)
    assert [i for i, ok in enumerate(legal) if ok] == [6, 7, 8, 9, 10]
    assert s[8:11] == [25, 30, 40]


def test_forced_joker_then_upper_boxes_for_zero():
    forced = Rules(joker="forced")
    lower = {n: 0 for n in ("three_of_a_kind", "four_of_a_kind", "full_house", "small_straight", "large_straight")}
    c = card(yahtzee=50, fives=15, chance=20, **lower)
    s, legal, bonus = scores((5, 5, 5, 5, 5), c, forced)
    assert [i for i, ok in enumerate(legal) if ok] == [0, 1, 2, 3, 5]
    assert s[:6] == [0, 0, 0, 0, 0, 0] and bonus == 100


def test_boxes_out_of_play_start_filled():
    r = Rules(boxes=(0, 5, 8, 12))
    c = empty_card((), r)
    assert [i for i in range(13) if int(c[i]) == OPEN] == [0, 5, 8, 12]
    assert r.n_turns == 4


def test_vectorised_over_batch_shapes():
    d = torch.randint(0, 252, (3, 4))
    c = empty_card((3, 4), R)
    s, legal, bonus = box_options(d, c, R)
    assert s.shape == (3, 4, 13) and legal.shape == (3, 4, 13) and bonus.shape == (3, 4)


def test_bad_rules_name_themselves():
    with pytest.raises(ValueError, match="joker"):
        Rules(joker="sometimes")
    with pytest.raises(ValueError, match="boxes"):
        Rules(boxes=(0, 13))
    with pytest.raises(ValueError, match="colour"):
        Rules.from_dict({"colour": "red"})


@pytest.mark.parametrize("joker", ["free", "forced", "off"])
def test_scoring_one_chosen_box_agrees_with_the_all_box_options(joker):
    """A step evaluates only the chosen box; it must agree with ``box_options`` on every box,
    joker positions included (Yahtzee dice on cards whose Yahtzee box is filled)."""
    from yahtzee_lightning.game import legal_mask, random_partial_cards, tables

    rules = Rules(joker=joker)
    g = torch.Generator().manual_seed(1)
    n = 4000
    cards = random_partial_cards((n,), rules, generator=g)
    cards[: n // 2, 12] = torch.where(torch.rand(n // 2, generator=g) < 0.5, 50, 0)  # Yahtzee box filled
    dice = torch.randint(0, 252, (n,), generator=g)
    dice[::3] = tables().is_yahtzee.nonzero()[torch.randint(0, 6, (len(dice[::3]),), generator=g)].squeeze(1)
    all_scores, all_legal, bonus = box_options(dice, cards, rules)
    assert torch.equal(legal_mask(dice, cards, rules), all_legal)
    bonuses = torch.zeros(n, dtype=torch.int64)
    for b in range(13):
        box = torch.full((n,), b)
        new_card, new_bonuses, reward, legal = score_box(dice, cards, bonuses, box, rules)
        assert torch.equal(legal, all_legal[:, b])
        expected = torch.where(legal, card_total(new_card, new_bonuses) - card_total(cards, bonuses), 0)
        assert torch.equal(reward, expected)
        assert torch.equal(torch.where(legal, new_card[:, b], 0), all_scores[:, b])
        assert torch.equal(new_bonuses, torch.where(legal, bonus // 100, 0))
