"""An exported agent carries the training YAML as the shipped agents do: the one its checkpoint carries."""

from pathlib import Path

import pytest
import yaml

from yahtzee_lightning.cli import main
from yahtzee_lightning.hub import YahtzeeAgent

ROOT = Path(__file__).resolve().parents[2]
TINY = [
    "--model.init_args.d_h=16",
    "--model.init_args.n_layers=1",
    "--model.init_args.head_hidden=16",
    "--model.init_args.games_per_batch=8",
    "--model.init_args.total_games=16",
    "--model.init_args.evaluations=1",
    "--model.init_args.eval_games=10",
    "--model.init_args.final_eval_games=0",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
]


def test_export_writes_the_runs_own_yaml_and_the_card_names_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "--config", str(ROOT / "conf" / "reinforce.yaml"), *TINY, "--model.init_args.lr=0.002"]) == 0
    [ckpt] = Path("runs/reinforce/checkpoints").glob("version_*/last.ckpt")
    assert main(["export", str(ckpt), "agent", "--games", "0"]) == 0
    carried = yaml.safe_load(Path("agent/reinforce.yaml").read_text())  # named after the config it ran
    assert carried["model"]["init_args"]["lr"] == 0.002 and carried["model"]["init_args"]["d_h"] == 16  # overrides
    assert "Training config (next to the weights): reinforce.yaml" in Path("agent/README.md").read_text()
    assert YahtzeeAgent.load(Path("agent")).training["config_file"] == "reinforce.yaml"
    capsys.readouterr()
    # The carried YAML is a fit config as it stands: fit parses it whole.
    with pytest.raises(SystemExit) as printed:
        main(["fit", "--config", "agent/reinforce.yaml", "--print_config"])
    assert printed.value.code == 0
    assert "lr: 0.002" in capsys.readouterr().out
    # --config names another file: that one is copied instead.
    assert main(["export", str(ckpt), "named", "--games", "0", "--config", str(ROOT / "conf" / "a2c.yaml")]) == 0
    assert sorted(p.name for p in Path("named").glob("*.yaml")) == ["a2c.yaml"]
