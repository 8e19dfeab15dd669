"""Training without per-step overhead: statistics stay on the device until the update is read
once, and the faster paths compute what the plain ones do."""

import pytest
import torch

from yahtzee_lightning.algorithms import PPO
from yahtzee_lightning.nn import eval_mode


def bare_model(device: str = "cpu", **kwargs) -> PPO:
    """A PPO module that updates without a Trainer (its optimizer, scheduler and log stubbed)."""
    model = PPO(**{"d_h": 32, "n_layers": 2, "head_hidden": 16, "games_per_batch": 6, "total_games": 60, **kwargs})
    model = model.to(device)
    opt = model.configure_optimizers()["optimizer"]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    model.optimizers = lambda: opt
    model.lr_schedulers = lambda: sched
    model.manual_backward = lambda loss: loss.backward()
    model.logged = {}
    model.log_dict = lambda d, **kw: model.logged.update(d)
    model.log = lambda *a, **kw: None
    return model


def _two_updates_logged() -> dict[str, float]:
    torch.manual_seed(0)
    model = bare_model(games_per_minibatch=2, diagnose_games=4, log_every=1)
    for _ in range(2):
        model.learn(model.collect())
    return model.logged


def test_statistics_read_once_per_update_are_the_values_read_one_by_one(monkeypatch):
    import yahtzee_lightning.loop.diagnosis as diagnosis

    once = _two_updates_logged()
    # The plain version: each statistic read from the device on its own, as it was computed.
    monkeypatch.setattr(diagnosis, "read_stats", lambda stats: {k: float(v) for k, v in stats.items()})
    one_by_one = _two_updates_logged()
    assert once.keys() == one_by_one.keys() and "train/kl" in once and "train/regret_keep" in once
    for k, v in one_by_one.items():
        assert once[k] == pytest.approx(v, rel=1e-6, abs=1e-9), k


def test_collection_and_update_read_nothing_back_inside_their_loops(monkeypatch):
    """No ``float``/``bool``/``item``/``tolist`` of a tensor while collection steps or the update
    runs its minibatches (on CPU the stand-in for the CUDA check below: those are the reads that
    wait for a GPU). Allowed: the env's reset, once per batch before the steps, checking its
    result; Adam reading its step counts, which live on the host also on CUDA."""
    torch.manual_seed(0)
    model = bare_model()
    coefs = {"beta_roll": 0.01, "beta_score": 0.01, "gamma": 0.99}
    model.update(model.collect(), coefs)  # first use: builds the env and policy
    allowed = []

    def allow_reads_in(obj, name):
        method = getattr(obj, name)

        def allowing(*args, **kwargs):
            allowed.append(name)
            try:
                return method(*args, **kwargs)
            finally:
                allowed.pop()

        monkeypatch.setattr(obj, name, allowing)

    def make_refuse(name):
        original = getattr(torch.Tensor, name)

        def refuse(self, *args, **kwargs):
            if not allowed:
                raise AssertionError(f"a tensor was read back to the host ({name})")
            return original(self, *args, **kwargs)

        return refuse

    allow_reads_in(model._players.env, "reset")
    allow_reads_in(model.optimizers(), "step")
    for name in ("item", "tolist", "__float__", "__bool__", "__int__"):
        monkeypatch.setattr(torch.Tensor, name, make_refuse(name))
    batch = model.collect()
    stats = model.update(batch, coefs)
    monkeypatch.undo()
    assert all(isinstance(v, torch.Tensor) and v.dim() == 0 for v in stats.values())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: torch.cuda.set_sync_debug_mode")
def test_collection_steps_and_update_on_cuda_never_synchronise(monkeypatch):
    torch.manual_seed(0)
    model = bare_model("cuda")
    coefs = {"beta_roll": 0.01, "beta_score": 0.01, "gamma": 0.99}
    model.update(model.collect(), coefs)  # warm-up: first-use allocations, the env and policy
    env = model._players.env
    reset = env.reset

    def reset_unchecked(*args, **kwargs):  # once per batch, before the steps: may check its result
        torch.cuda.set_sync_debug_mode("default")
        try:
            return reset(*args, **kwargs)
        finally:
            torch.cuda.set_sync_debug_mode("error")

    monkeypatch.setattr(env, "reset", reset_unchecked)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        model.update(model.collect(), coefs)
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_minibatch_defaults_to_a_fifth_of_the_batch():
    assert PPO(games_per_batch=20, total_games=20).minibatch_games == 4  # the study's 4 games
    assert PPO(games_per_batch=128, total_games=128).minibatch_games == 25
    assert PPO(games_per_batch=3, total_games=3).minibatch_games == 1
    assert PPO(games_per_batch=20, total_games=20, games_per_minibatch=7).minibatch_games == 7
    with pytest.raises(ValueError, match="games_per_minibatch"):
        PPO(games_per_minibatch=0)


def test_eval_mode_restores_training_and_leaves_eval_alone():
    net = torch.nn.Sequential(torch.nn.Dropout(0.5))
    with eval_mode(net):
        assert not net.training and not net[0].training
    assert net.training and net[0].training
    net.eval()
    with eval_mode(net):
        assert not net.training
    assert not net.training


@pytest.mark.parametrize("kwargs", [{}, {"task": "single_turn"}])
def test_collection_plays_the_batch_torchrl_rollout_plays(kwargs):
    from torchrl.envs.utils import ExplorationType, set_exploration_type

    from yahtzee_lightning.loop.collection import _mix

    model = bare_model(**kwargs)
    batch = model.collect().clone()
    env, policy = model._players.env, model._players.policy
    env.set_seed(model.hparams.seed)  # the seed collection's env was built with
    # the run's own generator (its action samples), back where collection started it
    model._players.generators[0].manual_seed(_mix(model.env_seed(model.hparams.seed)))
    steps = batch.shape[1]
    with set_exploration_type(ExplorationType.RANDOM), eval_mode(model.net):
        expected = env.rollout(steps, policy, break_when_any_done=False)
    assert expected.shape == batch.shape
    keys = sorted(expected.keys(True, True), key=str)
    assert keys == sorted(batch.keys(True, True), key=str)
    # Collection tells the policy each step's roll, so the head that does not act is not computed:
    # its recorded action (ignored by the game) is a placeholder. The rest is the same to the bit.
    rolling = batch["roll"] < 2
    assert rolling.any() and (~rolling).any()
    placeholders = {("action", "keep"): ~rolling, ("action", "box"): rolling}
    for key in keys:
        if key in placeholders:
            active = ~placeholders[key]
            torch.testing.assert_close(batch[key][active], expected[key][active], msg=str(key))
        else:
            torch.testing.assert_close(batch[key], expected[key], msg=str(key))


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"task": "single_turn"},
        {"start_card": "random"},
        {"task": "single_turn", "start_card": "own_play"},
        {"boxes": [0, 5, 12]},
        {"joker": "forced"},
    ],
)
def test_at_every_step_of_a_batch_every_game_is_at_the_same_roll(kwargs):
    """What lets collection tell the policy each step's roll, and the losses read a batch's steps
    as whole turns (``batch_rolls``): each computes only the head that acts."""
    from yahtzee_lightning.nn import WHOLE_TURNS

    model = bare_model(**kwargs)
    assert model.batch_rolls == WHOLE_TURNS
    for _ in range(2):
        roll = model.collect()["roll"]
        assert roll.shape[1] % 3 == 0
        assert (roll == torch.arange(roll.shape[1]) % 3).all()


def test_collection_and_the_update_tell_the_network_the_rows_rolls(monkeypatch):
    """Collection's steps run one head each (roll 0 for both keeps, 2 for the box) and the update's
    loss reads its batch as whole turns: each row runs only the head that acts."""
    from yahtzee_lightning.nn import WHOLE_TURNS, PolicyValueNet

    seen = []
    real = PolicyValueNet.heads

    def heads(self, h, box_mask, rolls=None, dropout_mask=None):
        seen.append(rolls)
        return real(self, h, box_mask, rolls, dropout_mask)

    monkeypatch.setattr(PolicyValueNet, "heads", heads)
    model = bare_model(dropout=0.1)
    batch = model.collect()
    assert seen == [0, 0, 2] * (batch.shape[1] // 3)
    seen.clear()
    model.learn(batch)
    assert WHOLE_TURNS in seen


def test_a_minibatch_of_random_steps_runs_each_head_on_its_own_rows_only(monkeypatch):
    """PPO's minibatches of random steps (the published code's): the rows' own rolls reach the
    network, so the keep head sees no row at the last roll and the box head none before it."""
    from yahtzee_lightning.nn import PolicyValueNet

    seen = []
    real = PolicyValueNet.heads

    def heads(self, h, box_mask, rolls=None, dropout_mask=None):
        seen.append(rolls)
        return real(self, h, box_mask, rolls, dropout_mask)

    model = bare_model(minibatch="steps", normalize_over="batch", games_per_minibatch=2)
    batch = model.collect()
    monkeypatch.setattr(PolicyValueNet, "heads", heads)
    model.learn(batch)
    given = [r for r in seen if isinstance(r, torch.Tensor)]  # the rest: the batch's last next values
    assert len(given) == model.hparams.epochs * 3  # 6 games a batch, 2 a minibatch
    rolls = batch["roll"].reshape(-1).tolist()
    assert sorted(torch.cat(given).tolist()) == sorted(rolls * model.hparams.epochs)


def test_other_seatings_run_every_head_on_every_row():
    assert bare_model(n_players=2, features="two_player").batch_rolls is None


@pytest.mark.parametrize("kwargs", [{}, {"task": "single_turn"}, {"n_players": 2, "features": "two_player"}])
def test_every_game_ends_exactly_at_the_batch_last_step(kwargs):
    """What lets collection skip TorchRL's check for finished games after every step."""
    model = bare_model(**kwargs)
    for _ in range(2):
        done = model.collect()["next", "done"].squeeze(-1)
        assert done[:, -1].all() and not done[:, :-1].any()
