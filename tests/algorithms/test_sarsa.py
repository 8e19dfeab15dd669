"""Tabular SARSA on the reduced four-box game learns to beat random play."""

import lightning as L
import pytest
import torch

from yahtzee_lightning.algorithms.sarsa import StateIndex, TabularPlayer, TabularSARSA
from yahtzee_lightning.env import YahtzeeEnv
from yahtzee_lightning.game import Rules, box_options, engine, upper_sum


def test_state_index_is_exact_and_in_range():
    rules = Rules(boxes=(0, 6, 11, 12))  # an upper box and the Yahtzee box: every factor in play
    index = StateIndex(rules)
    assert index.size == 16 * 64 * 2 * 252 * 3
    g = torch.Generator().manual_seed(0)
    s = engine.new_games((4096,), rules, generator=g)
    seen = {}
    for _ in range(12):
        i = index(s.dice_idx, s.card, s.roll)
        assert int(i.min()) >= 0 and int(i.max()) < index.size
        key = torch.stack(
            [
                s.dice_idx,
                s.roll,
                (s.card[:, [0, 6, 11, 12]] != -1).long() @ torch.tensor([1, 2, 4, 8]),
                upper_sum(s.card).clamp(max=63),
                (s.card[:, 11] == 50).long(),
            ],
            -1,
        )
        for k, v in zip(key.tolist(), i.tolist(), strict=True):
            assert seen.setdefault(v, tuple(k)) == tuple(k)  # one index, one state
        legal = box_options(s.dice_idx, s.card, rules)[1]
        box = torch.multinomial(legal.float() + 1e-9 * (~legal.any(-1, keepdim=True)), 1, generator=g).squeeze(-1)
        s = engine.step(s, torch.randint(0, 32, (4096,), generator=g), box, rules, g).state


def test_full_game_is_refused():
    with pytest.raises(ValueError, match="tabular states"):
        StateIndex(Rules())


@pytest.mark.slow("learns the four-box game to beat random play: about 15 s")
def test_sarsa_beats_random_on_the_four_box_game():
    torch.manual_seed(0)
    model = TabularSARSA(boxes=(6, 8, 9, 12), num_envs=256, epsilon_games=15_000, eval_games=500, seed=0)
    random_scores = model.play(2000, seed=1, greedy=False)
    trainer = L.Trainer(
        max_epochs=3,
        limit_train_batches=80,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model)
    learned = model.play(2000, seed=2)
    se = (random_scores.var() / 2000 + learned.var() / 2000).sqrt()
    assert float(learned.mean() - random_scores.mean()) > 5 * float(se)
    # The same policy through the common player interface and the TorchRL env.
    env = YahtzeeEnv(256, rules=model.rules, seed=3)
    player = TabularPlayer(model)
    td = env.reset()
    for _ in range(3 * model.rules.n_turns):
        keep, box = player.act(td)
        td["action", "keep"], td["action", "box"] = keep, box
        td = env.step(td)["next"]
    assert abs(float(td["score"].float().mean()) - float(learned.mean())) < 6 * float(se)
