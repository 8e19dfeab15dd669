"""DQN in the two-player game: TorchRL's loss, buffer and target updater, wired by one small file."""

import lightning as L
import pytest

from yahtzee_lightning.algorithms.dqn import DQN, QPlayer
from yahtzee_lightning.evaluation.match import play_matches
from yahtzee_lightning.players import RandomPlayer


def _train(**kwargs) -> DQN:
    L.seed_everything(0)
    model = DQN(
        opponent="random",
        reward="score",
        games_per_batch=16,
        evaluations=1,
        eval_games=20,
        final_eval_games=0,
        buffer_size=10_000,
        **kwargs,
    )
    L.Trainer(
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    ).fit(model)
    return model


@pytest.mark.slow("learns to beat random play: about 12 s")
def test_dqn_with_meta_actions_learns_to_beat_random_play():
    model = _train(meta_actions=True, total_games=192, updates_per_batch=16)
    assert len(model.buffer) == 192 * 39  # every learner step went into the replay buffer
    assert model.epsilon() < model.hparams.eps_start
    learned = play_matches(QPlayer(model.net), RandomPlayer(seed=1), games=400, seed=1)
    baseline = play_matches(RandomPlayer(seed=2), RandomPlayer(seed=1), games=400, seed=1)
    assert learned["win"]["rate"] > baseline["win"]["rate"] + 4 * (learned["win"]["se"] + baseline["win"]["se"])


def test_dqn_on_the_full_masked_action_space_plays_legally():
    model = _train(meta_actions=False, hidden=[32], total_games=32, updates_per_batch=2)
    assert model.net.n_actions == 45
    result = play_matches(QPlayer(model.net), "random", games=64, seed=0)  # the env validates every box
    assert result["games"] == 64
