"""A pack learned as one update (``ensemble_update: batched``): each member as it learns alone."""

import lightning as L
import pytest
import torch
from quick_fit import fit_quietly
from test_ensemble import TINY

from yahtzee_lightning.algorithms import A2C, PPO, AnchoredPPO, Distill, Reinforce
from yahtzee_lightning.loop.op_count import count_ops
from yahtzee_lightning.loop.packed import PackAdam, clip_members

# Members that differ in everything a packed update maps per member: seed, learning rate, clipping
# and the entropy schedule.
MEMBERS = [{"seed": 3}, {"seed": 4, "lr": 3e-3, "tau_clip": 0.05}, {"seed": 5, "beta_roll_max": 0.2}]


def _fit(cls, updates: int = 5, **kwargs) -> L.LightningModule:
    settings = {**TINY, "dropout": 0.2, "games_per_batch": 6, "seed": 7, **kwargs}
    L.seed_everything(settings["seed"], verbose=False)  # a single run's seed_everything
    model = cls(**settings, total_games=updates * settings["games_per_batch"])
    fit_quietly(model)
    return model


def _close(a: torch.nn.Module, b: torch.nn.Module) -> None:
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, atol=2e-6, rtol=0, msg=lambda m, n=name: f"{n}: {m}")


@pytest.mark.parametrize(
    "cls",
    [A2C, pytest.param(PPO, marks=pytest.mark.slow("PPO's epochs over a pack and alone: about 13 s")), Reinforce],
    ids=lambda c: c.__name__,
)
def test_each_member_of_a_batched_pack_learns_what_it_learns_alone(cls):
    pack = _fit(cls, ensemble=MEMBERS, ensemble_update="batched")
    loop = _fit(cls, ensemble=MEMBERS)
    for k in range(len(MEMBERS)):
        _close(pack.members[k], loop.members[k])  # the loop: each member's own update in turn
    # The member with its own lr and clipping, alone: in a pack of one, and as a single run.
    _close(pack.members[1], _fit(cls, ensemble=[MEMBERS[1]], ensemble_update="batched").members[0])
    single = _fit(cls, **{k: v for k, v in MEMBERS[1].items() if k != "seed"}, seed=4)
    _close(pack.members[1], single.net)
    start = cls(
        **{**TINY, "dropout": 0.2, "games_per_batch": 6}, seed=7, ensemble=MEMBERS
    )  # the members' initial weights
    moved = [
        (a - b).abs().max() for a, b in zip(pack.members[0].parameters(), start.members[0].parameters(), strict=True)
    ]
    assert max(moved) > 1e-4  # it learned something
    assert not torch.equal(pack.members[0].trunk[0].weight, pack.members[2].trunk[0].weight)


def test_pack_adam_is_adam_member_by_member_and_clipping_is_by_each_members_norm():
    torch.manual_seed(0)
    shapes = [(4, 5), (5,)]
    weights = [torch.randn(3, *shape) for shape in shapes]
    lrs = torch.tensor([1e-3, 5e-3, 2e-2])
    taus = torch.tensor([0.1, float("inf"), 1.0])
    scale = torch.ones(3, 25)
    scale[1, 20:] = 4.0  # member 1's second tensor (its "value head") at 4x its learning rate
    flat = torch.cat([w.reshape(3, -1) for w in weights], dim=1)
    opt = PackAdam(flat, scale)
    singles = [[w[k].clone().requires_grad_() for w in weights] for k in range(3)]
    adams = [
        torch.optim.Adam(
            [{"params": singles[k][:1]}, {"params": singles[k][1:], "lr": float(lrs[k]) * float(scale[k, -1])}],
            lr=float(lrs[k]),
        )
        for k in range(3)
    ]
    for _ in range(4):
        grads = [torch.randn_like(w) for w in weights]
        flat.grad = torch.cat([g.reshape(3, -1) for g in grads], dim=1)
        norm, clipped = clip_members(flat.grad, taus)
        opt.member_lr = lrs
        opt.step()
        for k in range(3):
            for p, g in zip(singles[k], grads, strict=True):
                p.grad = g[k].clone()
            alone = torch.nn.utils.clip_grad_norm_(singles[k], float(taus[k]))
            torch.testing.assert_close(norm[k], alone)
            assert bool(clipped[k]) == bool(alone > taus[k])
            adams[k].step()
    assert clipped.tolist() == [1.0, 0.0, 1.0]
    for k in range(3):
        torch.testing.assert_close(
            flat[k], torch.cat([p.detach().reshape(-1) for p in singles[k]]), atol=1e-7, rtol=1e-6
        )


def test_a_batched_pack_costs_about_one_members_operators():
    # Counted, not timed: the operators of an update (forward, backward, clipping, Adam) and of a
    # batch (with its collection: each member's draws read ahead) do not grow with the members
    # (the loop's update grows K-fold).
    tiny = {**TINY, "gae_lambda": 0.0, "games_per_batch": 2, "diagnose_games": 0}
    one = count_ops(A2C, tiny, batches=1)
    eight = count_ops(A2C, {**tiny, "ensemble": 8, "ensemble_update": "batched"}, batches=1)
    loop = count_ops(A2C, {**tiny, "ensemble": 8}, batches=1)
    assert eight.quiet_update() <= 1.5 * one.quiet_update(), (eight.quiet_update(), one.quiet_update())
    assert eight.per_batch("total") <= 1.5 * one.per_batch("total")
    assert loop.quiet_update() >= 6 * one.quiet_update()


def test_a_batched_pack_resumes_its_adam_and_exports_its_members(tmp_path, capsys, monkeypatch):
    from test_cli import _fit as cli_fit

    monkeypatch.chdir(tmp_path)  # the recipe's first logger keeps its runs/a2c: under tmp_path, not the checkout

    from yahtzee_lightning.cli import main

    members = [
        "--model.init_args.ensemble=[{seed: 3}, {seed: 4, lr: 0.002}]",
        "--model.init_args.ensemble_update=batched",
    ]
    assert cli_fit(tmp_path, "a2c.yaml", *members, "--trainer.max_epochs=1") == 0
    assert cli_fit(tmp_path, "a2c.yaml", *members, "--ckpt_path=last") == 0
    (ckpt,) = (tmp_path / "checkpoints").rglob("last.ckpt")
    saved = torch.load(ckpt, weights_only=True)
    (adam,) = saved["optimizer_states"]
    assert int(saved["state_dict"]["updates_done"]) == 6 and int(adam["state"][0]["step"]) == 6
    assert adam["state"][0]["exp_avg"].shape[0] == 2  # one Adam state, stacked per member
    assert (
        main(
            [
                "export",
                str(ckpt),
                str(tmp_path / "m1"),
                "--games",
                "0",
                "--member",
                "1",
            ]
        )
        == 0
    )
    from yahtzee_lightning.hub import YahtzeeAgent

    agent = YahtzeeAgent.from_pretrained(tmp_path / "m1")
    torch.testing.assert_close(
        agent.net.state_dict()["trunk.0.weight"], saved["state_dict"]["members.1.trunk.0.weight"]
    )


@pytest.mark.parametrize(
    ("cls", "settings", "message"),
    [
        (A2C, {"ensemble": [{}, {"lambda_v": 0.5}]}, "ensemble member 1: lambda_v differs from member 0's"),
        (PPO, {"ensemble": {"clip_eps": [0.1, 0.2]}}, "ensemble member 1: clip_eps differs"),
        (Distill, {"ensemble": 2}, "cannot pack Distill"),
        (AnchoredPPO, {"ensemble": 2}, "cannot pack AnchoredPPO"),
    ],
)
def test_what_a_batched_pack_cannot_map_is_refused_by_name(cls, settings, message):
    with pytest.raises(ValueError, match=message):
        cls(**TINY, **settings, ensemble_update="batched")


def test_an_unknown_ensemble_update_is_refused():
    with pytest.raises(ValueError, match="ensemble_update must be one of"):
        A2C(**TINY, ensemble=2, ensemble_update="vmap")


def test_a_batched_packs_stacked_forward_follows_its_members_to_their_device():
    """The stacked forward is not a registered child, so a move to a GPU never reached its own tensors and
    a batched pack drew its dropout masks on the CPU ("Expected a 'cpu' device type for generator but
    found 'cuda'" at the first step on an H200). ``meta`` stands in for the GPU here."""
    model = A2C(
        **{**TINY, "dropout": 0.2, "games_per_batch": 6},
        seed=7,
        ensemble=MEMBERS[:2],
        ensemble_update="batched",
        total_games=30,
    )
    model.to("meta")  # as Lightning moves a module before it builds the optimizer (the live stacks)
    model.configure_optimizers()
    assert model._stacked.draw_dropout_mask(6).device.type == "meta"
    assert {p.device.type for p in model._stacked.parameters()} == {"meta"}
