"""The published code's settings as options of ours: its features by name, the upper-score head and
the shaping on it, its gamma and warm-up schedules, PPO's minibatches of steps and batch-wide
normalisation; each against its formula on hand-made input, and refused where it cannot mean what
it says."""

import json
import math
from pathlib import Path

import pytest
import torch
import yaml
from quick_fit import fit_quietly
from tensordict import TensorDict

from yahtzee_lightning.algorithms import A2C, PPO, Reinforce
from yahtzee_lightning.algorithms.policy_gradient import SHAPED_REWARD, UPPER_TARGET
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.env.features import FEATURES, PRESETS, encode, feature_size
from yahtzee_lightning.game import OPEN, Rules
from yahtzee_lightning.nn import LOG_PROB, PolicyValueNet, as_played
from yahtzee_lightning.schedules import lr_factor

ROOT = Path(__file__).resolve().parents[2]
TINY = {
    "d_h": 16,
    "n_layers": 2,
    "head_hidden": 16,
    "evaluations": 1,
    "eval_games": 4,
    "final_eval_games": 0,
    "diagnose_games": 0,
    "features": "paper",
    "dice_encoder": "onehot",
}


def _state(dice: list[int], card: list[int], roll: int = 2) -> TensorDict:
    return TensorDict(
        {
            K.DICE: torch.tensor([dice]),
            K.CARD: torch.tensor([card]),
            K.ROLL: torch.tensor([roll]),
            K.TURN: torch.tensor([sum(c != OPEN for c in card)]),
        },
        batch_size=[1],
    )


def test_the_published_features_by_name_on_a_hand_made_state():
    o = OPEN
    # Upper boxes 3+6+9+12+15 = 45 filled (sixes open), Yahtzee scored 50, four sixes and a two.
    card = [3, 6, 9, 12, 15, o, o, o, o, o, o, 50, o]
    td, rules = _state([2, 6, 6, 6, 6], card), Rules()
    f = {name: FEATURES[name].fn(td, rules)[0].tolist() for name in PRESETS["paper"]}
    assert f["dice_counts"] == [0, 1, 0, 0, 0, 4]  # raw counts, not scaled
    assert f["rolls_used"] == [0, 0, 1] and f["phase"] == [1.0]
    assert f["has_earned_yahtzee"] == [1.0]
    assert f["available_categories"] == [0] * 5 + [1] * 6 + [0, 1]
    assert f["percent_progress_towards_bonus"] == pytest.approx([45 / 63])
    assert f["game_progress"] == pytest.approx([6 / 13])
    # Sixes: 45 + 24 >= 63; the other upper boxes are filled.
    assert f["will_receive_bonus_if_chosen"] == [0, 0, 0, 0, 0, 1]
    scale = [5, 10, 15, 20, 25, 30, 30, 30, 25, 30, 40, 50, 30]
    expected = [0, 0, 0, 0, 0, 24, 26, 26, 0, 0, 0, 0, 26]  # open boxes only; no joker (not a Yahtzee)
    assert f["potential_scoring_opportunities"] == pytest.approx(
        [e / s for e, s in zip(expected, scale, strict=True)] + [0.0]
    )
    # The upper sum past 63 is not capped, and every open upper box then "receives" the bonus.
    full = _state([1, 1, 1, 1, 1], [5, 10, 15, 20, 25, o, o, o, o, o, o, 50, o], roll=0)
    g = {name: FEATURES[name].fn(full, rules)[0].tolist() for name in PRESETS["paper"]}
    assert g["percent_progress_towards_bonus"] == pytest.approx([75 / 63])
    assert g["will_receive_bonus_if_chosen"] == [0, 0, 0, 0, 0, 1] and g["phase"] == [0.0]
    assert g["potential_scoring_opportunities"][-1] == 1.0  # a Yahtzee with the Yahtzee box filled: the joker


def test_the_published_presets_are_its_ten_and_seven_features_in_its_order():
    assert feature_size("paper") == 30 + 6 + 3 + 1 + 1 + 13 + 1 + 14 + 1 + 6
    assert feature_size("paper_single_turn") == 30 + 6 + 3 + 1 + 1 + 13 + 1
    net = PolicyValueNet(dice_encoder="onehot", features="paper", d_h=8, n_layers=1, head_hidden=8)
    assert net.feature_names[:2] == ("dice_onehot", "dice_counts")  # the dice encoder keeps the code's order
    td = _state([1, 2, 3, 4, 6], [OPEN] * 13)
    assert net.encode(td).shape[-1] == feature_size("paper")
    assert torch.equal(net.encode(td), encode(td, "paper", Rules()))


def test_an_upper_head_is_a_fourth_output_and_only_where_it_was_built():
    torch.manual_seed(0)
    td = _state([1, 2, 3, 4, 6], [OPEN] * 13)
    td[K.BOX_MASK] = torch.ones(1, 13, dtype=torch.bool)
    with_head = PolicyValueNet(d_h=8, n_layers=1, head_hidden=8, dropout=0.0, upper_head=True)
    roll, box, value, upper = with_head(td, upper=True)
    assert upper.shape == (1,) and torch.equal(with_head(td)[2], value)
    assert PolicyValueNet(**with_head.config).upper_head is not None  # its config rebuilds it
    plain = PolicyValueNet(d_h=8, n_layers=1, head_hidden=8)
    assert "upper_head" not in plain.config  # older configs and agents: as they were
    with pytest.raises(ValueError, match="no upper-score head"):
        plain(td, upper=True)


def test_the_published_layout_builds_the_codes_blocks_and_its_heads_act_under_their_own_masks():
    """The code's ``Block`` is Linear -> activation -> LayerNorm -> Dropout; its keep and box heads
    are a Block, another Dropout and the output layer; its value and upper heads a Block without
    dropout. The heads' masks come after the trunk's in one draw, so they are recorded and replayed."""
    from torch import nn

    from yahtzee_lightning.nn import ReplayDropout

    def kinds(layers):
        return [type(m).__name__ for m in layers]

    torch.manual_seed(0)
    net = PolicyValueNet(d_h=8, n_layers=2, head_hidden=6, dropout=0.1, upper_head=True, layout="published")
    assert kinds(net.trunk) == ["Linear", "SiLU", "LayerNorm", "ReplayDropout"] * 2
    policy = ["Linear", "SiLU", "LayerNorm", "ReplayDropout", "ReplayDropout", "Linear"]
    assert kinds(net.roll_head) == kinds(net.score_head) == policy
    assert kinds(net.value_head) == kinds(net.upper_head) == ["Linear", "SiLU", "LayerNorm", "Linear"]
    assert net.dropout_shape == (2 + 4, 8)  # the trunk's two layers, then two a policy head
    assert PolicyValueNet(**net.config).config["layout"] == "published"  # its config rebuilds it
    standard = PolicyValueNet(d_h=8, n_layers=2, head_hidden=6, dropout=0.1)
    assert "layout" not in standard.config and standard.dropout_shape == (2, 8)  # older agents: as they were
    assert kinds(standard.trunk)[:3] == ["Linear", "LayerNorm", "SiLU"] and kinds(standard.roll_head)[-2:] == [
        "SiLU",
        "Linear",
    ]
    without_norm = PolicyValueNet(d_h=8, n_layers=1, head_hidden=6, layer_norm=False, layout="published")
    assert not any(isinstance(m, nn.LayerNorm) for m in without_norm.modules())
    assert PolicyValueNet(d_h=8, n_layers=1, dropout=0.0, layout="published").dropout_shape is None
    assert sum(isinstance(m, ReplayDropout) for m in net.modules()) == 6
    # The heads' masks reach the heads: the same trunk masks, the keep head's dropped, move only its logits.
    td = _state([1, 2, 3, 4, 6], [OPEN] * 13, roll=0)
    td[K.BOX_MASK] = torch.ones(1, 13, dtype=torch.bool)
    mask = net.draw_dropout_mask(1)
    mask[:, 2:] = 1.0
    dropped = mask.clone()
    dropped[:, 2, :6] = 0.0  # every unit of the keep head's first dropout layer
    kept, lost = net(td, None, mask), net(td, None, dropped)
    assert not torch.allclose(kept[0], lost[0]) and torch.equal(kept[1], lost[1]) and torch.equal(kept[2], lost[2])
    with pytest.raises(ValueError, match="layout must be one of"):
        PolicyValueNet(layout="paper")


def _batch_model(cls=A2C, **kw):
    torch.manual_seed(0)
    model = cls(**TINY, total_games=8, games_per_batch=4, upper_score_weight=1.0, **kw)
    return model, model.collect()


def test_shaping_adds_the_potential_difference_of_the_heads_prediction_as_the_code_defines_it():
    model, batch = _batch_model(upper_shaping=0.5)
    with torch.no_grad():
        flat = batch.reshape(-1)
        u = model.net(flat, flat["features"], flat["dropout_mask"], upper=True)[3].reshape(batch.shape)
    potential = 35 * (1 + u).clamp(0, 1)
    after = torch.cat([potential[:, 1:], torch.full_like(potential[:, :1], 35.0)], 1)  # u = 0 after the game
    shaped = model.rewards(batch)
    torch.testing.assert_close(shaped.squeeze(-1), batch["next", K.REWARD].squeeze(-1) + 0.5 * (after - potential))
    # It telescopes: a game's shaping is w (35 - P(first state)), whatever the path.
    extra = (shaped - batch["next", K.REWARD]).squeeze(-1).sum(1)
    torch.testing.assert_close(extra, 0.5 * (35 - potential[:, 0]))
    # Without shaping the rewards are the game's.
    plain, plain_batch = _batch_model()
    assert torch.equal(plain.rewards(plain_batch), plain_batch["next", K.REWARD])


def test_the_upper_target_is_the_games_final_upper_sum_and_the_loss_its_squared_error():
    model, batch = _batch_model()
    model.set_upper_targets(batch)
    final = batch["next", K.CARD][:, -1, :6].clamp(min=0).sum(-1).float()
    assert torch.equal(batch[UPPER_TARGET], ((final - 63) / 63).unsqueeze(1).expand(batch.shape))
    flat = batch.reshape(-1)
    predicted = torch.randn(flat.shape[0])
    loss = model.upper_loss(flat, [predicted])["upper"]
    torch.testing.assert_close(loss, 1.0 * ((predicted - flat[UPPER_TARGET]) ** 2).mean())
    assert model.upper_loss(flat, []) == {}


@pytest.mark.parametrize("cls", [A2C, PPO, Reinforce], ids=lambda c: c.__name__)
def test_the_upper_head_learns_its_target_in_every_algorithm(cls):
    torch.manual_seed(0)
    kw = {"minibatch": "steps", "normalize_over": "batch"} if cls is PPO else {}
    model = cls(**TINY, total_games=40, games_per_batch=4, upper_score_weight=1.0, upper_shaping=1.0, **kw)
    before = {k: v.clone() for k, v in model.net.upper_head.state_dict().items()}
    fit_quietly(model)
    after = model.net.upper_head.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)


@pytest.mark.parametrize("cls", [A2C, PPO, Reinforce], ids=lambda c: c.__name__)
def test_an_unlearnt_upper_head_shapes_with_its_starting_weights_and_its_loss_moves_nothing(cls):
    """``learn_upper_head: false``, the published code's PPO: the head is built and its prediction
    shapes the rewards, but its regression loss (added there after the optimiser's steps) sends no
    gradient to the head or the trunk: the head keeps its starting weights however long it trains."""
    torch.manual_seed(0)
    kw = {"minibatch": "steps", "normalize_over": "batch"} if cls is PPO else {}
    settings = {"upper_score_weight": 1.0, "upper_shaping": 1.0, "learn_upper_head": False}
    model = cls(**TINY, total_games=40, games_per_batch=4, **settings, **kw)
    before = {k: v.clone() for k, v in model.net.upper_head.state_dict().items()}
    trunk = model.net.trunk[0].weight.clone()
    fit_quietly(model)
    after = model.net.upper_head.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not torch.equal(trunk, model.net.trunk[0].weight)  # the rest learnt
    # The term is there, at its weight, without a gradient.
    batch = model.collect()
    model.set_upper_targets(batch)
    flat = batch.reshape(-1)
    predicted = model.net(flat, flat["features"], flat["dropout_mask"], upper=True)[3]
    term = model.upper_loss(flat, [predicted])["upper"]
    assert not term.requires_grad and predicted.requires_grad
    torch.testing.assert_close(term, ((predicted - flat[UPPER_TARGET]) ** 2).mean().detach())
    with pytest.raises(ValueError, match="learn_upper_head: false leaves the upper-score head unlearnt"):
        cls(**TINY, learn_upper_head=False)


def _first_log_probs(**settings) -> tuple[torch.Tensor, torch.Tensor]:
    """A tiny PPO's first minibatch: the log-probabilities recorded while playing, and the update's."""
    firsts = []

    class Probe(PPO):
        def evaluate_actions(self, obs, dist_value=None):
            out = super().evaluate_actions(obs, dist_value)
            if not firsts:
                firsts.append((obs[LOG_PROB].clone(), out[0].detach().clone()))
            return out

    torch.manual_seed(0)
    fit_quietly(Probe(**TINY, total_games=8, games_per_batch=4, **settings))
    return firsts[0]


@pytest.mark.parametrize("layout", ["standard", "published"])
def test_ppo_at_the_codes_settings_differentiates_the_policy_that_acted(layout):
    """Minibatches of random steps, normalised once over the batch, with the upper head and shaping:
    the first minibatch's log-probabilities are the recorded ones (its first ratio is 1); in the
    code's layout too, whose heads' dropout masks are recorded and replayed with the trunk's."""
    recorded, learned = _first_log_probs(
        dropout=0.1,
        minibatch="steps",
        normalize_over="batch",
        upper_score_weight=1.0,
        upper_shaping=1.0,
        layout=layout,
    )
    torch.testing.assert_close(learned, recorded, rtol=0, atol=1e-6)
    assert float((learned - recorded).exp().max()) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("layout", ["standard", "published"])
@pytest.mark.parametrize(("dropout", "replayed"), [(0.1, False), (0.0, False), (0.1, True)])
def test_without_its_masks_replayed_the_update_learns_another_policy_than_the_one_that_acted(dropout, replayed, layout):
    """``replay_dropout: false`` (the published code's handling): the update draws fresh dropout masks,
    so PPO's first ratio is not 1; the masks are the whole difference (none without dropout)."""
    recorded, learned = _first_log_probs(dropout=dropout, replay_dropout=replayed, layout=layout)
    gap = float((learned - recorded).abs().max())
    assert gap > 1e-3 if dropout and not replayed else gap < 1e-6


@pytest.mark.parametrize("ahead", [False, True])
def test_play_ahead_learns_each_batch_one_update_after_it_was_played(ahead):
    """``play_ahead`` (the published code's prefetching loader): the batch learnt at update k was played
    by the weights of update k - 1 (the first two by the starting weights); off, by update k's own."""
    played, learned = [], []

    def mark(batch):
        return tuple(batch[K.DICE].flatten().tolist())

    class Probe(A2C):
        def collect(self):
            batch = super().collect()
            played.append((mark(batch), int(self.updates_done)))
            return batch

        def update(self, batch, coefs):
            learned.append(mark(batch))
            return super().update(batch, coefs)

    torch.manual_seed(0)
    fit_quietly(Probe(**TINY, dropout=0.1, play_ahead=ahead, total_games=16, games_per_batch=4))
    by_mark = dict(played)
    assert len(learned) == 4 and len(by_mark) == len(played)  # every batch told apart
    assert [by_mark[m] for m in learned] == ([0, 0, 1, 2] if ahead else [0, 1, 2, 3])
    assert len(played) == (5 if ahead else 4)  # ahead: the batch after the last update is played, not learnt


@pytest.mark.parametrize("cls", [A2C, Reinforce], ids=lambda c: c.__name__)
def test_an_update_baseline_takes_v_of_the_updates_forward_and_v_next_as_recorded(cls):
    """``baseline: update`` (the published code's REINFORCE and A2C): the advantage is ``R - V(s)`` with
    ``V(s)`` from the update's own forward pass (``R``: the return, or at TD(0) ``r + gamma V(s')`` with
    ``V(s')`` as recorded); ``collected`` keeps the ``V(s)`` recorded when the step was played. The
    network is moved after playing, so the two differ."""
    coefs = {"beta_roll": 0.0, "beta_score": 0.0, "gamma": 0.9}
    policies = {}
    for baseline in ("collected", "update"):
        model, batch = _batch_model(cls, dropout=0.1, baseline=baseline)
        model.set_upper_targets(batch)
        if cls is A2C:
            advantage, returns = model.advantages(batch, coefs["gamma"], 0.0)
        else:
            advantage, returns = None, torch.zeros(batch.shape)  # REINFORCE's own, below
        with torch.no_grad():
            for p in model.net.parameters():
                p.add_(0.05 * torch.randn_like(p))  # the update's network is not the one that played
        flat = batch.reshape(-1)
        if cls is Reinforce:
            from torchrl.objectives.value.functional import reward2go

            returns = reward2go(batch["next", K.REWARD], batch["next", K.DONE], coefs["gamma"])
            advantage = returns.reshape(batch.shape) - batch["state_value"]
        _, stats = model.policy_gradient_loss(flat, advantage.reshape(-1), returns.reshape(-1), coefs)
        with torch.no_grad():
            dist, value = as_played(model.net, flat)
            log_prob = dist.log_prob(flat[K.KEEP], flat[K.BOX])
        v = value if baseline == "update" else flat["state_value"]
        expected = returns.reshape(-1) - v if cls is Reinforce else advantage.reshape(-1) + flat["state_value"] - v
        torch.testing.assert_close(stats["loss_policy"], -(log_prob * model.normalize(expected)).mean())
        policies[baseline] = stats["loss_policy"]
    assert not torch.isclose(policies["collected"], policies["update"])


def test_a_batch_played_ahead_carries_the_shaping_of_the_network_that_played_it():
    """``play_ahead`` with shaping: the potentials are read as the batch is played, by the network that
    played it (the published code's collection recorded them), not by the later one that learns."""
    checked = {"played": 0, "later": 0}

    class Probe(A2C):
        def play_batch_ahead(self):
            batch = super().play_batch_ahead()
            torch.testing.assert_close(batch[SHAPED_REWARD], self.rewards(batch.exclude(SHAPED_REWARD)), rtol=0, atol=0)
            checked["played"] += 1
            return batch

        def update(self, batch, coefs):
            now = self.rewards(batch.exclude(SHAPED_REWARD))
            checked["later"] += int(not torch.allclose(batch[SHAPED_REWARD], now))
            assert torch.equal(self.rewards(batch), batch[SHAPED_REWARD])
            return super().update(batch, coefs)

    torch.manual_seed(0)
    settings = {"upper_score_weight": 1.0, "upper_shaping": 1.0, "dropout": 0.1, "play_ahead": True}
    fit_quietly(Probe(**TINY, total_games=16, games_per_batch=4, **settings))
    # Five batches played; the last three learnt were played before the update that came before them.
    assert checked == {"played": 5, "later": 3}


def test_step_minibatches_cover_every_step_once_an_epoch_in_random_order():
    torch.manual_seed(0)
    batch = TensorDict({"i": torch.arange(20 * 39).reshape(20, 39)}, batch_size=[20, 39])
    parts = list(PPO.step_minibatches(batch, epochs=2, size=4 * 39))
    assert [p.shape[0] for p in parts] == [156] * 10
    for epoch in (parts[:5], parts[5:]):
        seen = torch.cat([p["i"] for p in epoch])
        assert torch.equal(seen.sort().values, torch.arange(780))
        assert not torch.equal(seen, torch.arange(780))  # shuffled across games


def test_batch_wide_normalisation_is_applied_once_before_the_minibatches():
    seen = []

    class Probe(PPO):
        def minibatch_loss(self, mb, coefs):
            seen.append(mb["advantage"].clone())
            return super().minibatch_loss(mb, coefs)

    torch.manual_seed(0)
    model = Probe(**TINY, total_games=4, games_per_batch=4, epochs=1, games_per_minibatch=1, normalize_over="batch")
    fit_quietly(model)
    everything = torch.cat(seen)
    assert abs(float(everything.mean())) < 1e-5 and float(everything.std()) == pytest.approx(1.0, abs=1e-4)
    assert any(abs(float(a.mean())) > 1e-3 for a in seen)  # each minibatch is not normalised on its own


def test_gamma_anneals_over_its_period_and_the_warm_up_starts_at_its_floor():
    model = A2C(**TINY, total_games=8, games_per_batch=4, gamma_min=0.9, gamma_max=1.0, gamma_anneal=0.5)
    assert model.gamma(0.0) == pytest.approx(0.9)
    assert model.gamma(0.25) == pytest.approx(0.95)
    assert model.gamma(0.5) == model.gamma(0.9) == pytest.approx(1.0)
    assert lr_factor(0.0, 0.05, 0.7, 0.05, start=0.05) == pytest.approx(0.05)
    assert lr_factor(0.025, 0.05, 0.7, 0.05, start=0.05) == pytest.approx(0.525)
    assert lr_factor(0.0, 0.05, 0.7, 0.05) == pytest.approx(1e-3)  # as before: from (almost) zero
    assert lr_factor(1.0, 0.05, 0.7, 0.05, start=0.05) == pytest.approx(0.05)


@pytest.mark.parametrize("manual", [False, True])
def test_lightning_steps_a_configured_scheduler_only_under_automatic_optimisation(manual):
    """The fact ``lr_schedule: unstepped`` reproduces: the published code's PPO turns automatic
    optimisation off and returns a per-epoch ``LambdaLR`` that it never steps itself."""
    import lightning as L

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net, self.automatic_optimization, self.rates = torch.nn.Linear(2, 1), not manual, []

        def training_step(self, batch, batch_idx):
            opt = self.optimizers()
            self.rates.append(opt.param_groups[0]["lr"])
            loss = self.net(batch[0]).pow(2).mean()
            if manual:
                opt.zero_grad()
                self.manual_backward(loss)
                opt.step()
            return loss

        def configure_optimizers(self):
            opt = torch.optim.Adam(self.parameters(), lr=1e-3)
            warm = torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.05 + 0.95 * min(epoch / 3, 1.0))
            return {"optimizer": opt, "lr_scheduler": {"scheduler": warm, "frequency": 1}}

    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(4, 2)), batch_size=4)
    module = Module()
    L.Trainer(
        max_epochs=5, logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False
    ).fit(module, data)
    assert module.rates[0] == pytest.approx(5e-5)  # the schedule's first value, set when it is built
    assert module.rates[-1] == pytest.approx(5e-5 if manual else 1e-3)


@pytest.mark.parametrize("schedule", ["stepped", "unstepped"])
def test_an_unstepped_schedule_holds_the_learning_rate_at_its_first_value(schedule):
    """``lr_schedule: unstepped`` (the published code's PPO: Lightning never steps a scheduler under
    manual optimisation): every update at ``warmup_start * lr``; stepped, the warm-up moves it."""
    rates = []

    class Probe(PPO):
        def update(self, batch, coefs):
            rates.append(self.optimizers().optimizer.param_groups[0]["lr"])
            return super().update(batch, coefs)

    settings = {"lr": 1e-3, "warmup_start": 0.05, "r_alpha": 0.05, "warmup": 0.5, "hold": 0.25}
    model = Probe(**TINY, **settings, lr_schedule=schedule, total_games=16, games_per_batch=4, epochs=1)
    fit_quietly(model)
    assert len(rates) == 4 and rates[0] == pytest.approx(5e-5)
    if schedule == "unstepped":
        assert rates == pytest.approx([5e-5] * 4) and model.lr_at(0.9) == pytest.approx(5e-5)
    else:
        assert rates[1] == pytest.approx(1e-3 * lr_factor(0.25, 0.5, 0.25, 0.05, start=0.05))
        assert model.lr_at(1.0) == pytest.approx(5e-5) and model.lr_at(0.6) == pytest.approx(1e-3)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"upper_shaping": 1.0}, "upper_shaping 1.0 shapes rewards with the upper-score head's prediction"),
        ({"upper_score_weight": -1.0}, "upper_score_weight must be >= 0"),
        ({"upper_score_weight": 1.0, "ensemble": 2}, "upper-score head trains a single solitaire run"),
        ({"gamma_anneal": 1.5}, "gamma_anneal must be in"),
        ({"warmup_start": -0.1}, "warmup_start must be in"),
        ({"features": ["dice_onehot", "upper_score_head"]}, "unknown features \\['upper_score_head'\\]"),
        ({"replay_dropout": "no"}, "replay_dropout must be true or false, got 'no'"),
        ({"lr_schedule": "frozen"}, "lr_schedule must be one of \\('stepped', 'unstepped'\\), got 'frozen'"),
        ({"play_ahead": True, "ensemble": 2}, "play_ahead: True \\(an ablation of the published code's handling\\)"),
        ({"baseline": "learner"}, "baseline must be one of \\('collected', 'update'\\), got 'learner'"),
        ({"baseline": "update", "gae_lambda": 0.5}, "baseline: update takes V\\(s\\) of the update's forward"),
        ({"baseline": "update", "ensemble": 2}, "baseline: update \\(an ablation of the published code's handling\\)"),
    ],
)
def test_a_setting_we_do_not_have_or_cannot_honour_is_refused_in_one_line(settings, message):
    with pytest.raises(ValueError, match=message) as err:
        A2C(**{**TINY, **settings})
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("name", "value"), [("minibatch", "episodes"), ("normalize_over", "epoch")])
def test_ppo_refuses_an_unknown_minibatch_or_normalisation(name, value):
    with pytest.raises(ValueError, match=f"{name} must be one of"):
        PPO(**TINY, **{name: value})


def test_ppo_refuses_an_update_baseline_its_loss_would_not_honour():
    """The published code's PPO took V(s) as recorded; ours has no other: ``baseline: update`` is refused."""
    with pytest.raises(
        ValueError, match="baseline: update .* is for REINFORCE and A2C; PPO takes V\\(s\\) as recorded"
    ):
        PPO(**TINY, baseline="update")


# The published run configs (Pape 2025's repository, commit 8d970d1, baselines/), the fields that
# have a setting here, and where each recipe must carry them.
PUBLISHED = {
    "a2c_250k": {"lr": 1e-4, "lambda_v": 0.005, "beta_roll_max": 0.1, "beta_roll_min": 0.02, "beta_score_max": 0.03,
                 "beta_score_min": 0.01, "entropy_hold": 0.3, "entropy_anneal": 0.6, "total_games": 250_000,
                 "upper_score_weight": 1.0, "upper_shaping": 1.0, "tau_clip": 1.0, "r_alpha": 0.05},
    "a2c_1m": {"entropy_hold": 0.075, "entropy_anneal": 0.9, "total_games": 1_000_000, "upper_shaping": 1.0},
    "ppo_250k": {"lr": 1e-3, "lambda_v": 0.01, "beta_roll_max": 0.02, "beta_roll_min": 0.005, "beta_score_max": 0.05,
                 "epochs": 4, "games_per_minibatch": 4, "clip_eps": 0.2, "upper_shaping": 0.0, "entropy_hold": 0.05},
    "ppo_250k_shaped": {"upper_score_weight": 1.0, "upper_shaping": 1.0, "lr": 1e-3},
    "ppo_50k": {"lr": 5e-4, "epochs": 5, "lambda_v": 0.005, "total_games": 50_000, "entropy_hold": 0.3},
    "reinforce_250k": {"lr": 1e-3, "lambda_v": 0.025, "gamma_min": 0.95, "gamma_max": 1.0, "tau_clip": 0.0,
                       "r_alpha": 0.01, "beta_score_min": 0.003, "entropy_anneal": 0.55},
    "reinforce_1m": {"entropy_hold": 0.025, "entropy_anneal": 0.91225, "total_games": 1_000_000},
    "single_turn": {"task": "single_turn", "lr": 5e-4, "lambda_v": 0.05, "n_layers": 3, "gamma_min": 0.9,
                    "beta_roll_min": 0.0, "games_per_batch": 26 * 13, "total_games": 260_000 * 13},
}  # fmt: skip


@pytest.mark.parametrize("row", sorted(PUBLISHED))
def test_each_recipe_carries_its_published_settings_and_builds(row):
    config = yaml.safe_load((ROOT / "conf" / "paper" / f"{row}.yaml").read_text())
    args = config["model"]["init_args"]
    for key, value in PUBLISHED[row].items():
        assert args[key] == value, f"{row}: {key}"
    # Every recipe: the code's network (600 wide, heads as wide), features, advantages normalised.
    assert (args["d_h"], args["head_hidden"], args["dropout"], args["activation"]) == (600, 600, 0.1, "silu")
    assert args["features"] == ("paper_single_turn" if row == "single_turn" else "paper")
    assert args["normalize_advantage"] is True and args["warmup_start"] == args["r_alpha"]
    assert args["final_eval_games"] == 100_000 and args["games_per_batch"] * args["evaluations"] <= args["total_games"]
    cls = {"A2C": A2C, "PPO": PPO, "Reinforce": Reinforce}[config["model"]["class_path"].rsplit(".", 1)[1]]
    model = cls(**{**args, "d_h": 8, "head_hidden": 8})  # its settings pass every check
    assert model.has_upper_head == (args["upper_score_weight"] > 0)
    if cls is PPO:
        assert (args["minibatch"], args["normalize_over"]) == ("steps", "batch")


def test_the_optimal_players_boxes_match_the_published_dp_baseline_within_monte_carlo_error():
    """Our optimal player (a few thousand games: fast) against the published DP player's per-box
    means (conf/paper/published.json): every box and the upper bonus within 4 standard errors."""
    from yahtzee_lightning.evaluation.protocol import play_games
    from yahtzee_lightning.resolve import resolve_player

    baseline = json.loads((ROOT / "conf" / "paper" / "published.json").read_text())["dp_baseline"]
    rules = Rules()
    raw = play_games(resolve_player("optimal", rules), 3000, 11, rules)
    card = raw["card"].double()
    boxes = [*card.T, (card[:, :6].sum(-1) >= 63).double() * 35]
    for (mean, var), ours in zip(baseline["per_box"][:14], boxes, strict=True):
        z = (float(ours.mean()) - mean) / math.sqrt(var / len(ours))
        assert abs(z) < 4, (mean, float(ours.mean()), z)
