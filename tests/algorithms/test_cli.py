"""LightningCLI: configs, overrides, bad keys, resuming, a user's algorithm, 2-process DDP."""

import contextlib
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from yahtzee_lightning.cli import main
from yahtzee_lightning.shipped import expand_base

ROOT = Path(__file__).resolve().parents[2]
# The expert-iteration loop's configs are no fit recipes (tests/algorithms/test_expert_iteration_loop.py runs them).
CONFIGS = sorted(p.name for p in (ROOT / "conf").glob("*.yaml") if not p.name.startswith("expert_iteration_loop"))
# Tiny values for whichever of these keys a config has: every config trains 6 updates in seconds.
TINY_KEYS = {
    "d_h": 16,
    "n_layers": 1,
    "head_hidden": 16,
    "hidden": "[16]",
    "updates_per_batch": 2,
    "batch_size": 16,
    "games_per_batch": 8,
    "games_per_minibatch": 4,
    "total_games": 48,
    "evaluations": 3,
    "eval_games": 20,
    "final_eval_games": 0,
}
TINY = [
    "--model.init_args.d_h=16",
    "--model.init_args.n_layers=1",
    "--model.init_args.head_hidden=16",
    "--model.init_args.games_per_batch=8",
    "--model.init_args.total_games=48",
    "--model.init_args.evaluations=3",
    "--model.init_args.eval_games=20",
    "--model.init_args.final_eval_games=0",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
]


def _fit(tmp_path, config, *extra):
    """A tiny fit of ``conf/CONFIG`` with its checkpoints and its last logger under ``tmp_path``; a
    recipe's first logger keeps its relative ``runs/NAME``: the caller works in ``tmp_path`` (chdir)."""
    logs = [
        f"--trainer.logger.init_args.save_dir={tmp_path}",
        f"--trainer.callbacks.init_args.dirpath={tmp_path / 'checkpoints'}",
    ]
    return main(["fit", "--config", str(ROOT / "conf" / config), *TINY, *logs, *extra])


NETWORK_KEYS = {"d_h", "n_layers", "head_hidden", "hidden"}


def _tiny_overrides(config: str) -> list[str]:
    path = ROOT / "conf" / config
    init_args = expand_base(yaml.safe_load(path.read_text()), path)["model"].get("init_args", {})  # its base's too
    start = init_args.get("init_from")  # a run that starts from a shipped network keeps that network's shape
    tiny = {k: v for k, v in TINY_KEYS.items() if k in init_args and not (start and k in NETWORK_KEYS)}
    out = [f"--model.init_args.{k}={v}" for k, v in tiny.items()]
    return out + ([f"--model.init_args.init_from={ROOT / start}"] if start else [])


def test_every_config_is_found():
    assert {"ppo.yaml", "a2c.yaml", "distill.yaml", "quickstart.yaml", "dqn_two_player.yaml"} <= set(CONFIGS)


# One recipe per algorithm (and the README's) in the README's tests; the other recipes, each a few seconds
# of LightningCLI and a tiny fit, after it with the slow ones (a new recipe among them).
QUICK_CONFIGS = {
    "quickstart.yaml",
    "a2c.yaml",
    "ppo.yaml",
    "reinforce.yaml",
    "dqn_two_player.yaml",
    "expert_iteration.yaml",
}
EVERY_CONFIG = [
    c if c in QUICK_CONFIGS else pytest.param(c, marks=pytest.mark.slow("one more recipe's tiny fit: about 6 s each"))
    for c in CONFIGS
]


def test_each_algorithm_has_a_recipe_among_the_quick_ones():
    classes = {
        yaml.safe_load((ROOT / "conf" / c).read_text()).get("model", {}).get("class_path", "").rsplit(".", 1)[-1]
        for c in QUICK_CONFIGS
    }
    assert {"Distill", "A2C", "PPO", "Reinforce", "DQN", "ExpertIteration"} <= classes, classes


@pytest.mark.parametrize("config", EVERY_CONFIG)
def test_every_config_trains_and_checkpoints(tmp_path, config, monkeypatch):
    """Every YAML under conf/, a new one included, trains for a tiny budget and checkpoints."""
    monkeypatch.chdir(tmp_path)
    logs = [
        f"--trainer.logger.init_args.save_dir={tmp_path}",
        f"--trainer.callbacks.init_args.dirpath={tmp_path / 'checkpoints'}",
    ]
    base = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
    assert main(["fit", "--config", str(ROOT / "conf" / config), *_tiny_overrides(config), *base, *logs]) == 0
    ckpt = torch.load(tmp_path / "checkpoints" / "version_0" / "last.ckpt", map_location="cpu", weights_only=True)
    assert int(ckpt["state_dict"]["updates_done"]) == 6  # 48 games in batches of 8
    assert ckpt["epoch"] == 2


def test_unknown_and_ill_typed_keys_name_themselves(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        _fit(tmp_path, "ppo.yaml", "--model.init_args.learning_rate=0.1")
    assert "learning_rate" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _fit(tmp_path, "ppo.yaml", "--model.init_args.d_h=wide")
    assert "d_h" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args,line",
    [
        (
            ["--model.init_args.totl_games=5"],
            "unknown key 'totl_games' for yahtzee_lightning.algorithms.PPO; did you mean total_games",
        ),
        (
            ["--model.init_args.ensemble=abc"],
            "ensemble: 'abc' is not a valid value (it must be one of int, list[dict[str, Any]]",
        ),
        (["--model.init_args.d_h=wide"], "d_h: 'wide' is not a valid value (it must be int)"),
        (  # a prefix of a trainer key: named, not taken for the key (argparse's abbreviations are off)
            ["--trainer.max_epoch", "3"],
            "unknown key 'trainer.max_epoch' for --trainer; did you mean trainer.max_epochs",
        ),
        (["--trainr.max_epochs=3"], "unknown key 'trainr.max_epochs' for fit; did you mean trainer.max_epochs"),
        (["--config=missing.yaml"], "--config missing.yaml: no such file, nor a shipped recipe; recipes: a2c,"),
    ],
)
def test_a_bad_argument_ends_in_one_line_naming_it(tmp_path, capsys, monkeypatch, args, line):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        main(["fit", "--config", str(ROOT / "conf" / "ppo.yaml"), *args])
    err = capsys.readouterr().err
    assert line in err and err.count("\n") == 1, err
    assert err.endswith("(usage: yahtzee-lightning fit --help)\n"), err  # where to read it, not the usage itself


def test_a_key_typo_inside_a_yaml_config_names_the_nearest_keys(tmp_path, capsys):
    config = tmp_path / "typo.yaml"
    config.write_text("model:\n  class_path: yahtzee_lightning.algorithms.A2C\n  init_args:\n    games_per_btach: 8\n")
    with pytest.raises(SystemExit):
        main(["fit", "--config", str(config)])
    err = capsys.readouterr().err
    assert "unknown key 'games_per_btach'" in err and "did you mean games_per_batch" in err and err.count("\n") == 1, (
        err
    )
    config.write_text("trainer:\n  max_epoch: 3\nmodel:\n  class_path: yahtzee_lightning.algorithms.A2C\n")
    with pytest.raises(SystemExit):
        main(["fit", "--config", str(config)])
    err = capsys.readouterr().err
    assert "unknown key 'trainer.max_epoch' for --trainer; did you mean trainer.max_epochs" in err, err
    assert err.count("\n") == 1, err


def test_trainer_overrides_budget_epochs_and_a_terminal_only_bar(monkeypatch):
    import io

    import lightning as L

    from yahtzee_lightning.algorithms import Reinforce
    from yahtzee_lightning.loop.lightning_cli import ProgressBarOnStderr, trainer_overrides
    from yahtzee_lightning.loop.progress_lines import FitProgressLines

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    model = Reinforce(d_h=8, n_layers=1, head_hidden=8, total_games=40)
    monkeypatch.setattr("sys.stderr", Terminal())
    ours = trainer_overrides(model, {"max_epochs": None, "callbacks": []})
    assert ours["max_epochs"] == -1  # setup() then takes the epoch count from the budget
    assert [type(c) for c in ours["callbacks"]] == [ProgressBarOnStderr]
    assert trainer_overrides(model, {"max_epochs": 2, "enable_progress_bar": False}) == {}  # asked for: kept
    assert "max_epochs" not in trainer_overrides(L.LightningModule(), {"max_epochs": None})  # not ours: no budget
    monkeypatch.setattr("sys.stderr", io.StringIO())  # not a terminal: progress lines, not a bar
    piped = trainer_overrides(model, {"max_epochs": 2})
    assert piped["enable_progress_bar"] is False and [type(c) for c in piped["callbacks"]] == [FitProgressLines]


def test_fit_prints_progress_lines_when_not_on_a_terminal(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("YAHTZEE_LIGHTNING_PROGRESS_SECONDS", "0")  # a line every update
    final = "--model.init_args.final_eval_games=20"
    assert _fit(tmp_path, "reinforce.yaml", "--trainer.enable_progress_bar=true", final) == 0
    err = capsys.readouterr().err.splitlines()
    assert any(line.startswith("evaluating reinforce: 20/20 games, ") for line in err)  # the final evaluation
    lines = [line for line in err if line.startswith("fit: ")]
    counts = [int(re.match(r"fit: (\d+)/48 games", line)[1]) for line in lines]
    assert counts == [8, 16, 24, 32, 40, 48], lines  # every update's games; the last line when it ends
    assert re.search(r"games/s, \d+s left$", lines[0]) and "eval score" in lines[-1] and " games)" in lines[-1], lines


def _warned(recwarn, *fragments: str) -> list[str]:
    return [str(w.message) for w in recwarn if any(f in str(w.message) for f in fragments)]


def test_one_log_folder_per_run_no_preventable_warnings_and_the_next_steps(tmp_path, monkeypatch, capsys, recwarn):
    monkeypatch.chdir(tmp_path)  # the YAML's runs/reinforce, relative
    config = str(ROOT / "conf" / "reinforce.yaml")
    notices = []
    handler = logging.Handler()
    handler.emit = lambda record: notices.append(record.getMessage())
    logging.getLogger("lightning.pytorch").addHandler(handler)
    try:
        assert main(["fit", "--config", config, *TINY]) == 0
    finally:
        logging.getLogger("lightning.pytorch").removeHandler(handler)
    assert sum("`Trainer.fit` stopped" in n for n in notices) == 0, notices  # (epochs are intervals here: not said)
    # Lightning's inventory of accelerators it does not use and its cloud advertisement: not said either.
    assert not [n for n in notices if "GPU available:" in n or "litlogger" in n], notices
    assert _warned(recwarn, "args parameter", "max_epochs") == []
    out = capsys.readouterr().out
    ckpt = Path("runs", "reinforce", "checkpoints", "version_0", "last.ckpt")
    assert f"checkpoint: {ckpt}" in out and f"yahtzee-lightning export {ckpt} my-agent" in out
    assert main(["fit", "--config", config, *TINY]) == 0  # a second run: the next folder, for both loggers
    logs = tmp_path / "runs" / "reinforce" / "lightning_logs"
    assert sorted(p.name for p in logs.iterdir()) == ["version_0", "version_1"]
    for version in logs.iterdir():
        names = [p.name for p in version.iterdir()]
        assert "metrics.csv" in names and any(n.startswith("events.out.tfevents") for n in names), names


def test_fit_ends_with_the_agent_and_the_optimum_on_the_same_games(tmp_path, monkeypatch, capsys, default_table):
    """The two numbers that matter are the last lines: the evaluation table and the next steps scroll above."""
    monkeypatch.chdir(tmp_path)
    assert _fit(tmp_path, "reinforce.yaml", "--model.init_args.final_eval_games=20") == 0
    *_, agent, optimum = capsys.readouterr().out.strip().splitlines()
    assert re.fullmatch(r"agent:   mean score \d+\.\d\d ± \d+\.\d\d over 20 games", agent), agent
    assert re.fullmatch(r"optimum: mean score \d+\.\d\d ± \d+\.\d\d on the same games", optimum), optimum


def test_the_result_lines_of_a_match_and_of_an_ensemble():
    from yahtzee_lightning.commands.fit import result_lines

    one = {
        "summary": {"games": 100, "score": {"mean": 249.5, "se": 5.9}},
        "optimal": {"score": {"mean": 254.8, "se": 6.0}},
    }
    assert result_lines([one, None]) == (
        "member 0: agent:   mean score 249.50 ± 5.90 over 100 games; "
        "optimum: mean score 254.80 ± 6.00 on the same games"
    )
    match = {
        "games": 1000,
        "opponent": "optimal",
        "win": {"rate": 0.4, "se": 0.0155},
        "player_score": {"mean": 250.0},
        "best_opponent_score": {"mean": 254.5},
    }
    assert result_lines(match).splitlines() == [
        "win rate 40.00% ± 1.55 against optimal in 1,000 matches",
        "mean score 250.00 (the agent), 254.50 (its best opponent), the same matches",
    ]
    assert result_lines(None) == ""


def test_two_runs_started_at_once_take_two_versions(tmp_path):
    """Both count the free versions before either logger has written: without a claim, both would
    log and checkpoint into version_0, each overwriting the other's last.ckpt and metrics."""
    from jsonargparse import Namespace

    from yahtzee_lightning.loop.lightning_cli import share_run_version

    def trainer() -> Namespace:
        args = Namespace(save_dir=str(tmp_path), name="lightning_logs", version=None)
        return Namespace(logger=[Namespace(class_path="lightning.pytorch.loggers.CSVLogger", init_args=args)])

    first, second = trainer(), trainer()
    assert share_run_version(first, [tmp_path / "checkpoints"]) == 0
    assert share_run_version(second, [tmp_path / "checkpoints"]) == 1
    assert [t.logger[0].init_args.version for t in (first, second)] == [0, 1]


def test_resume_from_last_checkpoint_keeps_schedules_and_counts(tmp_path, monkeypatch, recwarn):
    monkeypatch.chdir(tmp_path)
    # A run stopped after its first interval (as if killed), then resumed to the end.
    assert _fit(tmp_path / "a", "a2c.yaml", "--trainer.max_epochs=1") == 0
    part = torch.load(tmp_path / "a" / "checkpoints" / "version_0" / "last.ckpt", map_location="cpu", weights_only=True)
    assert int(part["state_dict"]["updates_done"]) == 2
    assert _fit(tmp_path / "a", "a2c.yaml", "--ckpt_path=last") == 0
    assert _warned(recwarn, "exists and is not empty") == []  # its own checkpoints: expected when resuming
    resumed = torch.load(
        tmp_path / "a" / "checkpoints" / "version_0" / "last.ckpt", map_location="cpu", weights_only=True
    )
    # The same run without interruption.
    assert _fit(tmp_path / "b", "a2c.yaml") == 0
    [last] = (tmp_path / "b" / "checkpoints").glob("version_*/last.ckpt")  # its version: its logs' (runs/a2c: 2)
    whole = torch.load(last, map_location="cpu", weights_only=True)
    assert int(resumed["state_dict"]["updates_done"]) == int(whole["state_dict"]["updates_done"]) == 6
    assert resumed["global_step"] == whole["global_step"]
    assert resumed["lr_schedulers"][0]["last_epoch"] == whole["lr_schedulers"][0]["last_epoch"]
    assert resumed["optimizer_states"][0]["state"][0]["step"] == whole["optimizer_states"][0]["state"][0]["step"]


def test_a_users_algorithm_by_import_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    # Metrics every 2 updates: the tiny run's 6 updates never reach the config's log_every of 10.
    assert _fit(tmp_path, "reinforce.yaml", "--model=user_algo.LoudReinforce", "--model.init_args.log_every=2") == 0
    metrics = next(tmp_path.rglob("metrics.csv")).read_text()
    assert "train/loud_updates" in metrics


@pytest.mark.slow("two DDP processes (gloo), each importing torch and Lightning: about 17 s")
@pytest.mark.parametrize("ensemble", [[], ["--model.init_args.ensemble=2"]], ids=["single", "ensemble"])
def test_two_process_ddp_on_cpu(tmp_path, ensemble):
    paths = os.pathsep.join([str(Path(__file__).parent), str(ROOT)])  # ROOT: the tree under test, not the installed one
    env = dict(os.environ, RANK_DIGEST_DIR=str(tmp_path), PYTHONPATH=paths)
    cmd = [
        sys.executable,
        "-m",
        "yahtzee_lightning.cli",
        "fit",
        "--config",
        str(ROOT / "conf" / "reinforce.yaml"),
        *TINY,
        f"--trainer.logger.init_args.save_dir={tmp_path}",
        f"--trainer.callbacks.init_args.dirpath={tmp_path / 'checkpoints'}",
        "--trainer.callbacks+=rank_digest.RankDigest",
        "--trainer.strategy=ddp",
        "--trainer.devices=2",
        "--trainer.accelerator=cpu",
        "--model.init_args.total_games=96",
        *ensemble,  # each rank trains every member on its own games; each member's gradients averaged
    ]
    subprocess.run(cmd, cwd=tmp_path, env=env, check=True, timeout=300, capture_output=True)
    for logs in (tmp_path / "lightning_logs", tmp_path / "runs" / "reinforce" / "lightning_logs"):  # both loggers'
        assert [p.name for p in logs.iterdir()] == ["version_0"]  # one run, one folder (not one a rank)
    r0 = json.loads((tmp_path / "rank0.json").read_text())
    r1 = json.loads((tmp_path / "rank1.json").read_text())
    assert r0["weights"] == r1["weights"]  # gradients were averaged: one model
    assert r0["rollout"] != r1["rollout"]  # each rank collected its own games
    assert r0["updates"] == r1["updates"] == 6  # 96 games / (8 per batch x 2 ranks)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun_two_nodes(
    tmp_path: Path, args: list[str], env: dict[str, str], tag: str, per_node: tuple[list[str], ...] = ([], [])
) -> list[subprocess.Popen]:
    """Two "nodes" of one process each on this machine, as docs/devices.md launches them (gloo, CPU);
    ``per_node``: arguments one node has and the other lacks."""
    port, nodes = _free_port(), []
    for node, extra in enumerate(per_node):
        log = open(tmp_path / f"{tag}-node{node}.log", "w")  # noqa: SIM115 (closed with the process)
        launcher = ["-m", "torch.distributed.run", "--nnodes=2", "--nproc_per_node=1", f"--node_rank={node}"]
        launcher += ["--master_addr=127.0.0.1", f"--master_port={port}", "-m", "yahtzee_lightning.cli"]
        cmd = [sys.executable, *launcher, *args, *extra]
        nodes.append(subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=log, stderr=log, start_new_session=True))
    return nodes


@pytest.mark.slow("two torchrun nodes, killed and resumed: about 30 s")
def test_two_nodes_through_torchrun_train_the_global_budget_and_resume_after_both_are_killed(tmp_path, monkeypatch):
    import signal
    import time

    from yahtzee_lightning.algorithms import Reinforce
    from yahtzee_lightning.evaluation import evaluate

    paths = os.pathsep.join([str(Path(__file__).parent), str(ROOT)])
    env = dict(os.environ, PYTHONPATH=paths, HANG_MARKER=str(tmp_path / "hung"))
    budget = ["--model.init_args.total_games=96"]  # global: 6 updates of 16 games, on one process or two
    args = [
        "fit",
        "--config",
        str(ROOT / "conf" / "reinforce.yaml"),
        *TINY,
        *budget,
        f"--trainer.logger.init_args.save_dir={tmp_path}",
        f"--trainer.callbacks.init_args.dirpath={tmp_path / 'checkpoints'}",
        "--trainer.callbacks.init_args.save_every_minutes=0",  # last.ckpt after every update
        "--model.init_args.games_per_batch=8",  # per rank
        "--trainer.strategy=ddp",
        "--trainer.num_nodes=2",
        "--trainer.devices=1",
        "--trainer.accelerator=cpu",
    ]
    first = _torchrun_two_nodes(tmp_path, [*args, "--trainer.callbacks+=crash.HangAfterUpdate"], env, "first")
    deadline = time.monotonic() + 240  # a limit, not a timing
    try:
        while not all((tmp_path / f"hung.{r}").exists() for r in (0, 1)) and time.monotonic() < deadline:
            assert all(p.poll() is None for p in first), (tmp_path / "first-node0.log").read_text()[-3000:]
            time.sleep(0.1)
    finally:  # both nodes killed at once, mid-run: each launcher and its worker
        workers = [int(m.read_text()) for m in tmp_path.glob("hung.*") if m.read_text()]
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for p in first:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    [last] = (tmp_path / "checkpoints").glob("version_*/last.ckpt")
    killed_at = int(torch.load(last, map_location="cpu", weights_only=True)["state_dict"]["updates_done"])
    assert 1 <= killed_at < 6

    second = _torchrun_two_nodes(tmp_path, [*args, "--ckpt_path=last"], env, "resumed")
    for node, p in enumerate(second):
        assert p.wait(timeout=300) == 0, (tmp_path / f"resumed-node{node}.log").read_text()[-3000:]
    two_nodes = torch.load(last, map_location="cpu", weights_only=True)
    assert int(two_nodes["state_dict"]["updates_done"]) == 6
    assert two_nodes["yahtzee_lightning"]["games"] == 96 and two_nodes["yahtzee_lightning"]["devices"] == 2

    monkeypatch.chdir(tmp_path)  # the same global budget on one process: 6 updates of 16 games
    assert _fit(tmp_path / "one", "reinforce.yaml", *budget, "--model.init_args.games_per_batch=16") == 0
    [single] = (tmp_path / "one" / "checkpoints").glob("version_*/last.ckpt")
    one = torch.load(single, map_location="cpu", weights_only=True)
    assert int(one["state_dict"]["updates_done"]) == 6 and one["yahtzee_lightning"]["games"] == 96
    scores = []
    for path in (last, single):  # the same 300 games' dice for both: the difference is the policies'
        model = Reinforce.load_from_checkpoint(path, map_location="cpu")
        scores.append(evaluate(model.player(), 300, 1, model.rules, with_optimal=False, regret=False)["summary"])
    a, b = (s["score"] for s in scores)
    assert abs(a["mean"] - b["mean"]) <= 4 * (a["se"] ** 2 + b["se"] ** 2) ** 0.5  # within seed noise


@pytest.mark.slow("two torchrun nodes on fixed ports: about 15 s")
def test_two_nodes_that_disagree_on_a_setting_both_stop_with_one_line_naming_it(tmp_path):
    paths = os.pathsep.join([str(Path(__file__).parent), str(ROOT)])
    args = ["fit", "--config", str(ROOT / "conf" / "reinforce.yaml"), *TINY]
    args += [f"--trainer.logger.init_args.save_dir={tmp_path}", f"--trainer.callbacks.init_args.dirpath={tmp_path}/ck"]
    args += ["--trainer.strategy=ddp", "--trainer.num_nodes=2", "--trainer.devices=1", "--trainer.accelerator=cpu"]
    env = dict(os.environ, PYTHONPATH=paths)
    nodes = _torchrun_two_nodes(tmp_path, args, env, "disagree", per_node=([], ["--model.init_args.lr=0.002"]))
    for node, p in enumerate(nodes):  # every rank stops (none waits for the other at a collective)
        assert p.wait(timeout=300) != 0
        log = (tmp_path / f"disagree-node{node}.log").read_text()
        ours = [line for line in log.splitlines() if line.startswith("yahtzee-lightning fit: error:")]
        assert ours == [
            "yahtzee-lightning fit: error: the ranks disagree on lr: rank 0 has 0.001, rank 1 has 0.002; "
            "launch every node with the same config and overrides (usage: yahtzee-lightning fit --help)"
        ], log[-3000:]


def test_the_parser_is_built_once_a_process_and_a_run_leaves_nothing_of_its_settings_in_it(monkeypatch, capsys):
    """The CLI's parser (a fifth of a small fit's CPU to build) is reused by the next run in the same
    process, a study's checks included; what one run set is not the next one's default."""
    from lightning.pytorch.cli import LightningCLI

    from yahtzee_lightning.loop import lightning_cli
    from yahtzee_lightning.study.fit_config import parse_fit_config

    built = []
    build = LightningCLI.setup_parser

    def counted(self, *args, **kwargs):
        built.append(type(self).__name__)
        return build(self, *args, **kwargs)

    monkeypatch.setattr(LightningCLI, "setup_parser", counted)
    monkeypatch.setattr(lightning_cli, "_PARSERS", {})
    recipe = str(ROOT / "conf" / "quickstart.yaml")
    printed = []
    for extra in (["--model.init_args.lr=0.123"], [], ["--model.init_args.d_h=48"]):
        with pytest.raises(SystemExit) as stop:
            main(["fit", "--config", recipe, *extra, "--print_config"])
        assert stop.value.code in (0, None)
        printed.append(yaml.safe_load(capsys.readouterr().out)["model"]["init_args"])
    assert [p["lr"] for p in printed] == [0.123, 0.003, 0.003]
    assert [p["d_h"] for p in printed[:2]] == [printed[0]["d_h"]] * 2 and printed[2]["d_h"] == 48
    config = yaml.safe_load(Path(recipe).read_text())
    first = parse_fit_config({**config, "seed_everything": 5})
    second = parse_fit_config(config)
    assert first.seed_everything == 5 and second.seed_everything == config.get("seed_everything")
    assert len(built) == 2  # fit's parser (with its subcommands) once, a study's checking parser once
