"""Draws read ahead (``engine.ReadAhead``): the numbers drawing each time gives, in one slice a step."""

import pytest
import torch

from yahtzee_lightning.env.games import Games
from yahtzee_lightning.game.engine import ReadAhead, draw, randint


def _generators(k: int) -> list[torch.Generator]:
    return [torch.Generator().manual_seed(100 + i) for i in range(k)]


@pytest.mark.parametrize("make", [torch.rand, randint(6)], ids=["rand", "randint"])
def test_read_ahead_gives_the_numbers_of_drawing_block_by_block(make):
    sizes = [(6, 5), (6, 3, 4), (6, 45), (6, 5), (12, 2)]  # uneven requests, as masks and noise alternate
    direct, ahead = _generators(3), ReadAhead(_generators(3), make, free=True)
    for _ in range(40):
        for shape in sizes:
            torch.testing.assert_close(draw(make, shape, None, ahead), draw(make, shape, None, direct), rtol=0, atol=0)


def test_a_budget_leaves_the_generators_where_drawing_each_time_would():
    direct, ahead = _generators(2), ReadAhead(_generators(2), torch.rand)
    ahead.allow(3 * 10)  # three requests of 10 values a generator
    assert torch.equal(draw(torch.rand, (4, 5), None, ahead), draw(torch.rand, (4, 5), None, direct))
    assert ahead.held == 20  # the other two requests' values, drawn with the first
    for _ in range(2):
        assert torch.equal(draw(torch.rand, (4, 5), None, ahead), draw(torch.rand, (4, 5), None, direct))
    assert ahead.held == 0
    for g, h in zip(ahead.generators, direct, strict=True):  # the next user sees the same stream
        assert torch.equal(torch.rand(7, generator=g), torch.rand(7, generator=h))
    # Past its allowance it draws exactly what is asked, nothing ahead.
    assert torch.equal(draw(torch.rand, (4, 5), None, ahead), draw(torch.rand, (4, 5), None, direct))
    assert ahead.held == 0


def test_another_kind_of_draw_is_refused():
    ahead = ReadAhead(_generators(2), randint(6))
    with pytest.raises(TypeError, match="another kind of draw"):
        draw(torch.rand, (2, 3), None, ahead)
    assert randint(6) is randint(6) and randint(6) is not randint(13)


def test_games_of_a_pack_roll_the_dice_their_blocks_would_roll_alone():
    seeds = [5, 9, 2]
    pack = Games(12, seed=seeds)
    assert isinstance(pack.generator, ReadAhead)
    alone = [Games(4, seed=[s]) for s in seeds]
    pack.reset()
    for g in alone:
        g.reset()
    keep = torch.arange(12) % 32
    for step in range(39 * 3):  # three whole games: across the held values' refills
        box = (step // 3 % 13) * torch.ones(12, dtype=torch.int64)
        pack.step(keep, box)
        for k, g in enumerate(alone):
            g.step(keep[4 * k : 4 * k + 4], box[:4])
        dice = torch.cat([g.state.dice_idx for g in alone])
        assert torch.equal(pack.state.dice_idx, dice), step
        if step % 39 == 38:
            pack.reset()
            for g in alone:
                g.reset()
    pack.seed(5)  # reseeding forgets what was drawn ahead from the old seeds
    assert pack.generator.held == 0


def test_random_start_cards_draw_block_by_block_and_match_their_blocks_alone():
    # Their draws mix kinds (box counts, ranks, dice) on one generator: not read ahead.
    games = Games(4, seed=[1, 2], task="single_turn", start_card="random")
    assert isinstance(games.generator, list)
    games.reset()
    alone = [Games(2, seed=[s], task="single_turn", start_card="random") for s in (1, 2)]
    for g in alone:
        g.reset()
    assert torch.equal(games.state.card, torch.cat([g.state.card for g in alone]))
    assert torch.equal(games.state.dice_idx, torch.cat([g.state.dice_idx for g in alone]))
