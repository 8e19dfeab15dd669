"""``capture``: the collection's game step compiled (or replayed as a CUDA graph), the same games."""

import pytest
import torch
from test_ensemble import TINY

from yahtzee_lightning.algorithms import A2C
from yahtzee_lightning.env.games import Games


def _batches(capture: str, device: str = "cpu", **kwargs) -> list[torch.Tensor]:
    """The dice and rewards of two batches collected by a fresh module (no Trainer: collection only)."""
    torch.manual_seed(0)  # a single run's initial weights
    model = A2C(**{**TINY, "games_per_batch": 4, "seed": 3, "capture": capture, **kwargs}).to(device)
    out = []
    for _ in range(2):  # two batches: the dice of the second are fresh ones, not the first's replayed
        batch = model.collect()
        out.append(torch.cat([batch["dice"].flatten(), batch["next", "reward"].flatten()]).clone())
    return out


@pytest.mark.slow("compiles the game step with torch.compile (inductor, a C++ compiler): about 20 s on 2 cores")
@pytest.mark.parametrize("kwargs", [{}, {"ensemble": 2}], ids=["single", "pack"])
def test_a_compiled_step_plays_the_games_of_the_eager_one(kwargs):
    eager, compiled = _batches("none", **kwargs), _batches("compile", **kwargs)
    for a, b in zip(eager, compiled, strict=True):
        assert torch.equal(a, b)
    assert not torch.equal(compiled[0], compiled[1])  # fresh dice every step, batch after batch


@pytest.mark.slow("compiles the collection's step (inductor): about 10 s on 2 cores")
def test_a_captured_step_dispatches_a_few_dozen_operators():
    # Counted by the profiler (the op counter cannot see inside a compiled function): the aten calls
    # at top level, those a compiled graph makes into libraries (the matrix products) included.
    def per_step(capture: str) -> float:
        torch.manual_seed(0)
        model = A2C(**{**TINY, "boxes": None, "joker": "free", "games_per_batch": 4, "capture": capture})
        model.collect()  # compiles
        with torch.profiler.profile() as prof:
            batch = model.collect()
        top = [e for e in prof.events() if e.name.startswith("aten::")]
        top = [e for e in top if not (e.cpu_parent and e.cpu_parent.name.startswith("aten::"))]
        return len(top) / batch.shape[1]

    eager, captured = per_step("none"), per_step("compile")
    assert captured <= 60 < eager, (captured, eager)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: replays CUDA graphs")
def test_a_cuda_graph_step_plays_fresh_dice_every_replay():
    eager, replayed = _batches("none", "cuda"), _batches("cudagraphs", "cuda")
    for a, b in zip(eager, replayed, strict=True):
        assert torch.equal(a, b)
    assert not torch.equal(replayed[0], replayed[1])


def test_a_capture_the_device_or_env_cannot_run_is_refused_by_name():
    with pytest.raises(ValueError, match="capture: cudagraphs replays CUDA graphs and needs a CUDA device, not cpu"):
        Games(4, capture="cudagraphs")
    with pytest.raises(ValueError, match=r"capture must be one of \('none', 'compile', 'cudagraphs'\)"):
        A2C(**TINY, capture="graph")
    with pytest.raises(ValueError, match="capture: compile compiles the solitaire env's step; the match env"):
        A2C(**TINY, capture="compile", n_players=2, features="two_player")


def test_a_cuda_capture_on_the_cpu_ends_in_one_line_before_training(tmp_path, capsys, monkeypatch):
    from test_cli import _fit

    monkeypatch.chdir(tmp_path)  # the recipe's runs/a2c, were anything written: under tmp_path

    with pytest.raises(SystemExit) as exit_:
        _fit(tmp_path, "a2c.yaml", "--model.init_args.capture=cudagraphs", "--trainer.accelerator=cpu")
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "capture: cudagraphs replays CUDA graphs and needs a CUDA device, not cpu" in err[-1]
    assert not list(tmp_path.rglob("*.ckpt"))


@pytest.mark.slow("compiles an update's loss, forward and backward (inductor): about 25 s on 2 cores")
@pytest.mark.parametrize("algorithm", ["A2C", "PPO"])
def test_a_compiled_update_learns_the_eager_updates_weights(algorithm):
    import lightning as L

    from yahtzee_lightning import algorithms
    from yahtzee_lightning.loop.trainer import quiet_trainer

    def build(capture: str):
        L.seed_everything(0, verbose=False)
        return getattr(algorithms, algorithm)(**{**TINY, "games_per_batch": 5, "total_games": 15, "capture": capture})

    start = build("none").net  # the weights both runs start from
    nets = []
    for capture in ("none", "compile"):
        model = build(capture)
        quiet_trainer().fit(model)
        nets.append(model.net)
    for a, b in zip(nets[0].parameters(), nets[1].parameters(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    moved = max((a - c).abs().max() for a, c in zip(nets[1].parameters(), start.parameters(), strict=True))
    assert moved > 1e-4  # they learned: agreeing is not both standing still


def test_each_captured_function_counts_its_own_recompiles():
    """The compiler counts recompiles per code object and fails a ``fullgraph`` compile past its limit
    (8): every env's captured step shared one method's code, so a sweep in one process failed at its
    next batch size. ``own_code`` gives each its own (the limit set to 1 here; the eager backend)."""
    from yahtzee_lightning.env.games import own_code

    class Step:
        def __init__(self, n: int) -> None:
            self.n = n

        def advance(self, x: torch.Tensor, *, by: float = 1.0) -> tuple[torch.Tensor]:
            return (x * self.n + by,)

    def compiled(fn):
        return torch.compile(fn, backend="eager", fullgraph=True, dynamic=False)

    torch._dynamo.reset()
    try:
        with torch._dynamo.config.patch(recompile_limit=1):
            for n in (2, 3, 4):  # a shape and a constant of their own each: one recompile each if shared
                (out,) = compiled(own_code(Step(n).advance))(torch.ones(n))
                assert torch.equal(out, torch.full((n,), n + 1.0))
            with pytest.raises(Exception, match="fullgraph"):  # the same method's code, shared
                for n in (5, 6):
                    compiled(Step(n).advance)(torch.ones(n))
    finally:
        torch._dynamo.reset()


@pytest.mark.slow("compiles three models' collection steps (inductor): about 30 s on 2 cores")
def test_one_process_captures_the_step_of_several_batch_sizes():
    # The policy's captured step compiles a graph for each roll of a turn (3): a limit of 3 holds one
    # model's captures, not three models' where they shared their methods' code.
    torch._dynamo.reset()
    try:
        with torch._dynamo.config.patch(recompile_limit=3):
            for games in (3, 4, 5):
                model = A2C(**{**TINY, "games_per_batch": games, "seed": 3, "capture": "compile"})
                assert model.collect()["dice"].shape[0] == games
    finally:
        torch._dynamo.reset()
