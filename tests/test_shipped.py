"""The shipped agents by name from an installed package, from any folder: ``from_pretrained(NAME)``,
the verbs, ``agents`` listing them; and nothing of another package's beside it in ``site-packages``
(TorchRL installs a ``benchmarks/`` there) taken for ours. The installed layout is the wheel's
(``yahtzee_lightning/_shipped/``, setup.py), built in a temporary folder; tests/test_wheel.py builds
the wheel itself and loads an agent by name in a fresh virtual environment (slow)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from huggingface_hub import constants as hub_constants

from yahtzee_lightning import YahtzeeAgent, shipped
from yahtzee_lightning.commands import bench

CHECKOUT = Path(__file__).resolve().parents[1]
NAME = "distilled-128x2"


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The package as a wheel installs it: its own copy of one agent under ``_shipped/``, in a
    ``site-packages`` with other packages' ``checkpoints/``, ``conf/`` and ``benchmarks/`` beside
    it; the hub offline (nothing may be asked of it); the test in an empty folder."""
    site = tmp_path / "site-packages"
    package = site / "yahtzee_lightning"
    shutil.copytree(CHECKOUT / "checkpoints" / NAME, package / "_shipped" / "checkpoints" / NAME)
    (site / "checkpoints" / "foreign").mkdir(parents=True)
    (site / "checkpoints" / "foreign" / "config.json").write_text(json.dumps({"package": "other"}))
    (site / "conf").mkdir()
    (site / "conf" / "foreign.yaml").write_text("x: 1\n")
    (site / "benchmarks").mkdir()
    (site / "benchmarks" / "bench_foreign.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w')\n")
    monkeypatch.setattr(shipped, "PACKAGE", package)
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    monkeypatch.chdir(empty)
    return package


def test_from_pretrained_finds_a_shipped_agent_by_name_from_an_installed_package(installed: Path):
    from yahtzee_lightning.hub.download import resolve_folder

    assert resolve_folder(NAME) == installed / "_shipped" / "checkpoints" / NAME
    agent = YahtzeeAgent.from_pretrained(NAME)
    reference = YahtzeeAgent.from_pretrained(CHECKOUT / "checkpoints" / NAME)
    assert agent.config == reference.config
    for key, value in reference.net.state_dict().items():
        assert torch.equal(agent.net.state_dict()[key], value), key
    assert YahtzeeAgent.from_pretrained(f"checkpoints/{NAME}").config == reference.config  # as the README writes it


def test_a_name_that_is_no_shipped_agent_says_which_there_are(installed: Path):
    from yahtzee_lightning.hub import AgentNotFoundError

    with pytest.raises(AgentNotFoundError, match=f"shipped agents, found by name: {NAME}"):
        YahtzeeAgent.from_pretrained("distiled-128x2")


def test_nothing_of_another_package_beside_the_installed_one_is_taken_for_ours(installed: Path, capsys, tmp_path):
    assert shipped.checkout() is None
    assert shipped.agent_names() == [NAME]
    assert shipped.recipe_names() == []
    assert bench.available() == []
    assert bench.main(["foreign"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "come with a source checkout" in err[0], err
    assert not (tmp_path / "ran").exists()


def test_a_checkout_is_found_and_runs_its_own_benchmarks():
    assert shipped.checkout() == CHECKOUT
    assert bench.bench_dir() == CHECKOUT / "benchmarks"
    assert {"solver", "env"} <= set(bench.available())


def test_pull_copies_a_shipped_agent_and_the_verbs_that_write_into_one_say_how(installed: Path, capsys):
    from yahtzee_lightning.commands.hub import pull_main
    from yahtzee_lightning.commands.turn_value import main as turn_value_main

    assert pull_main([NAME, "mine"]) == 0
    assert YahtzeeAgent.from_pretrained("mine").config == YahtzeeAgent.from_pretrained(NAME).config
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        turn_value_main(["--agent", NAME])
    assert e.value.code == 2
    assert f"copy it first (yahtzee-lightning pull {NAME} my-agent)" in capsys.readouterr().err


LIST_PROBE = """
import sys
from yahtzee_lightning.cli import main
code = main(["agents"])
print("torch loaded:", "torch" in sys.modules)
sys.exit(code)
"""


def test_agents_lists_every_shipped_agent_from_its_card_without_loading_torch(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-c", LIST_PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True
    )
    rows = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert set(shipped.agent_names()) <= set(rows), done.stdout
    config = json.loads((CHECKOUT / "checkpoints" / NAME / "config.json").read_text())
    summary = config["evaluation"]["summary"]
    row = rows[NAME].split()
    assert row[1] == "81,198"  # parameters, from the safetensors header
    assert row[4] == f"{summary['score']['mean']:.2f}"
    assert row[5] == f"{config['evaluation']['optimal']['score']['mean']:.2f}"
    assert row[6] == f"{summary['regret']['per_game_mean']:.2f}"
    assert "torch loaded: False" in done.stdout
