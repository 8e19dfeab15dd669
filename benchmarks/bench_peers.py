"""The peers side by side: SB3's MaskablePPO, TorchRL's PPO pipeline and this project's recipes,
each trained for the same wall clock on the same rules, machine and threads, then evaluated with
the same protocol at fixed points of that clock.

Systems (``--systems``; all by default):

* ``sb3-defaults``: sb3-contrib's MaskablePPO with its defaults on the single Gymnasium env
  (``gymnasium.make("yahtzee_lightning/Yahtzee-v0")``, SB3's DummyVecEnv of one);
* ``sb3-dummyvec16``: the same env, 16 copies in SB3's DummyVecEnv, the tuned settings below;
* ``sb3-ourvec64`` / ``sb3-ourvec256``: MaskablePPO on :class:`YahtzeeSB3VecEnv` (64 / 256 games
  in one batch on our engine), tuned: gamma 1, a 128x128 net, lr 1e-3, 4 epochs of 4 minibatches;
* ``torchrl-ppo``: TorchRL's PPO as its tutorial writes it (a ``Collector`` of ~1000 frames,
  ``GAE`` recomputed every epoch, 10 epochs of 64-frame minibatches of ``ClipPPOLoss``, Adam 3e-4,
  gradient clip 1) on our TorchRL env, with our network as TorchRL actor and critic;
* ``ours-a2c`` / ``ours-ppo``: ``conf/a2c_long.yaml`` and ``conf/ppo_long.yaml`` (one member, no
  ensemble) through our own training code (the Lightning Trainer), their schedules fitted to the
  budget: a short calibration run first measures games/s, and ``total_games`` is that rate times
  the budget.

The clock of a system starts when its training starts (construction excluded) and pauses while a
snapshot of its policy is taken at each point (``--points``, fractions of ``--minutes``). After
every system has trained, each snapshot plays ``--eval-games`` seeded games (the same games for
all), scored decision by decision against the exact optimum; the optimal and greedy players play
them too, as reference lines. Writes ``peers.json``, ``peers.md`` and ``peers.png`` to ``--out``.

    python benchmarks/bench_peers.py [--minutes 3] [--eval-games 10000] [--threads 1] [--out reports/peers]
        [--systems ours-a2c sb3-ourvec256 ...]
        [--curve NAME=runs/X/lightning_logs/version_0/metrics.csv[,runs/X/lightning_logs/version_1/metrics.csv]]
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from yahtzee_lightning.png import save_png

sys.path.insert(0, str(Path(__file__).parent))
from _common import quiet_trainer, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENV_ID = "yahtzee_lightning/Yahtzee-v0"
RECIPES = {"ours-a2c": ("A2C", ROOT / "conf" / "a2c_long.yaml"), "ours-ppo": ("PPO", ROOT / "conf" / "ppo_long.yaml")}
# The settings picked for MaskablePPO beyond its defaults: whole games per rollout, no discount
# (the score is the return), a network of our recipes' width.
SB3_TUNED = {
    "gamma": 1.0,
    "learning_rate": 1e-3,
    "n_epochs": 4,
    "ent_coef": 0.01,
    "policy_kwargs": {"net_arch": [128, 128]},
}


@dataclass
class Clock:
    """A system's training clock: stops at ``budget_s``, snapshots the policy at each point."""

    budget_s: float
    points: tuple[float, ...]
    start: float | None = None
    games: int = 0
    snapshots: list[dict[str, Any]] = field(default_factory=list)

    def begin(self) -> None:
        self.start = time.perf_counter()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start if self.start is not None else 0.0

    def tick(self, games: int, snapshot: Callable[[], Any]) -> bool:
        """Count ``games`` finished; take the snapshots that are due; True once the budget is spent."""
        if self.start is None:
            self.begin()
        self.games += games
        due = self.points[len(self.snapshots) :]
        for point in due:
            if self.elapsed < point * self.budget_s:
                break
            self._take(snapshot)
        return self.elapsed >= self.budget_s

    def finish(self, snapshot: Callable[[], Any]) -> None:
        """The points not reached (a run that ended early) get the final policy, at the time it ended."""
        while len(self.snapshots) < len(self.points):
            self._take(snapshot)

    def _take(self, snapshot: Callable[[], Any]) -> None:
        paused = time.perf_counter()
        wall = self.elapsed
        self.snapshots.append({"point": self.points[len(self.snapshots)], "wall_s": wall, "games": self.games})
        self.snapshots[-1]["player"] = snapshot()
        self.start += time.perf_counter() - paused  # the snapshot is not training time


# ------------------------------------------------------------------ SB3 (sb3-contrib MaskablePPO)
def sb3_env(kind: str, seed: int) -> Any:
    from stable_baselines3.common.env_util import make_vec_env

    from yahtzee_lightning.gym.sb3 import YahtzeeSB3VecEnv

    if kind.startswith("ourvec"):
        return YahtzeeSB3VecEnv(int(kind.removeprefix("ourvec")), seed=seed)
    # make_vec_env asks for render_mode="rgb_array" unless told otherwise; the env renders text only.
    n = int(kind.removeprefix("dummyvec"))
    return make_vec_env(ENV_ID, n_envs=n, seed=seed, env_kwargs={"render_mode": None})


SB3_SYSTEMS: dict[str, tuple[str, dict[str, Any]]] = {
    "sb3-defaults": ("dummyvec1", {}),
    "sb3-dummyvec16": ("dummyvec16", {**SB3_TUNED, "n_steps": 128, "batch_size": 512}),
    "sb3-ourvec64": ("ourvec64", {**SB3_TUNED, "n_steps": 78, "batch_size": 1248}),
    "sb3-ourvec256": ("ourvec256", {**SB3_TUNED, "n_steps": 39, "batch_size": 2496}),
}


def train_sb3(name: str, clock: Clock, seed: int) -> None:
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    from yahtzee_lightning.gym.policy import sb3_policy_player

    kind, settings = SB3_SYSTEMS[name]
    model = MaskablePPO("MultiInputPolicy", sb3_env(kind, seed), seed=seed, device="cpu", **settings)

    def snapshot() -> Any:  # the policy rebuilt and loaded as SB3 saves and loads it
        policy = type(model.policy)(**model.policy._get_constructor_parameters())
        policy.load_state_dict(model.policy.state_dict())
        return sb3_policy_player(policy, name=name)

    class Tick(BaseCallback):
        """The clock is read as each rollout starts: after the previous rollout and its update."""

        games, stop = 0, False

        def _on_training_start(self) -> None:
            clock.begin()

        def _on_step(self) -> bool:
            self.games += int(np.sum(self.locals["dones"]))
            return not self.stop  # a rollout that starts after the budget is dropped

        def _on_rollout_start(self) -> None:
            self.stop = clock.tick(self.games, snapshot)
            self.games = 0

    model.learn(total_timesteps=10**12, callback=Tick())
    clock.finish(snapshot)


# ------------------------------------------------------------------ TorchRL's PPO tutorial pipeline
def train_torchrl(name: str, clock: Clock, seed: int) -> None:
    from torchrl.collectors import Collector
    from torchrl.data import LazyTensorStorage, ReplayBuffer
    from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement
    from torchrl.objectives import ClipPPOLoss
    from torchrl.objectives.value import GAE

    from yahtzee_lightning.env import YahtzeeEnv
    from yahtzee_lightning.env import keys as K
    from yahtzee_lightning.nn import LOG_PROB, VALUE, PolicyValueNet, make_actor, make_critic
    from yahtzee_lightning.players.agent import AgentPlayer

    torch.manual_seed(seed)
    net = PolicyValueNet(**recipe_network())
    actor, critic = make_actor(net), make_critic(net)
    games_per_batch = 26  # 26 whole games: 1014 frames, the tutorial's ~1000
    frames = games_per_batch * 39
    collector = Collector(
        YahtzeeEnv(games_per_batch, seed=seed),
        actor,
        frames_per_batch=frames,
        total_frames=-1,
        auto_register_policy_transforms=False,
    )
    advantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic, average_gae=True)
    loss_module = ClipPPOLoss(
        actor, critic, clip_epsilon=0.2, entropy_coeff=1e-4, critic_coeff=1.0, loss_critic_type="smooth_l1"
    )
    loss_module.set_keys(action=K.ACTION, sample_log_prob=LOG_PROB, value=VALUE)
    optim = torch.optim.Adam(loss_module.parameters(), 3e-4)
    buffer = ReplayBuffer(storage=LazyTensorStorage(frames), sampler=SamplerWithoutReplacement(), batch_size=64)

    def snapshot() -> Any:
        return AgentPlayer(copy.deepcopy(net), name=name)

    clock.begin()
    for batch in collector:
        batch = batch.exclude(VALUE, ("next", VALUE))  # the estimator writes the values itself
        for _ in range(10):
            with torch.no_grad():
                advantage(batch)
            buffer.extend(batch.reshape(-1))
            for _ in range(frames // 64):
                out = loss_module(buffer.sample())
                loss = out["loss_objective"] + out["loss_critic"] + out["loss_entropy"]
                loss.backward()
                torch.nn.utils.clip_grad_norm_(loss_module.parameters(), 1.0)
                optim.step()
                optim.zero_grad()
        if clock.tick(int(batch["next", K.DONE].sum()), snapshot):
            break
    collector.shutdown()
    clock.finish(snapshot)


# ------------------------------------------------------------------ this project's recipes
def recipe_settings(name: str) -> tuple[type, dict[str, Any]]:
    import yaml

    import yahtzee_lightning.algorithms as algorithms

    cls_name, path = RECIPES[name]
    settings = yaml.safe_load(path.read_text())["model"]["init_args"]
    settings.update(ensemble=None, final_eval_games=0, evaluations=1, init_from=None)
    return getattr(algorithms, cls_name), settings


def recipe_network() -> dict[str, Any]:
    """The network of our recipes (the same for the TorchRL pipeline, so that only the pipeline differs)."""
    _, s = recipe_settings("ours-a2c")
    keys = ("dice_encoder", "features", "d_h", "n_layers", "dropout", "layer_norm", "activation", "head_hidden")
    return {k: s[k] for k in (*keys, "roll_head", "d_emb")}


def fit_for(cls: type, settings: dict[str, Any], clock: Clock, name: str) -> None:
    import lightning as L

    from yahtzee_lightning.players.agent import AgentPlayer

    model = cls(**settings)

    def snapshot() -> Any:
        return AgentPlayer(copy.deepcopy(model.net), name=name)

    class Tick(L.Callback):
        def on_train_start(self, trainer: L.Trainer, module: Any) -> None:
            clock.begin()

        def on_train_batch_end(self, trainer: L.Trainer, module: Any, *args: Any) -> None:
            if clock.tick(module.hparams.games_per_batch, snapshot):
                trainer.should_stop = True

    trainer = quiet_trainer(callbacks=[Tick()])
    trainer.fit(model)
    clock.finish(snapshot)


def train_recipe(name: str, clock: Clock, seed: int) -> None:
    import lightning as L

    cls, settings = recipe_settings(name)
    settings["seed"] = seed
    L.seed_everything(seed, verbose=False)
    # Calibration (not counted): the recipe's games/s here, so that its schedules span the budget.
    probe = Clock(min(clock.budget_s, max(3.0, min(10.0, 0.05 * clock.budget_s))), ())
    fit_for(cls, {**settings, "total_games": 10**9}, probe, name)
    settings["total_games"] = max(settings["games_per_batch"], int(probe.games / probe.elapsed * clock.budget_s))
    L.seed_everything(seed, verbose=False)
    fit_for(cls, settings, clock, name)


SYSTEMS: dict[str, Callable[[str, Clock, int], None]] = {
    **dict.fromkeys(SB3_SYSTEMS, train_sb3),
    "torchrl-ppo": train_torchrl,
    **dict.fromkeys(RECIPES, train_recipe),
}


# ------------------------------------------------------------------ evaluation and the report
def evaluate_snapshots(runs: dict[str, Clock], games: int, seed: int) -> dict[str, Any]:
    """Every snapshot on the same seeded games, with the exact regret; optimal and greedy beside."""
    from yahtzee_lightning.evaluation import evaluate
    from yahtzee_lightning.players import GreedyPlayer

    reference = evaluate(GreedyPlayer(), games, seed)
    out: dict[str, Any] = {
        "optimal": reference["optimal"]["score"]["mean"],
        "optimal_exact": reference["optimal"]["exact_expected_score"],
        "greedy": reference["summary"]["score"]["mean"],
        "systems": {},
    }
    for name, clock in runs.items():
        points = []
        for snap in clock.snapshots:
            s = evaluate(snap["player"], games, seed, with_optimal=False)["summary"]
            points.append(
                {
                    **{k: snap[k] for k in ("point", "wall_s", "games")},
                    "mean": s["score"]["mean"],
                    "median": s["median"],
                    "regret_per_game": s["regret"]["per_game_mean"],
                }
            )
        last = clock.snapshots[-1] if clock.snapshots else {"wall_s": 0.0, "games": 0}
        out["systems"][name] = {
            "games": clock.games,
            "train_s": last["wall_s"],
            "games_per_s": last["games"] / last["wall_s"] if last["wall_s"] else 0.0,
            "points": points,
        }
    return out


def read_curve(spec: str) -> tuple[str, list[float], list[float]]:
    """``NAME=metrics.csv[,metrics.csv...]``: a run's evaluations (``eval/wall_clock_s``,
    ``eval/mean_score``). A resumed run writes a new ``version_N`` whose clock starts again at 0:
    its files, in order, make one curve, each file's clock continuing from the previous one's last
    evaluation (the minutes after that evaluation, up to one evaluation interval, are not counted)."""
    name, sep, paths = spec.partition("=")
    if not sep or not name or not paths:
        raise SystemExit(f"--curve wants NAME=PATH/metrics.csv[,PATH/metrics.csv...], got {spec!r}")
    wall: list[float] = []
    score: list[float] = []
    for path in paths.split(","):
        if not Path(path).is_file():
            raise SystemExit(f"--curve {name}: {path} is not a file")
        offset = wall[-1] if wall else 0.0
        with open(path, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r.get("eval/wall_clock_s") and r.get("eval/mean_score")]
        if not rows:
            raise SystemExit(f"--curve {name}: {path} has no eval/wall_clock_s and eval/mean_score rows")
        wall += [offset + float(r["eval/wall_clock_s"]) for r in rows]
        score += [float(r["eval/mean_score"]) for r in rows]
    return name, wall, score


def read_curves(specs: list[str]) -> list[tuple[str, list[float], list[float]]]:
    """Every ``--curve``; the same NAME given again continues that run (its files in order)."""
    merged: dict[str, list[str]] = {}
    for spec in specs:
        name, _, paths = spec.partition("=")
        merged.setdefault(name, []).append(paths)
    return [read_curve(f"{name}={','.join(paths)}") for name, paths in merged.items()]


def read_result(path: Path) -> dict[str, Any]:
    """A written ``peers.json`` back as the result that :func:`markdown` and :func:`figure` draw."""
    try:
        raw = json.loads(path.read_text())
        systems = {row.pop("system"): row for row in raw.pop("rows")}
    except (OSError, ValueError, KeyError) as err:
        raise SystemExit(f"--redraw: {path} is not a peers.json written by this benchmark ({err})") from None
    return {**raw, "systems": systems}


def markdown(result: dict[str, Any]) -> str:
    points = result["points"]
    head = " | ".join(f"score at {p:.0%} ({p * result['minutes']:.3g} min)" for p in points)
    lines = [
        f"| system | games/s | games | {head} | regret/game at 100% |",
        "|---|---:|---:|" + "---:|" * len(points) + "---:|",
    ]
    for name, r in result["systems"].items():
        scores = " | ".join(f"{p['mean']:.1f}" for p in r["points"])
        regret = r["points"][-1]["regret_per_game"] if r["points"] else float("nan")
        lines.append(f"| {name} | {r['games_per_s']:,.0f} | {r['games']:,} | {scores} | {regret:.1f} |")
    for name in ("optimal", "greedy"):
        scores = " | ".join(f"{result[name]:.1f}" for _ in points)
        lines.append(f"| {name} (the same games) | | | {scores} | |")
    lines.append(f"\nThe optimum's exact expected score: {result['optimal_exact']:.2f}.")
    return "\n".join(lines) + "\n"


def figure(result: dict[str, Any], curves: list[tuple[str, list[float], list[float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for name, r in result["systems"].items():
        ax.plot([p["wall_s"] / 60 for p in r["points"]], [p["mean"] for p in r["points"]], marker="o", label=name)
    for name, wall, score in curves:
        ax.plot([w / 60 for w in wall], score, linestyle="--", label=f"{name} (its run)")
    ax.axhline(result["optimal"], color="black", linestyle=":", label=f"optimal ({result['optimal']:.1f})")
    ax.axhline(result["greedy"], color="grey", linestyle=":", label=f"greedy ({result['greedy']:.1f})")
    ax.set_xscale("log")
    lo, hi = ax.get_xlim()
    ax.set_xticks([t for t in (0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 240) if lo <= t <= hi])
    ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("training wall clock (minutes, log scale)")
    ax.set_ylabel(f"mean score ({result['eval_games']:,} games)")
    ax.set_title(f"Same rules, machine and {result['threads']} thread(s) each")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    save_png(fig, path, dpi=120)
    plt.close(fig)


def run(systems: list[str], minutes: float, points: tuple[float, ...], seed: int) -> dict[str, Clock]:
    runs = {}
    for name in systems:
        clock = Clock(minutes * 60, points)
        SYSTEMS[name](name, clock, seed)
        runs[name] = clock
        print(f"{name}: {clock.games:,} games in {clock.snapshots[-1]['wall_s']:.0f} s", flush=True)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=3.0, help="training wall clock of each system (default: 3)")
    parser.add_argument("--points", type=float, nargs="+", default=[0.25, 0.5, 1.0], help="fractions of it")
    parser.add_argument("--eval-games", type=int, default=10_000, help="games of each evaluation (default: 10000)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads, the same for every system")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    curve_help = "a run's learning curve (its metrics.csv; a resumed run's files in order, or NAME again)"
    parser.add_argument("--curve", action="append", default=[], metavar="NAME=CSV[,CSV]", help=curve_help)
    parser.add_argument("--out", default="reports/peers", help="folder of peers.json, peers.md, peers.png")
    parser.add_argument("--redraw", action="store_true", help="train nothing: redraw OUT's table and figure")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.eval_games < 1 or args.threads < 1:
        parser.error("--minutes must be > 0, --eval-games and --threads >= 1")
    if sorted(args.points) != args.points or not all(0 < p <= 1 for p in args.points):
        parser.error("--points must be increasing fractions in (0, 1]")
    curves = read_curves(args.curve)
    out = Path(args.out)
    if args.redraw:  # the table and figure again from a finished run, e.g. with a longer --curve
        result = read_result(out / "peers.json")
    else:
        torch.set_num_threads(args.threads)
        runs = run(args.systems, args.minutes, tuple(args.points), args.seed)
        result = evaluate_snapshots(runs, args.eval_games, args.seed)
        result.update(minutes=args.minutes, points=args.points, eval_games=args.eval_games, threads=args.threads)
        out.mkdir(parents=True, exist_ok=True)
        write_json(
            str(out / "peers.json"),
            "peers",
            [{"system": k, **v} for k, v in result["systems"].items()],
            **{k: v for k, v in result.items() if k != "systems"},
        )
    (out / "peers.md").write_text(markdown(result))
    figure(result, curves, out / "peers.png")
    print(markdown(result))
    print(f"wrote {out / 'peers.json'}, {out / 'peers.md'}, {out / 'peers.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
