"""Agent artefacts: save/load, clear errors, export from a checkpoint, push/pull through a local hub."""

import hashlib
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import lightning as L
import pytest
import torch
from safetensors.torch import save_file

from yahtzee_lightning.algorithms import Reinforce
from yahtzee_lightning.cli import main
from yahtzee_lightning.evaluation import evaluate
from yahtzee_lightning.hub import AgentFormatError, YahtzeeAgent
from yahtzee_lightning.nn import PolicyValueNet

sys.path.insert(0, str(Path(__file__).parent))
from hub_server import HubServer  # noqa: E402

TINY = {"d_h": 16, "n_layers": 1, "head_hidden": 16}


def _agent(tmp_path: Path, games: int = 60) -> Path:
    torch.manual_seed(0)
    agent = YahtzeeAgent(PolicyValueNet(**TINY), {"name": "tiny", "algorithm": "PPO", "games": 0})
    agent.evaluation = evaluate(agent.player(), games=games, seed=0)
    return agent.save_pretrained(tmp_path / "tiny")


def _digest(directory: Path) -> str:
    agent = YahtzeeAgent.from_pretrained(directory)
    h = hashlib.sha256()
    for k, v in sorted(agent.net.state_dict().items()):
        h.update(k.encode() + v.numpy().tobytes())
    return h.hexdigest()


def test_save_and_load_round_trip(tmp_path, default_table):
    folder = _agent(tmp_path)
    assert {p.name for p in folder.iterdir()} == {"config.json", "model.safetensors", "README.md"}
    loaded = YahtzeeAgent.from_pretrained(folder)
    card = (folder / "README.md").read_text()
    assert "model-index" in card and "reinforcement-learning" in card and "mean score" in card
    assert "regret per keep" in card  # our evaluation table
    original = YahtzeeAgent.load(folder)
    for (k, a), (_, b) in zip(original.net.state_dict().items(), loaded.net.state_dict().items(), strict=True):
        assert torch.equal(a, b), k


def test_bad_artefacts_say_what_is_wrong(tmp_path, default_table):
    folder = _agent(tmp_path)
    config = json.loads((folder / "config.json").read_text())

    def broken(name: str) -> Path:
        d = tmp_path / name
        d.mkdir()
        for f in folder.iterdir():
            (d / f.name).write_bytes(f.read_bytes())
        return d

    d = broken("no_config")
    (d / "config.json").unlink()
    with pytest.raises(AgentFormatError, match="missing config.json"):
        YahtzeeAgent.from_pretrained(d)
    d = broken("old_format")
    (d / "config.json").write_text(json.dumps({**config, "format_version": 0}))
    with pytest.raises(AgentFormatError, match="format version 0"):
        YahtzeeAgent.from_pretrained(d)
    d = broken("other_net")
    (d / "config.json").write_text(json.dumps({**config, "network": {**config["network"], "d_h": 32}}))
    with pytest.raises(AgentFormatError, match="weights do not match the config"):
        YahtzeeAgent.from_pretrained(d)
    d = broken("bad_key")
    (d / "config.json").write_text(json.dumps({**config, "network": {**config["network"], "width": 32}}))
    with pytest.raises(AgentFormatError, match="network config"):
        YahtzeeAgent.from_pretrained(d)
    d = broken("corrupt")
    (d / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(AgentFormatError, match="corrupt"):
        YahtzeeAgent.from_pretrained(d)
    d = broken("not_json")
    (d / "config.json").write_text("{not json")
    with pytest.raises(AgentFormatError, match="not valid JSON"):
        YahtzeeAgent.from_pretrained(d)
    d = broken("missing_tensor")
    save_file({"trunk.0.weight": torch.zeros(16, 67)}, str(d / "model.safetensors"))
    with pytest.raises(AgentFormatError, match="missing"):
        YahtzeeAgent.from_pretrained(d)


class _Payload:
    def __reduce__(self):
        return (Path.touch, (Path(os.environ["PAYLOAD_MARK"]),))


def test_export_never_unpickles(tmp_path, monkeypatch):
    mark = tmp_path / "executed"
    monkeypatch.setenv("PAYLOAD_MARK", str(mark))
    ckpt = tmp_path / "evil.ckpt"
    ckpt.write_bytes(pickle.dumps({"state_dict": _Payload()}))
    with pytest.raises(pickle.UnpicklingError):
        main(["export", str(ckpt), str(tmp_path / "out"), "--games", "0"])
    assert not mark.exists()


def test_export_a_training_checkpoint_and_evaluate_it(tmp_path, capsys, default_table):
    model = Reinforce(total_games=40, games_per_batch=20, evaluations=1, eval_games=10, final_eval_games=0, **TINY)
    trainer = L.Trainer(default_root_dir=tmp_path, logger=False, enable_progress_bar=False, num_sanity_val_steps=0)
    trainer.fit(model)
    ckpt = tmp_path / "run.ckpt"
    trainer.save_checkpoint(ckpt)
    assert main(["export", str(ckpt), str(tmp_path / "agent"), "--games", "50", "--wall-clock", "1 s"]) == 0
    config = json.loads((tmp_path / "agent" / "config.json").read_text())
    assert config["training"]["algorithm"] == "Reinforce" and config["training"]["games"] == 40
    assert config["training"]["wall_clock"] == "1 s" and config["evaluation"]["summary"]["games"] == 50
    agent = YahtzeeAgent.from_pretrained(tmp_path / "agent")
    for k, v in agent.net.state_dict().items():
        assert torch.equal(v, model.net.state_dict()[k])
    capsys.readouterr()
    assert main(["evaluate", "--agent", str(tmp_path / "agent"), "--games", "50", "--no-optimal"]) == 0
    assert "mean score" in capsys.readouterr().out


def _run(code: str, env: dict) -> str:
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_push_then_pull_in_fresh_processes_and_offline(tmp_path, default_table):
    folder = _agent(tmp_path)
    with HubServer() as hub:
        env = dict(
            os.environ,
            HF_ENDPOINT=hub.url,
            HF_HOME=str(tmp_path / "hf_push"),
            HF_HUB_DISABLE_XET="1",
            HF_HUB_DISABLE_TELEMETRY="1",
            HF_TOKEN="hf_test_token",
        )
        push = subprocess.run(
            [sys.executable, "-m", "yahtzee_lightning.cli", "push", str(folder), "--repo-id", "alice/tiny"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert push.returncode == 0, push.stderr[-2000:]
        assert any("lfs" in r for r in hub.state.requests)  # the weights went through LFS
        pull = (
            "import hashlib, sys; from yahtzee_lightning.hub import YahtzeeAgent\n"
            "a = YahtzeeAgent.from_pretrained('alice/tiny')\n"
            "h = hashlib.sha256()\n"
            "for k, v in sorted(a.net.state_dict().items()): h.update(k.encode() + v.numpy().tobytes())\n"
            "from huggingface_hub import hf_hub_download\n"
            "card = open(hf_hub_download('alice/tiny', 'README.md')).read()\n"
            "print(h.hexdigest()); print(hashlib.sha256(card.encode()).hexdigest())\n"
        )
        env["HF_HOME"] = str(tmp_path / "hf_pull")  # an empty cache: a real download
        online = _run(pull, env).split()
    expected_card = hashlib.sha256((folder / "README.md").read_text().encode()).hexdigest()
    assert online == [_digest(folder), expected_card]
    # The server is gone: from the cache alone.
    offline = _run(pull, dict(env, HF_HUB_OFFLINE="1")).split()
    assert offline == online
