"""Agent artefacts: save/load, clear errors, export from a checkpoint, push/pull through a local hub."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import lightning as L
import pytest
import torch
from hub_server import validate_card_metadata
from huggingface_hub import ModelCard
from safetensors.torch import load_file, save_file

from yahtzee_lightning.algorithms import PPO, Reinforce
from yahtzee_lightning.cli import main
from yahtzee_lightning.env import YahtzeeEnv
from yahtzee_lightning.env.features import sees_opponents
from yahtzee_lightning.evaluation import evaluate
from yahtzee_lightning.evaluation.match import play_matches
from yahtzee_lightning.game import Rules
from yahtzee_lightning.hub import AgentFormatError, AgentNotFoundError, YahtzeeAgent
from yahtzee_lightning.machine import describe_machine
from yahtzee_lightning.nn import PolicyValueNet
from yahtzee_lightning.players.base import Player

TINY = {"d_h": 16, "n_layers": 1, "head_hidden": 16}
# Five boxes in play: the optimal table behind the card's regret and optimal column solves in a blink.
RULES = Rules(boxes=(0, 5, 8, 11, 12))
ARTEFACT = {"config.json", "model.safetensors", "README.md"}


def _agent(folder: Path, games: int = 60, seed: int = 0) -> Path:
    """A tiny untrained agent saved to ``folder``, evaluated for its card unless ``games`` is 0."""
    torch.manual_seed(seed)
    agent = YahtzeeAgent(
        PolicyValueNet(**TINY, rules=RULES.to_dict()), {"name": folder.name, "algorithm": "PPO", "games": 0}
    )
    if games:
        agent.evaluation = evaluate(agent.player(), games=games, seed=0, rules=RULES)
    return agent.save_pretrained(folder)


def _assert_same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


def test_save_and_load_round_trip(tmp_path):
    folder = _agent(tmp_path / "tiny")
    assert {p.name for p in folder.iterdir()} == ARTEFACT | {"manifest.json"}  # the manifest: what --force replaces
    loaded = YahtzeeAgent.from_pretrained(folder)
    _assert_same_weights(loaded.net.state_dict(), load_file(folder / "model.safetensors"))
    assert isinstance(loaded.player(), Player) and loaded.evaluation["summary"]["games"] == 60

    card = ModelCard.load(folder / "README.md")
    results = card.data.eval_results
    assert {r.task_type for r in results} == {"reinforcement-learning"}
    assert results[0].metric_type == "mean_reward" and " +/- " in results[0].metric_value
    assert {r.metric_type for r in results} >= {"median_score", "upper_bonus_rate", "yahtzee_rate", "regret_per_game"}
    assert "regret per keep" in card.text and "* Algorithm: PPO" in card.text  # our table, the training facts
    # A loaded agent (summary only, no score tensors) regenerates the same card.
    loaded.save_pretrained(tmp_path / "again")
    assert (tmp_path / "again" / "README.md").read_text() == (folder / "README.md").read_text()
    # ``card``: the folder's README.md once loaded; before saving, the card save_pretrained would write.
    assert loaded.card == (folder / "README.md").read_text()
    assert YahtzeeAgent(loaded.net, loaded.training, loaded.evaluation).card == loaded.card


def test_an_agent_in_the_published_layout_loads_as_it_was_saved(tmp_path):
    """``layout`` is in the network's config only where it is not the default: an agent in the
    published code's layout rebuilds in it (another layout's weights would not load)."""
    torch.manual_seed(0)
    net = PolicyValueNet(**TINY, layout="published", rules=RULES.to_dict()).eval()
    folder = YahtzeeAgent(net, {"name": "code", "algorithm": "PPO", "games": 0}).save_pretrained(tmp_path / "code")
    assert json.loads((folder / "config.json").read_text())["network"]["layout"] == "published"
    loaded = YahtzeeAgent.from_pretrained(folder)
    _assert_same_weights(loaded.net.state_dict(), net.state_dict())
    obs = YahtzeeEnv(4, seed=0, rules=RULES).reset()
    for got, want in zip(loaded.net(obs), net(obs), strict=True):
        assert torch.equal(got, want)
    config = json.loads((folder / "config.json").read_text())
    config["network"]["layout"] = "standard"
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(AgentFormatError, match="weights do not match the config"):  # its layers differ
        YahtzeeAgent.from_pretrained(folder)


def test_bad_artefacts_say_what_is_wrong(tmp_path):
    folder = _agent(tmp_path / "tiny", games=0)
    config = json.loads((folder / "config.json").read_text())
    weights = load_file(folder / "model.safetensors")

    def broken(name: str, file: str, content: bytes | str | dict | None) -> Path:
        d = tmp_path / name
        d.mkdir()
        for f in folder.iterdir():
            (d / f.name).write_bytes(f.read_bytes())
        if content is None:
            (d / file).unlink()
        elif isinstance(content, dict):
            save_file(content, str(d / file))
        else:
            (d / file).write_bytes(content.encode() if isinstance(content, str) else content)
        return d

    cases = [
        ("missing config.json", "config.json", None),
        ("missing model.safetensors", "model.safetensors", None),
        ("not JSON", "config.json", "{not json"),
        ("not an agent config", "config.json", "[1, 2]"),
        ("format version 0", "config.json", json.dumps({**config, "format_version": 0})),
        ("format version None", "config.json", json.dumps({k: v for k, v in config.items() if k != "format_version"})),
        ("network config", "config.json", json.dumps({**config, "network": {**config["network"], "width": 32}})),
        (
            r"weights do not match the config \(wrong shape",
            "config.json",
            json.dumps({**config, "network": {**config["network"], "d_h": 32}}),
        ),
        # Untrusted sizes are refused before anything is allocated (200000 would be ~160 GB).
        *(
            (
                f"{key} must be an integer in",
                "config.json",
                json.dumps({**config, "network": {**config["network"], key: v}}),
            )
            for key, v in (("d_h", 200_000), ("d_h", -5), ("n_layers", 10**6), ("head_hidden", 10**7), ("d_emb", 0))
        ),
        ("corrupt", "model.safetensors", b"\x00" * 64),
        ("corrupt", "model.safetensors", (folder / "model.safetensors").read_bytes()[:-100]),
        (r"missing \['", "model.safetensors", {k: v for i, (k, v) in enumerate(weights.items()) if i}),
        (r"unexpected \['extra'\]", "model.safetensors", {**weights, "extra": torch.zeros(1)}),
        (r"wrong shape or dtype.*float64", "model.safetensors", {k: v.double() for k, v in weights.items()}),
    ]
    for i, (message, file, content) in enumerate(cases):
        with pytest.raises(AgentFormatError, match=message):
            YahtzeeAgent.from_pretrained(broken(f"case{i}", file, content))
    # Neither a folder nor a hub id; a hub id that is not cached while offline. No network is touched.
    with pytest.raises(AgentNotFoundError, match="not a hub repo id"):
        YahtzeeAgent.from_pretrained(tmp_path / "no" / "such" / "agent")
    with pytest.raises(AgentNotFoundError, match="not in the local cache"):
        YahtzeeAgent.from_pretrained("alice/absent", local_files_only=True, cache_dir=tmp_path / "cache")


SHIPPED = sorted(p.parent for p in (Path(__file__).parents[2] / "checkpoints").glob("*/config.json"))


@pytest.mark.parametrize("folder", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_agents_load_play_and_have_valid_cards(folder):
    """A change to the network that breaks the agents in checkpoints/ fails here, not for users."""
    agent = YahtzeeAgent.from_pretrained(folder)
    assert validate_card_metadata((folder / "README.md").read_text()) == []
    assert list(folder.glob("*.yaml")), "keep the training YAML next to a shipped agent"
    player = agent.player()
    if sees_opponents(agent.net.feature_names):  # a two-player agent plays matches
        result = play_matches(player, "greedy", games=8, seed=0, rules=player.rules)
        assert result["player_score"]["mean"] > 0
        assert "matches" in agent.evaluation and "## Matches against the optimal" in agent.card
    else:
        result = evaluate(player, games=8, seed=0, rules=player.rules, with_optimal=False, regret=False)
        assert result["summary"]["score"]["mean"] > 0


class _Payload:
    def __reduce__(self):
        return (Path.touch, (Path(os.environ["PAYLOAD_MARK"]),))


def test_export_never_unpickles(tmp_path, monkeypatch, capsys):
    mark = tmp_path / "executed"
    monkeypatch.setenv("PAYLOAD_MARK", str(mark))
    ckpt = tmp_path / "evil.ckpt"
    ckpt.write_bytes(pickle.dumps({"state_dict": _Payload()}))
    with pytest.raises(SystemExit):
        main(["export", str(ckpt), str(tmp_path / "out"), "--games", "0"])
    assert "only full unpickling could load; refusing" in capsys.readouterr().err
    assert not mark.exists() and not (tmp_path / "out").exists()


def _fit_and_save(model, ckpt: Path) -> Path:
    """Train ``model`` briefly and write its Lightning checkpoint to ``ckpt``."""
    trainer = L.Trainer(default_root_dir=ckpt.parent, logger=False, enable_progress_bar=False, num_sanity_val_steps=0)
    trainer.fit(model)
    trainer.save_checkpoint(ckpt)
    return ckpt


def test_export_a_training_checkpoint_and_evaluate_it(tmp_path, capsys):
    model = Reinforce(
        total_games=40,
        games_per_batch=20,
        evaluations=1,
        eval_games=10,
        final_eval_games=0,
        boxes=list(RULES.boxes),
        **TINY,
    )
    ckpt = _fit_and_save(model, tmp_path / "run.ckpt")
    yaml = tmp_path / "run.yaml"
    yaml.write_text("model: {}\n")
    out = tmp_path / "agent"
    argv = ["export", str(ckpt), str(out), "--games", "50", "--wall-clock", "1 s", "--config", str(yaml)]
    assert main(argv) == 0
    assert {p.name for p in out.iterdir()} == ARTEFACT | {"run.yaml", "manifest.json"}
    config = json.loads((out / "config.json").read_text())
    assert config["training"]["algorithm"] == "Reinforce" and config["training"]["games"] == 40
    assert config["evaluation"]["summary"]["games"] == 50
    card = (out / "README.md").read_text()
    assert "* Training games: 40" in card and "* Wall clock: 1 s" in card and "run.yaml" in card
    assert f"* Hardware: {describe_machine()}" in card  # by default, this machine
    agent = YahtzeeAgent.from_pretrained(out)
    _assert_same_weights(agent.net.state_dict(), model.net.state_dict())
    capsys.readouterr()
    boxes = [str(b) for b in RULES.boxes]
    assert main(["evaluate", "--agent", str(out), "--games", "50", "--no-optimal", "--boxes", *boxes]) == 0
    assert "mean score" in capsys.readouterr().out
    # The checkpoint itself is not an agent: the error says which command makes one.
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate", "--agent", str(ckpt), "--games", "5"])
    assert exit_.value.code == 2
    assert f"yahtzee-lightning export {ckpt} my-agent" in capsys.readouterr().err


def test_a_two_player_agent_is_exported_and_evaluated_in_matches(tmp_path, capsys):
    """An agent that sees an opponent cannot play solitaire: its card holds matches against the
    optimal player, and a solitaire evaluation is refused with the way to evaluate it."""
    model = PPO(
        n_players=2,
        opponent="greedy",
        features="two_player",
        total_games=16,
        games_per_batch=8,
        evaluations=1,
        eval_games=4,
        final_eval_games=0,
        boxes=list(RULES.boxes),
        **TINY,
    )
    ckpt = _fit_and_save(model, tmp_path / "duo.ckpt")
    out = tmp_path / "duo"
    assert main(["export", str(ckpt), str(out), "--games", "30"]) == 0
    assert "in 30 matches against optimal" in capsys.readouterr().out
    agent = YahtzeeAgent.from_pretrained(out)
    matches = agent.evaluation["matches"]
    assert matches["games"] == 30 and matches["opponent"] == "optimal"
    assert abs(matches["win"]["rate"] + matches["draw"]["rate"] + matches["loss"]["rate"] - 1) < 1e-9
    assert "## Matches against the optimal solitaire player" in agent.card
    assert validate_card_metadata(agent.card) == []
    boxes = [str(b) for b in RULES.boxes]
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate", "--agent", str(out), "--games", "5", "--boxes", *boxes])
    assert exit_.value.code == 2 and "--players 2" in capsys.readouterr().err
    assert main(["evaluate", "--agent", str(out), "--games", "10", "--players", "2", "--opponent", "greedy"]) == 0
    assert "win rate" in capsys.readouterr().out


# Runs in a fresh process (huggingface_hub reads HF_ENDPOINT/HF_HOME/HF_HUB_OFFLINE at import):
# loads the agent at main and at the first commit, saves their weights and pulls both folders
# through the console script's ``pull`` verb.
_PULL = """
import sys
from pathlib import Path
from safetensors.torch import save_file
from yahtzee_lightning.cli import main
from yahtzee_lightning.hub import AgentNotFoundError, YahtzeeAgent

out, first = Path(sys.argv[1]), sys.argv[2]
for label, revision in (("main", None), ("first", first)):
    agent = YahtzeeAgent.from_pretrained("alice/tiny", revision=revision)
    save_file(agent.net.state_dict(), str(out / f"{label}.safetensors"))
    assert main(["pull", "alice/tiny", str(out / label)] + (["--revision", revision] if revision else [])) == 0
for repo, revision in (("alice/absent", None), ("alice/tiny", "f" * 40)):
    try:
        YahtzeeAgent.from_pretrained(repo, revision=revision)
    except AgentNotFoundError as e:
        print("not found:", e)
"""


def _python(args: list[str], env: dict, cwd: Path) -> str:
    out = subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.slow("pushes and pulls in three fresh processes (torch and Lightning imported in each): about 35 s")
def test_push_then_pull_in_fresh_processes_and_offline(tmp_path, hub, hub_env):
    v1, v2 = _agent(tmp_path / "tiny"), _agent(tmp_path / "tiny-v2", games=0, seed=1)
    (v1 / "notes.txt").write_text("not part of the agent")  # stays behind
    push = "from yahtzee_lightning.cli import main; import sys; [main(a.split()) for a in sys.argv[1:]]"
    _python(["-c", push, f"push {v1} --repo-id alice/tiny", f"push {v2} --repo-id alice/tiny"], hub_env, tmp_path)
    assert any(r.endswith("/info/lfs/objects/batch") for r in hub.state.requests)  # weights went through LFS
    first = list(hub.state.repos["alice/tiny"].commits)[1]
    assert hub.state.files("alice/tiny", first) == {f: (v1 / f).read_bytes() for f in ARTEFACT}
    assert hub.state.files("alice/tiny") == {f: (v2 / f).read_bytes() for f in ARTEFACT}

    def pull(env: dict, name: str) -> str:
        out = tmp_path / name
        out.mkdir()
        stdout = _python(["-c", _PULL, str(out), first], env, tmp_path)
        for label, source in (("main", v2), ("first", v1)):
            _assert_same_weights(load_file(out / f"{label}.safetensors"), load_file(source / "model.safetensors"))
            assert {p.name: p.read_bytes() for p in (out / label).iterdir() if p.name != "manifest.json"} == {
                f: (source / f).read_bytes() for f in ARTEFACT
            }
            pulled = YahtzeeAgent.load(out / label)  # the pulled folder is an agent on its own
            _assert_same_weights(pulled.net.state_dict(), load_file(source / "model.safetensors"))
        return stdout

    online = pull(dict(hub_env, HF_HOME=str(tmp_path / "hf_pull")), "online")  # an empty cache: real downloads
    assert "not found: alice/absent" in online and f"no revision '{'f' * 40}'" in online
    served = len(hub.state.requests)
    offline = pull(dict(hub_env, HF_HOME=str(tmp_path / "hf_pull"), HF_HUB_OFFLINE="1"), "offline")
    assert len(hub.state.requests) == served  # from the cache alone
    assert "not found: alice/absent" in offline


# Verbs in one process (the hub's address is read at import), each argv joined by "|": each says
# what it says, then "exit CODE" on stderr.
_VERBS = """
import sys
from yahtzee_lightning.cli import main

for argv in sys.argv[1:]:
    try:
        code = main(argv.split("|"))
    except SystemExit as e:  # a verb's parser ends a usage error so
        code = e.code
    print("exit", code, file=sys.stderr)
"""


def test_cli_verbs_end_bad_input_and_an_unreachable_hub_in_one_line(tmp_path, hub_env, capsys):
    folder = _agent(tmp_path / "tiny", games=0)
    unreachable = dict(hub_env, HF_ENDPOINT="http://127.0.0.1:9")  # nothing listens there
    push, pull = ["push", str(folder), "--repo-id", "alice/tiny"], ["pull", "alice/tiny", str(tmp_path / "out")]
    run = subprocess.run(
        [sys.executable, "-c", _VERBS, "|".join(push), "|".join(pull)],
        env=unreachable,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-2000:]
    said = run.stderr.split("exit 2\n")
    assert len(said) == 3 and not said[2], run.stderr[-2000:]  # each verb ended with 2
    for line in said[:2]:
        assert "could not be reached" in line or "the hub is unreachable" in line, line
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    for argv, message in (
        (["pull", "alice/tiny", str(a_file)], "exists and is not a folder"),
        (["export", str(tmp_path / "run.ckpt"), str(a_file), "--games", "0"], "exists and is not a folder"),
        (["export", str(tmp_path / "run.ckpt"), str(a_file / "agent"), "--games", "0"], "a parent of it is a file"),
        (["export", str(tmp_path / "run.ckpt"), str(tmp_path / "agent"), "--seed", "-1"], "--seed must be in"),
        (["evaluate", "--agent", "greedy", "--seed", str(2**62)], "--seed must be in"),
        (["evaluate", "--agent", "greedy", "--device", "cuda:99"], "--device cuda:99"),
    ):
        with pytest.raises(SystemExit) as e:
            main(argv)
        err = capsys.readouterr().err
        assert e.value.code == 2 and message in err, err


def test_pull_offline_of_an_uncached_hub_id_is_one_line_about_the_hub(tmp_path, monkeypatch, capsys):
    from huggingface_hub import constants

    from yahtzee_lightning.cli import main

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # no network touched
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(SystemExit) as stop:
        main(["pull", "alice/absent", str(tmp_path / "out")])
    assert stop.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()  # no usage block
    assert line.startswith("yahtzee-lightning pull: error: alice/absent: the hub is unreachable or offline")
    assert "folder" not in line  # a hub id is not a folder the user asked for
