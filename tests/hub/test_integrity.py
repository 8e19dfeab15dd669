"""Damaged agent folders and checkpoints are refused in one line naming the file, never played or trained;
nothing the user made is overwritten by ``export`` or ``pull``."""

import json
import logging
import struct
import subprocess
import sys
from pathlib import Path

import lightning as L
import pytest
import torch
from safetensors.torch import load_file, save_file

from yahtzee_lightning.algorithms import Reinforce
from yahtzee_lightning.cli import main
from yahtzee_lightning.game import Rules
from yahtzee_lightning.hub import AgentFormatError, YahtzeeAgent
from yahtzee_lightning.hub.agent import WEIGHTS_DIGEST
from yahtzee_lightning.nn import PolicyValueNet

TINY = {"d_h": 16, "n_layers": 1, "head_hidden": 16}
RULES = Rules(boxes=(0, 5, 8, 11, 12))
SHIPPED = sorted(p.parent for p in (Path(__file__).parents[2] / "checkpoints").glob("*/config.json"))


def _agent(folder: Path) -> Path:
    torch.manual_seed(0)
    net = PolicyValueNet(**TINY, rules=RULES.to_dict())
    return YahtzeeAgent(net, {"name": folder.name, "algorithm": "PPO", "games": 0}).save_pretrained(folder)


def _flip_tensor_byte(path: Path, at: int = 10) -> None:
    """Change one byte inside the tensor data of a safetensors file, its header intact (it still loads)."""
    data = bytearray(path.read_bytes())
    start = 8 + struct.unpack("<Q", data[:8])[0]
    data[start + at] ^= 0x40
    path.write_bytes(bytes(data))
    load_file(path)  # still a readable file: only a digest tells


def test_a_flipped_weight_byte_is_refused_naming_the_file(tmp_path, capsys):
    folder = _agent(tmp_path / "tiny")
    assert WEIGHTS_DIGEST in json.loads((folder / "config.json").read_text())
    assert WEIGHTS_DIGEST in (folder / "README.md").read_text()  # the card records it too
    _flip_tensor_byte(folder / "model.safetensors")
    with pytest.raises(AgentFormatError, match="model.safetensors: the weights do not match their sha256"):
        YahtzeeAgent.load(folder)
    boxes = [str(b) for b in RULES.boxes]
    with pytest.raises(SystemExit) as e:
        main(["evaluate", "--agent", str(folder), "--games", "4", "--no-optimal", "--boxes", *boxes])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "do not match their sha256" in err and "Traceback" not in err


def test_a_card_or_config_that_disagrees_with_the_weights_is_refused(tmp_path):
    folder = _agent(tmp_path / "tiny")
    config = json.loads((folder / "config.json").read_text())
    card = (folder / "README.md").read_text()
    (folder / "README.md").write_text(card.replace(config[WEIGHTS_DIGEST], "0" * 64))
    with pytest.raises(AgentFormatError, match="README.md: the card's weights sha256"):
        YahtzeeAgent.load(folder)
    (folder / "README.md").write_text(card)
    (folder / "config.json").write_text(json.dumps({**config, WEIGHTS_DIGEST: "0" * 64}))
    with pytest.raises(AgentFormatError, match="config.json: the weights sha256"):
        YahtzeeAgent.load(folder)


def test_non_finite_weights_are_refused_and_an_old_folder_loads_with_a_warning(tmp_path, caplog):
    folder = _agent(tmp_path / "tiny")
    config = json.loads((folder / "config.json").read_text())
    del config[WEIGHTS_DIGEST]  # a folder written before digests
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "README.md").unlink()
    state = load_file(folder / "model.safetensors")
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with caplog.at_level(logging.WARNING):
        YahtzeeAgent.load(folder)
    assert "carry no sha256" in caplog.text
    name = sorted(state)[-1]
    state[name].view(-1)[0] = float("nan")
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(AgentFormatError, match=rf"safetensors: weights that are not finite.*{name}"):
        YahtzeeAgent.load(folder)
    net = PolicyValueNet(**TINY, rules=RULES.to_dict())
    with torch.no_grad():
        next(net.parameters()).view(-1)[0] = float("inf")
    with pytest.raises(AgentFormatError, match="not finite"):
        YahtzeeAgent(net).save_pretrained(tmp_path / "inf")


@pytest.mark.parametrize("folder", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_agents_carry_a_digest_that_verifies(folder, caplog):
    config = json.loads((folder / "config.json").read_text())
    with caplog.at_level(logging.WARNING):
        YahtzeeAgent.load(folder)
    assert "no sha256" not in caplog.text
    assert config[WEIGHTS_DIGEST] in (folder / "README.md").read_text()


def _checkpoint(tmp_path: Path, **settings) -> Path:
    model = Reinforce(
        total_games=40, games_per_batch=20, evaluations=1, eval_games=4, final_eval_games=0, **TINY, **settings
    )
    trainer = L.Trainer(default_root_dir=tmp_path, logger=False, enable_progress_bar=False, num_sanity_val_steps=0)
    trainer.fit(model)
    trainer.save_checkpoint(tmp_path / "run.ckpt")
    return tmp_path / "run.ckpt"


def _damage_checkpoint(ckpt: Path, value: float | None = None) -> None:
    """Rewrite one weight of a checkpoint (a zip that still loads): a flipped bit, or ``value``."""
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    w = state["state_dict"]["net.trunk.0.weight"] if "net.trunk.0.weight" in state["state_dict"] else None
    if w is None:
        w = next(v for k, v in state["state_dict"].items() if k.startswith("net.") and v.is_floating_point())
    w.view(-1)[0] = value if value is not None else -w.view(-1)[0] * 1e30
    torch.save(state, ckpt)


def test_a_damaged_checkpoint_is_refused_by_resume_and_export(tmp_path, capsys):
    from yahtzee_lightning.loop.resume import ResumeError, read_checkpoint

    ckpt = _checkpoint(tmp_path)
    assert read_checkpoint(ckpt) is not None
    _damage_checkpoint(ckpt)
    assert read_checkpoint(ckpt) is None
    with pytest.raises(SystemExit) as e:
        main(["export", str(ckpt), str(tmp_path / "agent"), "--games", "0"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "run.ckpt: the weights do not match their sha256" in err
    assert not (tmp_path / "agent").exists()
    ckpt = _checkpoint(tmp_path / "nan")
    _damage_checkpoint(ckpt, float("nan"))
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    del state["yahtzee_lightning"]["sha256"]  # as written before digests: only the NaN tells
    torch.save(state, ckpt)
    with pytest.raises(SystemExit):
        main(["export", str(ckpt), str(tmp_path / "agent"), "--games", "0"])
    assert "not finite" in capsys.readouterr().err
    from yahtzee_lightning.loop.resume import resolve_ckpt_path

    with pytest.raises(ResumeError, match="run.ckpt: .*not finite"):
        resolve_ckpt_path(str(ckpt), None)


def test_export_and_pull_never_overwrite_what_the_user_made(tmp_path, capsys):
    ckpt = _checkpoint(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "README.md").write_text("my notes")
    (mine / "config.json").write_text("{}")
    for force in ([], ["--force"]):
        with pytest.raises(SystemExit):
            main(["export", str(ckpt), str(mine), "--games", "0", *force])
        assert "is not an agent folder" in capsys.readouterr().err
        assert (mine / "README.md").read_text() == "my notes" and (mine / "config.json").read_text() == "{}"
    # An agent folder written before manifests: --force replaces its three artefact files; the YAML
    # beside them cannot be proven ours, so it stays, and a line says so.
    old = _agent(tmp_path / "old")
    (old / "manifest.json").unlink()
    (old / "distill.yaml").write_text("model: {}\n")
    with pytest.raises(SystemExit):
        main(["export", str(ckpt), str(old), "--games", "0"])
    assert "--force" in capsys.readouterr().err and (old / "distill.yaml").exists()
    assert main(["export", str(ckpt), str(old), "--games", "0", "--force"]) == 0
    assert f"kept {old / 'distill.yaml'}" in capsys.readouterr().err
    assert {p.name for p in old.iterdir()} == {
        "config.json",
        "model.safetensors",
        "README.md",
        "manifest.json",
        "distill.yaml",
    }
    YahtzeeAgent.load(old)


def test_export_and_pull_force_replace_only_their_own_files(tmp_path, capsys):
    """--force deletes the files the manifest proves ours (an exported YAML no longer named included);
    the user's files stay, each named; one of ours edited since is refused before anything is written."""
    from yahtzee_lightning.manifest import Manifest

    ckpt = _checkpoint(tmp_path)
    conf = Path(__file__).parents[2] / "conf" / "reinforce.yaml"
    agent = tmp_path / "agent"
    assert main(["export", str(ckpt), str(agent), "--games", "0", "--config", str(conf)]) == 0
    assert set(Manifest.read(agent).files) == {"config.json", "model.safetensors", "README.md", "reinforce.yaml"}
    (agent / "my_experiment.yaml").write_text("mine: 1\n")
    (agent / "notes").mkdir()
    (agent / "notes" / "keep.txt").write_text("mine")
    capsys.readouterr()
    assert main(["export", str(ckpt), str(agent), "--games", "0", "--force"]) == 0
    err = capsys.readouterr().err
    assert f"kept {agent / 'my_experiment.yaml'}" in err and f"kept {agent / 'notes' / 'keep.txt'}" in err
    assert not (agent / "reinforce.yaml").exists()  # ours, and no longer part of the agent
    assert (agent / "my_experiment.yaml").read_text() == "mine: 1\n" and (agent / "notes" / "keep.txt").exists()
    YahtzeeAgent.load(agent)
    # pull (from a local folder: no hub needed) over it: the same rule
    source = _agent(tmp_path / "source")
    assert main(["pull", str(source), str(agent), "--force"]) == 0
    assert "kept" in capsys.readouterr().err and (agent / "notes" / "keep.txt").read_text() == "mine"
    assert (agent / "model.safetensors").read_bytes() == (source / "model.safetensors").read_bytes()
    # one of ours edited by the user since: refused, nothing written
    (agent / "README.md").write_text("my edited card")
    for verb in (["export", str(ckpt)], ["pull", str(source)]):
        with pytest.raises(SystemExit):
            main(
                [*verb, str(agent), "--games", "0", "--force"]
                if verb[0] == "export"
                else [*verb, str(agent), "--force"]
            )
        err = capsys.readouterr().err.strip()
        assert "README.md would be overwritten but was not written by yahtzee-lightning" in err
        assert (agent / "README.md").read_text() == "my edited card"


def test_export_into_a_symbolic_link_is_refused_in_one_line(tmp_path, capsys):
    ckpt = _checkpoint(tmp_path)
    real = _agent(tmp_path / "real")
    link = tmp_path / "link"
    link.symlink_to(real)
    before = {p.name: p.read_bytes() for p in real.iterdir()}
    with pytest.raises(SystemExit) as e:
        main(["export", str(ckpt), str(link), "--games", "0", "--force"])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and "is a symbolic link" in err[-1] and "Traceback" not in "".join(err)
    assert {p.name: p.read_bytes() for p in real.iterdir()} == before and link.is_symlink()


def test_a_full_disk_while_writing_an_agent_is_one_line_and_replaces_nothing(tmp_path, capsys, monkeypatch):
    import errno

    from yahtzee_lightning.hub import agent as agent_module

    ckpt = _checkpoint(tmp_path)
    folder = tmp_path / "agent"
    assert main(["export", str(ckpt), str(folder), "--games", "0"]) == 0
    before = {p.name: p.read_bytes() for p in folder.iterdir()}

    def full(*args, **kwargs):
        raise OSError(errno.EFBIG, "File too large")

    monkeypatch.setattr(agent_module, "save_file", full)
    with pytest.raises(SystemExit) as e:
        main(["export", str(ckpt), str(folder), "--games", "0", "--force"])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and "could not be written (File too large); nothing replaced" in err[-1]
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".agent.")] == []


def test_pull_refuses_a_folder_with_the_users_files(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "README.md").write_text("my notes")
    run = subprocess.run(
        [sys.executable, "-m", "yahtzee_lightning.cli", "pull", "alice/tiny", str(mine), "--force"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"HF_HUB_OFFLINE": "1", "PATH": "", "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    assert run.returncode == 2 and "is not an agent folder" in run.stderr, run.stderr[-2000:]
    assert (mine / "README.md").read_text() == "my notes"


def _export_error(capsys, ckpt: Path, folder: Path, member: str) -> str:
    with pytest.raises(SystemExit) as e:
        main(["export", str(ckpt), str(folder), "--games", "0", "--member", member])
    assert e.value.code == 2 and not folder.exists()
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_a_damaged_or_edited_ensemble_checkpoint_is_refused_naming_the_file_and_member(tmp_path, capsys):
    ckpt = _checkpoint(tmp_path, ensemble=2)
    intact = torch.load(ckpt, map_location="cpu", weights_only=True)
    assert intact["yahtzee_lightning"]["members"][0]["last_eval_score"] is not None
    name = next(k for k, v in intact["state_dict"].items() if k.startswith("members.1.") and v.is_floating_point())

    def damaged(file: str, change) -> Path:
        state = torch.load(ckpt, map_location="cpu", weights_only=True)
        change(state)
        torch.save(state, tmp_path / file)
        return tmp_path / file

    # The members' scores (what --member best picks by) are covered too: an edited one is refused.
    edited = damaged("edit.ckpt", lambda s: s["yahtzee_lightning"]["members"][1].update(last_eval_score=999.0))
    err = _export_error(capsys, edited, tmp_path / "a", "best")
    assert "edit.ckpt: its training record" in err and "does not match its sha256" in err
    flipped = damaged("flip.ckpt", lambda s: s["state_dict"][name].view(-1).__setitem__(0, 1e30))
    err = _export_error(capsys, flipped, tmp_path / "a", "0")
    assert "flip.ckpt: member 1's weights do not match their sha256" in err
    # NaN in member 1 of a checkpoint written before digests: only the NaN tells, and the member is named.
    old = {"algorithm": "Reinforce", "members": intact["yahtzee_lightning"]["members"]}
    nan = damaged(
        "nan.ckpt",
        lambda s: (s["state_dict"][name].view(-1).__setitem__(0, float("nan")), s.update(yahtzee_lightning=old)),
    )
    err = _export_error(capsys, nan, tmp_path / "a", "0")
    assert "nan.ckpt: weights that are not finite (NaN or inf) in member 1" in err
    (tmp_path / "cut.ckpt").write_bytes(ckpt.read_bytes()[: ckpt.stat().st_size // 2])
    assert "cut.ckpt: does not load as a checkpoint" in _export_error(
        capsys, tmp_path / "cut.ckpt", tmp_path / "a", "0"
    )
    (tmp_path / "junk.ckpt").write_bytes(b"not a checkpoint" * 20)
    assert "junk.ckpt: damaged, not a checkpoint" in _export_error(capsys, tmp_path / "junk.ckpt", tmp_path / "a", "0")
    (tmp_path / "folder.ckpt").mkdir()
    assert "folder.ckpt is a folder, not a checkpoint file" in _export_error(
        capsys, tmp_path / "folder.ckpt", tmp_path / "a", "0"
    )
    assert main(["export", str(ckpt), str(tmp_path / "best"), "--games", "0", "--member", "best"]) == 0


def test_a_damaged_optimizer_state_or_loop_counter_is_refused_by_resume_and_export(tmp_path, capsys):
    """The checkpoint's sha256s cover everything a resume restores, not only the weights: an edited
    optimiser state, schedule or loop counter is named; a NaN in the optimiser's state is refused even
    in a checkpoint written before those sha256s."""
    from yahtzee_lightning.loop.resume import PARTS_DIGEST, ResumeError, resolve_ckpt_path

    ckpt = _checkpoint(tmp_path)
    intact = torch.load(ckpt, map_location="cpu", weights_only=True)
    assert set(intact["yahtzee_lightning"][PARTS_DIGEST]) >= {"optimizer_states", "loops", "callbacks", "epoch"}
    resolve_ckpt_path(str(ckpt), None)  # intact: resumes

    def nan_in_adam(state):
        param = next(iter(state["optimizer_states"][0]["state"].values()))
        param["exp_avg"].view(-1)[0] = float("nan")

    def more_steps(state):
        state["global_step"] += 5

    def lr(state):
        state["optimizer_states"][0]["param_groups"][0]["lr"] *= 10

    for change, message in (
        (nan_in_adam, r"optimizer state \(optimizer_states\) does not match its sha256"),
        (more_steps, r"global step \(global_step\) does not match its sha256"),
        (lr, r"optimizer state \(optimizer_states\) does not match its sha256"),
    ):
        state = torch.load(ckpt, map_location="cpu", weights_only=True)
        change(state)
        bad = tmp_path / "bad.ckpt"
        torch.save(state, bad)
        with pytest.raises(ResumeError, match=f"bad.ckpt: the checkpoint is damaged .*{message}"):
            resolve_ckpt_path(str(bad), None)
        with pytest.raises(SystemExit):
            main(["export", str(bad), str(tmp_path / "agent"), "--games", "0"])
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "bad.ckpt" in err[0] and "does not match its sha256" in err[0]
    # written before these sha256s: the NaN alone tells, named with its optimiser and parameter
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    nan_in_adam(state)
    for key in (PARTS_DIGEST, "record_sha256"):
        del state["yahtzee_lightning"][key]
    torch.save(state, tmp_path / "old.ckpt")
    with pytest.raises(ResumeError, match=r"old.ckpt: .*optimizer state is not finite \(NaN or inf\): optimizer 0"):
        resolve_ckpt_path(str(tmp_path / "old.ckpt"), None)
