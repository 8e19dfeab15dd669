"""benchmarks/bench_peers.py at a smoke budget: each kind of system (SB3 on our VecEnv, TorchRL's
PPO pipeline, our recipes through the Trainer) trains for a moment and leaves a playable snapshot
at each point; the snapshots are evaluated with one protocol and the JSON, table and figure written."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from yahtzee_lightning.env import YahtzeeEnv

PATH = Path(__file__).parents[2] / "benchmarks" / "bench_peers.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_peers", PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_peers"] = module  # for its dataclass
    spec.loader.exec_module(module)
    return module


def test_the_clock_snapshots_each_point_once_and_fills_the_points_not_reached(bench):
    taken = []
    clock = bench.Clock(budget_s=0.0, points=(0.5, 1.0))
    assert clock.tick(3, lambda: taken.append(1) or "policy")  # no budget: every point is due at once
    assert [s["point"] for s in clock.snapshots] == [0.5, 1.0] and clock.games == 3 and len(taken) == 2
    late = bench.Clock(budget_s=1e9, points=(0.5, 1.0))
    assert not late.tick(2, lambda: "policy") and late.snapshots == []
    late.finish(lambda: "final")  # a run that ended early: its final policy at both points
    assert [s["player"] for s in late.snapshots] == ["final", "final"] and late.snapshots[0]["games"] == 2


def test_torchrl_pipeline_trains_a_batch_of_whole_games_and_leaves_a_player(bench):
    clock = bench.Clock(budget_s=0.0, points=(1.0,))
    bench.train_torchrl("torchrl-ppo", clock, seed=0)
    assert clock.games == 26 and len(clock.snapshots) == 1  # one collector batch: 26 whole games
    obs = YahtzeeEnv(3, seed=0).reset()
    keep, box = clock.snapshots[0]["player"].act(obs)
    assert keep.shape == box.shape == (3,)


def test_sb3_and_our_recipe_train_and_are_reported(bench, tmp_path, default_table):
    curve = tmp_path / "metrics.csv"
    curve.write_text("eval/mean_score,eval/wall_clock_s,train/loss\n,,1.0\n120.5,30.0,\n180.0,90.0,\n")
    systems = ["sb3-ourvec64", "ours-a2c"]
    args = ["--minutes", "0.005", "--eval-games", "10", "--points", "0.5", "1", "--out", str(tmp_path / "out")]
    assert bench.main([*args, "--systems", *systems, "--curve", f"long run={curve}"]) == 0
    out = tmp_path / "out"
    result = json.loads((out / "peers.json").read_text())
    assert [r["system"] for r in result["rows"]] == systems
    for row in result["rows"]:  # at least one rollout (128 games) / one update (256 games)
        assert row["games"] >= 128 and row["games_per_s"] > 0 and [p["point"] for p in row["points"]] == [0.5, 1.0]
        assert all(0 < p["mean"] < 400 and p["regret_per_game"] > 0 for p in row["points"])
    assert result["greedy"] < result["optimal"] and result["threads"] == 1
    table = (out / "peers.md").read_text()
    assert all(f"| {name} |" in table for name in [*systems, "optimal (the same games)"])
    assert (out / "peers.png").stat().st_size > 1000
    assert bench.read_curve(f"long run={curve}") == ("long run", [30.0, 90.0], [120.5, 180.0])
    resumed = tmp_path / "version_1.csv"  # a resumed run's clock starts again at 0
    resumed.write_text("eval/mean_score,eval/wall_clock_s\n200.0,20.0\n")
    whole = ("long run", [30.0, 90.0, 110.0], [120.5, 180.0, 200.0])
    assert bench.read_curve(f"long run={curve},{resumed}") == whole
    assert bench.read_curves([f"long run={curve}", f"other={resumed}", f"long run={resumed}"])[0] == whole
    with pytest.raises(SystemExit, match="no eval/wall_clock_s"):
        bench.read_curve(f"x={out / 'peers.md'}")
    (out / "peers.png").unlink()  # redrawn from peers.json alone, training nothing
    assert bench.main(["--out", str(out), "--redraw", "--curve", f"r={curve},{resumed}"]) == 0
    assert (out / "peers.png").stat().st_size > 1000 and (out / "peers.md").read_text() == table
