"""Precomputed tables and the batched engine."""

import itertools

import torch

from yahtzee_lightning.game import Rules, card_total, legal_boxes, new_games, random_partial_cards, step, tables


def test_table_sizes_and_probabilities():
    T = tables()
    assert T.dice.shape == (252, 5) and T.kept_counts.shape == (462, 6)
    assert torch.allclose(T.transition.sum(1), torch.ones(462, dtype=torch.float64))
    # The chance of a Yahtzee in one roll of five is 6 / 6^5.
    assert abs(float(T.first_roll[T.is_yahtzee].sum()) - 6 / 6**5) < 1e-12
    # Keeping all five dice keeps them.
    assert torch.equal(T.kept_to_dice[T.keep_to_kept[:, 31]], torch.arange(252))


def test_code_lookup_matches_sorting():
    T = tables()
    for roll in itertools.islice(itertools.product(range(1, 7), repeat=5), 0, 7776, 97):
        code = sum((v - 1) * 6**i for i, v in enumerate(roll))
        assert T.dice[T.code_to_index[code]].tolist() == sorted(roll)


def test_reroll_distribution_matches_transition_table():
    T = tables()
    g = torch.Generator().manual_seed(0)
    from yahtzee_lightning.game import reroll

    d = torch.full((200_000,), int((T.dice == torch.tensor([1, 2, 3, 6, 6])).all(1).nonzero()), dtype=torch.int64)
    keep = torch.full_like(d, 0b11000)  # keep the two sixes
    out = reroll(d, keep, generator=g)
    freq = torch.bincount(out, minlength=252).double() / len(d)
    expected = T.transition[T.keep_to_kept[d[0], 0b11000]]
    assert (freq - expected).abs().max() < 0.005
    assert bool((T.counts[out][:, 5] >= 2).all())


def _random_game(rules: Rules, n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    s = new_games((n,), rules, generator=g)
    total = torch.zeros(n, dtype=torch.int64)
    for _ in range(3 * rules.n_turns):
        box = torch.multinomial(legal_boxes(s, rules).float(), 1, generator=g).squeeze(-1)
        keep = torch.randint(0, 32, (n,), generator=g)
        out = step(s, keep, box, rules, g)
        assert bool(out.legal.all())
        s, total = out.state, total + out.reward
    return s, total, out


def test_final_card_total_equals_sum_of_rewards():
    for rules in (Rules(), Rules(joker="forced"), Rules(yahtzee_bonus=False), Rules(boxes=(0, 5, 8, 12))):
        s, total, out = _random_game(rules, 256, seed=1)
        assert bool(out.game_over.all())
        assert torch.equal(card_total(s.card, s.yahtzee_bonuses), total)


def test_yahtzee_heavy_games_keep_total_equal_to_rewards():
    # Keeping all dice makes Yahtzees and joker plays rare; force them by always keeping the
    # most common face, which gives many Yahtzees and bonuses.
    rules = Rules()
    g = torch.Generator().manual_seed(3)
    n = 512
    s = new_games((n,), rules, generator=g)
    total = torch.zeros(n, dtype=torch.int64)
    T = tables()
    for _ in range(39):
        dice = T.dice[s.dice_idx]
        mode = T.counts[s.dice_idx].argmax(-1) + 1
        keep = ((dice == mode.unsqueeze(-1)).long() << torch.arange(5)).sum(-1)
        legal = legal_boxes(s, rules)
        box = torch.where(legal[:, 11], 11, legal.float().argmax(-1))
        out = step(s, keep, box, rules, g)
        s, total = out.state, total + out.reward
    assert int(s.yahtzee_bonuses.sum()) > 0
    assert torch.equal(card_total(s.card, s.yahtzee_bonuses), total)


def test_same_seed_same_games():
    a = _random_game(Rules(), 8, seed=7)[0]
    b = _random_game(Rules(), 8, seed=7)[0]
    assert torch.equal(a.card, b.card)


def test_random_partial_cards():
    r = Rules()
    c = random_partial_cards((1000,), r, generator=torch.Generator().manual_seed(0))
    filled = (c != -1).sum(-1)
    assert int(filled.min()) == 0 and int(filled.max()) == 12
    s = new_games((1000,), r, card=c)
    assert torch.equal(s.turn, filled)
