"""The single-game engine plays the batched engine's rules: checked move by move on the same dice.

Both engines start from the same cards and are fed the same random draws (the batched engine's
generator is peeked before every draw and the single engine gets those roll codes), so every
state, reward, legal box and observation must agree exactly, for every rule variant.
"""

from __future__ import annotations

import random

import pytest
import torch

from yahtzee_lightning.game import N_DICE, N_FACES, Rules, box_options, card_total, engine
from yahtzee_lightning.game.single import SingleGame
from yahtzee_lightning.game.tables import tables
from yahtzee_lightning.gym.spaces import encode_batch, encode_single

VARIANTS = [
    (Rules(), "empty"),
    (Rules(joker="forced"), "empty"),
    (Rules(joker="off"), "random"),
    (Rules(yahtzee_bonus=False), "empty"),
    (Rules(joker="forced", boxes=(0, 4, 6, 7, 8, 9, 11)), "random"),
    (Rules(boxes=(2, 3, 10, 12)), "empty"),
]
GAMES = 1000
POWERS = N_FACES ** torch.arange(N_DICE)


def peek_codes(generator: torch.Generator, n: int) -> list[int]:
    """The roll codes of the batched engine's next draw of ``n`` rolls, without advancing it."""
    twin = torch.Generator().manual_seed(0)
    twin.set_state(generator.get_state())
    return (torch.randint(0, N_FACES, (n, N_DICE), generator=twin) * POWERS).sum(-1).tolist()


def batched_view(state: engine.GameState, rules: Rules) -> list[tuple]:
    scores, legal, bonus = box_options(state.dice_idx, state.card, rules)
    total = card_total(state.card, state.yahtzee_bonuses)
    cols = (state.dice_idx, state.card, state.roll, state.turn, state.yahtzee_bonuses, total, scores, legal, bonus)
    return list(zip(*(c.tolist() for c in cols), strict=True))


def single_view(g: SingleGame) -> tuple:
    return (g.dice, g.card, g.roll, g.turn, g.yahtzee_bonuses, g.score, g.values, g.legal, g.bonus)


def actions(state: engine.GameState, rules: Rules, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Random keeps, half of them chasing the most common face (so Yahtzees, jokers and bonuses
    happen), and uniformly random legal boxes."""
    n = state.dice_idx.shape[0]
    dice = state.dice
    mode = tables().counts[state.dice_idx].argmax(-1, keepdim=True) + 1
    chase = engine.keep_bits_to_pattern(dice == mode)
    keep = torch.where(torch.rand(n, generator=gen) < 0.5, chase, torch.randint(0, 32, (n,), generator=gen))
    legal = engine.legal_boxes(state, rules).float()
    box = torch.multinomial(legal + (legal.sum(-1, keepdim=True) == 0).float(), 1, generator=gen).squeeze(-1)
    return keep, box


@pytest.mark.parametrize(("rules", "start_card"), VARIANTS, ids=[f"{r.tag()}-{s}" for r, s in VARIANTS])
def test_single_game_follows_the_batched_engine_move_by_move(rules, start_card):
    gen, act = torch.Generator().manual_seed(7), torch.Generator().manual_seed(8)
    card = engine.random_partial_cards((GAMES,), rules, generator=gen) if start_card == "random" else None
    codes = peek_codes(gen, GAMES)
    state = engine.new_games((GAMES,), rules, generator=gen, card=card)
    games = [SingleGame(rules) for _ in range(GAMES)]
    for g, c, code in zip(games, state.card.tolist(), codes, strict=True):
        g.start(c, code)
    yahtzee_bonuses = jokers = 0
    for _ in range(3 * rules.n_turns):
        # A random start card finishes early; a finished game stays as it is (the batched one is not stepped).
        live = [i for i, g in enumerate(games) if not g.over]
        view = batched_view(state, rules)
        assert [single_view(games[i]) for i in live] == [view[i] for i in live]
        obs, mask = encode_batch(state, rules)
        for i in live[::37]:  # the fast encoder of one game gives the batched encoder's vectors
            o, m = encode_single(games[i])
            assert (o == obs[i]).all() and (m == mask[i]).all()
        jokers += sum(g.joker for g in games)
        keep, box = actions(state, rules, act)
        codes = peek_codes(gen, GAMES)
        result = engine.step(state, keep, box, rules, generator=gen)
        scoring, keep, box, reward = (state.roll == 2).tolist(), keep.tolist(), box.tolist(), result.reward.tolist()
        for i in live:
            g = games[i]
            if scoring[i]:
                assert g.legal[box[i]]
                assert g.score_box(box[i], codes[i]) == reward[i]
            else:
                g.keep(keep[i], codes[i])
        stepped = torch.zeros(GAMES, dtype=torch.bool)
        stepped[live] = True
        state = result.state.where(stepped, state)  # the games finished before stay as they were
        yahtzee_bonuses = int(state.yahtzee_bonuses.sum())
    assert [single_view(g) for g in games] == batched_view(state, rules)
    assert all(g.over for g in games)
    # The checks are not vacuous: jokers and Yahtzee bonuses happened where the rules allow them.
    if rules.joker_active and 11 in rules.boxes:
        assert jokers > 0
    if rules.yahtzee_bonus and rules.n_turns == 13 and start_card == "empty":
        assert yahtzee_bonuses > 0


def test_random_cards_are_drawn_like_the_batched_ones():
    """Same distribution of start cards: boxes filled per card and per box, and their mean score."""
    rules, n = Rules(boxes=(0, 3, 5, 6, 8, 11, 12)), 4000
    batched = engine.random_partial_cards((n,), rules, generator=torch.Generator().manual_seed(1))
    g, rng = SingleGame(rules), random.Random(1)
    single = torch.tensor([g.random_card(rng) for _ in range(n)])
    out = list(rules.boxes_out_of_play)
    for cards in (batched, single):
        assert (cards[:, out] == 0).all() and ((cards[:, list(rules.boxes)] != -1).sum(-1) < rules.n_turns).all()
    filled_b, filled_s = (batched != -1).float(), (single != -1).float()
    assert (filled_b.mean(0) - filled_s.mean(0)).abs().max() < 0.05
    assert abs(filled_b.sum(-1).mean() - filled_s.sum(-1).mean()) < 0.15
    assert abs(batched.clamp(min=0).float().mean() - single.clamp(min=0).float().mean()) < 0.3
