"""Proof that it learns: small, seeded runs that must beat where they started."""

import lightning as L
import pytest
import torch
from quick_fit import SMALL, fit_quietly

from yahtzee_lightning.algorithms import A2C, PPO, Reinforce
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.evaluation import play_games, play_single_turns, summarize
from yahtzee_lightning.game import Rules
from yahtzee_lightning.loop.trainer import quiet_trainer
from yahtzee_lightning.nn import PolicyValueNet
from yahtzee_lightning.players import GreedyPlayer, RandomPlayer


def test_single_turn_reinforce_beats_random_play():
    L.seed_everything(0)
    model = Reinforce(
        task="single_turn",
        start_card="random",
        features="single_turn",
        games_per_batch=256,
        total_games=7680,
        lr=3e-3,
        seed=0,
        **SMALL,
    )
    fit_quietly(model)
    learned = play_single_turns(model.player(), 3000, seed=1, rules=Rules())
    random = play_single_turns(RandomPlayer(seed=1), 3000, seed=1, rules=Rules())
    se = (learned.var() / 3000 + random.var() / 3000).sqrt()
    assert float(learned.mean() - random.mean()) > 10 * float(se)
    # A single-turn agent plays full games too.
    full = summarize(play_games(model.player(), 200, seed=2, rules=Rules()), Rules())
    assert full["games"] == 200 and full["score"]["mean"] > 0


@pytest.mark.parametrize(
    "cls, extra",
    [
        (A2C, {}),
        # the other two learn the same way, longer: after the README's tests, with the slow ones
        pytest.param(A2C, {"gae_lambda": 0.95}, marks=pytest.mark.slow("a full-game training run: about 20 s")),
        pytest.param(
            PPO,
            {"games_per_minibatch": 64, "gae_lambda": 0.8},
            marks=pytest.mark.slow("a full-game training run: about 20 s"),
        ),
    ],
)
def test_full_game_training_raises_the_mean_score(cls, extra):
    L.seed_everything(0)
    model = cls(games_per_batch=64, total_games=3840, lr=3e-3, seed=0, **SMALL, **extra)
    before = summarize(play_games(model.player(), 600, seed=3, rules=Rules()), Rules())["score"]
    fit_quietly(model)
    after = summarize(play_games(model.player(), 600, seed=3, rules=Rules()), Rules())["score"]
    se = (before["se"] ** 2 + after["se"] ** 2) ** 0.5
    assert after["mean"] - before["mean"] > 4 * se


def test_two_player_win_objective_and_self_play_train_from_config_alone():
    L.seed_everything(0)
    for opponent in ("random", "self"):
        model = A2C(
            n_players=2,
            opponent=opponent,
            reward="win",
            features="two_player",
            games_per_batch=16,
            total_games=32,
            seed=0,
            **{**SMALL, "final_eval_games": 40},
        )
        fit_quietly(model)
        assert model.final_evaluation["games"] == 40 and "win" in model.final_evaluation
        # Self-play is evaluated against the optimal player (against itself it would always be
        # about half); otherwise against the training opponent, unless eval_opponent says.
        assert model.final_evaluation["opponent"] == ("optimal" if opponent == "self" else opponent)
    model = A2C(n_players=2, opponent="self", eval_opponent="greedy", features="two_player", **SMALL)
    assert model.eval_opponent() == "greedy"


def test_full_game_run_starts_from_single_turn_weights(tmp_path):
    L.seed_everything(0)
    single = Reinforce(task="single_turn", start_card="random", games_per_batch=16, total_games=32, **SMALL)
    trainer = quiet_trainer(default_root_dir=tmp_path)
    trainer.fit(single)
    trainer.save_checkpoint(tmp_path / "single.ckpt")
    full = A2C(init_from=str(tmp_path / "single.ckpt"), games_per_batch=16, total_games=32, **SMALL)
    for k, v in single.net.state_dict().items():
        assert torch.equal(v, full.net.state_dict()[k]), k
    mismatched = {**SMALL, "d_h": 32}
    with pytest.raises(ValueError, match="does not match"):
        A2C(init_from=str(tmp_path / "single.ckpt"), **mismatched)


def test_every_update_learns_from_games_played_with_its_current_weights():
    """On-policy: each batch's stored log-probs are the current policy's, even after big updates
    (a data loader that prefetches would hand over games played one update ago)."""
    import lightning as L

    from yahtzee_lightning.env import keys as K
    from yahtzee_lightning.nn import LOG_PROB, as_played

    gaps = []

    class Probe(Reinforce):
        def learn(self, batch):
            flat = batch.reshape(-1)
            with torch.no_grad():  # the network as it acted: under the dropout masks it recorded
                log_prob = as_played(self.net, flat)[0].log_prob(flat[K.KEEP], flat[K.BOX])
            gaps.append(float((log_prob - flat[LOG_PROB]).abs().max()))
            return super().learn(batch)

    model = Probe(d_h=16, n_layers=1, head_hidden=8, total_games=40, games_per_batch=8, evaluations=1)
    model.hparams.update(eval_games=4, final_eval_games=0, lr=1e-2)
    L.Trainer(
        max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False, limit_val_batches=0
    ).fit(model)
    assert len(gaps) == 5 and max(gaps) < 1e-5


@pytest.mark.parametrize("task", ["full_game", "single_turn"])
def test_stored_values_are_the_current_networks(task):
    """The updates read V(s) and V(s') from the values stored at collection instead of a second
    forward pass; that holds only because collection uses the current weights."""
    from yahtzee_lightning.env import keys as K
    from yahtzee_lightning.nn import VALUE

    model = A2C(
        d_h=16, n_layers=1, head_hidden=8, dropout=0.0, total_games=8, games_per_batch=4, task=task, start_card="random"
    )
    batch = model.collect()
    model.net.eval()
    with torch.no_grad():
        now = model.net(batch.reshape(-1))[2].view(batch.shape)
        next_now = model.net(batch["next"].reshape(-1))[2].view(batch.shape)
    assert torch.allclose(batch[VALUE], now, atol=1e-5)
    live = ~batch["next", K.TERMINATED].squeeze(-1)  # after a last step the stored next value is unused
    assert torch.allclose(model.next_values(batch)[live], next_now[live], atol=1e-5)
    assert bool((~live).any()) and bool(live.any())


def test_two_player_fine_tune_starts_from_a_solitaire_agent_with_the_same_play(tmp_path):
    """A solitaire agent seeds a two-player network: the appended features (score difference, the
    opponent's progress) start at zero weight, so the first policy is the agent's exact policy;
    ``reset_value_head`` restarts the value at 0 and ``value_lr_scale`` gives it its own rate."""
    from yahtzee_lightning.env.multiplayer import MultiPlayerYahtzeeEnv
    from yahtzee_lightning.hub import YahtzeeAgent

    L.seed_everything(0)
    net = {"d_h": SMALL["d_h"], "n_layers": SMALL["n_layers"], "head_hidden": SMALL["head_hidden"], "dropout": 0.0}
    solo = PolicyValueNet(features="full_game", **net)
    YahtzeeAgent(solo).save_pretrained(tmp_path / "solo")
    duo = PPO(
        init_from=str(tmp_path / "solo"),
        features="two_player",
        n_players=2,
        opponent="greedy",
        reset_value_head=True,
        value_lr_scale=10.0,
        games_per_batch=8,
        total_games=16,
        **{**SMALL, "dropout": 0.0},
    )
    assert duo.net.trunk[0].in_features > solo.trunk[0].in_features
    obs = MultiPlayerYahtzeeEnv(16, opponents=GreedyPlayer(), seed=3).reset()
    obs[K.SCORE_DIFF] = torch.randint(-80, 80, (16,))  # the new inputs vary; the play must not
    solo.eval()
    duo.net.eval()
    for a, b in zip(solo(obs)[:2], duo.net(obs)[:2], strict=True):
        torch.testing.assert_close(a, b)
    assert torch.equal(duo.net(obs)[2], torch.zeros(16))
    lrs = [g["initial_lr"] for g in duo.configure_optimizers()["optimizer"].param_groups]
    assert lrs == [duo.hparams.lr, 10.0 * duo.hparams.lr]

    # Features that are not the old ones followed by new ones: a clear error.
    with pytest.raises(ValueError, match="different features"):
        PPO(init_from=str(tmp_path / "solo"), features="all", **{**SMALL, "dropout": 0.0})
    with pytest.raises(ValueError, match="value_lr_scale"):
        PPO(value_lr_scale=0.0, **SMALL)
