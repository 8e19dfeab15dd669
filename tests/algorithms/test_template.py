"""The new-algorithm template CONTRIBUTING hands out (docs/templates/algorithm/) works as it says:
its own seeded tests pass, and its YAML, which names a shipped recipe as its ``base:``, trains from
its folder through the console script. Then the ``base:`` chain's rules and errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from yahtzee_lightning.shipped import expand_base, expanded_config_path, merge_recipes

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "docs" / "templates" / "algorithm"


def _run(args: list[str], cwd: Path, timeout: int = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f".{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_templates_own_tests_pass(tmp_path):
    done = _run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(TEMPLATE), str(TEMPLATE)],
        TEMPLATE,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "3 passed" in done.stdout


def test_the_templates_yaml_trains_from_its_folder(tmp_path):
    for name in ("clipped_a2c.py", "clipped_a2c.yaml"):
        (tmp_path / name).write_text((TEMPLATE / name).read_text())
    tiny = [
        "--model.init_args.total_games=128",
        "--model.init_args.evaluations=1",
        "--model.init_args.eval_games=8",
        "--model.init_args.final_eval_games=0",
        "--model.init_args.d_h=16",
        "--model.init_args.head_hidden=16",
    ]
    cli = [sys.executable, "-m", "yahtzee_lightning.cli", "fit", "--config", "clipped_a2c.yaml"]
    shown = _run([*cli, *tiny, "--print_config"], tmp_path)
    assert shown.returncode == 0, shown.stderr[-2000:]
    config = yaml.safe_load(shown.stdout)
    base = yaml.safe_load((ROOT / "conf" / "a2c_cpu.yaml").read_text())["model"]["init_args"]
    args = config["model"]["init_args"]
    assert config["model"]["class_path"] == "clipped_a2c.ClippedA2C"
    assert args["advantage_clip"] == 20.0  # the template's own line
    assert args["lr"] == base["lr"] and args["gamma_min"] == base["gamma_min"]  # the base recipe's
    trained = _run([*cli, *tiny], tmp_path)
    assert trained.returncode == 0, trained.stderr[-2000:]


def test_a_base_merges_mappings_and_replaces_the_rest():
    base = {"model": {"class_path": "A2C", "init_args": {"lr": 1.0, "d_h": 8}}, "trainer": {"callbacks": [1, 2]}}
    over = {"model": {"class_path": "Mine", "init_args": {"lr": 2.0}}, "trainer": {"callbacks": []}}
    assert merge_recipes(base, over) == {
        "model": {"class_path": "Mine", "init_args": {"lr": 2.0, "d_h": 8}},
        "trainer": {"callbacks": []},
    }


def test_a_chain_of_bases_applies_the_nearest_last(tmp_path):
    (tmp_path / "a.yaml").write_text("model: {init_args: {lr: 1, d_h: 8, seed: 3}}\n")
    (tmp_path / "b.yaml").write_text("base: a.yaml\nmodel: {init_args: {lr: 2, d_h: 16}}\n")
    (tmp_path / "c.yaml").write_text("base: b.yaml\nmodel: {init_args: {lr: 3}}\n")
    merged = yaml.safe_load(Path(expanded_config_path(str(tmp_path / "c.yaml"))).read_text())
    assert merged == {"model": {"init_args": {"lr": 3, "d_h": 16, "seed": 3}}}
    plain = tmp_path / "a.yaml"
    assert expanded_config_path(str(plain)) == str(plain)  # no base: the file itself


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"c.yaml": "base: nowhere_at_all\n"},
            "base: nowhere_at_all: no such file, nor a shipped recipe; recipes: a2c",
        ),
        ({"c.yaml": "base: d.yaml\n", "d.yaml": "base: c.yaml\n"}, "in a loop"),
        ({"c.yaml": "base: [a2c]\n"}, "base must name a recipe"),
    ],
)
def test_a_bad_base_is_one_line_naming_the_recipe(tmp_path, files, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match=message.replace("[", r"\[")) as raised:
        expand_base(yaml.safe_load(files["c.yaml"]), tmp_path / "c.yaml")
    assert str(tmp_path / "c.yaml") in str(raised.value) and "\n" not in str(raised.value)


def test_fit_words_a_bad_base_as_its_other_errors(tmp_path):
    (tmp_path / "c.yaml").write_text("base: nowhere_at_all\n")
    done = _run([sys.executable, "-m", "yahtzee_lightning.cli", "fit", "--config", "c.yaml"], tmp_path, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("yahtzee-lightning fit: error: ")
    assert "nowhere_at_all" in done.stderr
