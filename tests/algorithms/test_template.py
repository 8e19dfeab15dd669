"""The new-algorithm template CONTRIBUTING hands out (docs/templates/algorithm/) works as it says:
its own seeded tests pass, and its YAML, which names a shipped recipe as its ``base:``, trains from
its folder through the console script. Then the ``base:`` chain's rules and errors."""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from yahtzee_lightning.cli import main
from yahtzee_lightning.shipped import expand_base, expanded_config_path, merge_recipes

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "docs" / "templates" / "algorithm"


FILES = ("clipped_a2c.py", "clipped_a2c.yaml", "test_clipped_a2c.py")
TINY = [
    "--model.init_args.total_games=128",
    "--model.init_args.evaluations=1",
    "--model.init_args.eval_games=8",
    "--model.init_args.final_eval_games=0",
    "--model.init_args.d_h=16",
    "--model.init_args.head_hidden=16",
]


@pytest.fixture
def copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The template copied into a folder of its own, the working folder and first on the import path
    (``PYTHONPATH=.``, pytest's rootdir), as a user runs it: in this process, which has paid for torch
    and Lightning already (a process of its own paid again, 10-20 s)."""
    for name in FILES:
        (tmp_path / name).write_text((TEMPLATE / name).read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for module in ("clipped_a2c", "test_clipped_a2c"):  # imported from this folder: gone with it
        sys.modules.pop(module, None)


@pytest.mark.slow("the template's own test file, which trains its algorithm: about 20 s")
def test_the_templates_own_tests_pass(copied):
    tests = importlib.import_module("test_clipped_a2c")
    assert tests.__file__ == str(copied / "test_clipped_a2c.py")
    names = [name for name in vars(tests) if name.startswith("test_")]
    assert len(names) == 3, names
    for name in names:  # each with fresh fixtures of those it asks for, as pytest would call it
        test = getattr(tests, name)
        with pytest.MonkeyPatch.context() as monkeypatch:
            fixtures = {"monkeypatch": monkeypatch, "tmp_path": copied}
            test(**{arg: fixtures[arg] for arg in inspect.signature(test).parameters})


def test_the_templates_yaml_trains_from_its_folder(copied, capsys):
    cli = ["fit", "--config", "clipped_a2c.yaml", *TINY]
    with pytest.raises(SystemExit) as shown:
        main([*cli, "--print_config"])
    assert shown.value.code == 0
    config = yaml.safe_load(capsys.readouterr().out)
    base = yaml.safe_load((ROOT / "conf" / "a2c_cpu.yaml").read_text())["model"]["init_args"]
    args = config["model"]["init_args"]
    assert config["model"]["class_path"] == "clipped_a2c.ClippedA2C"
    assert args["advantage_clip"] == 20.0  # the template's own line
    assert args["lr"] == base["lr"] and args["gamma_min"] == base["gamma_min"]  # the base recipe's
    assert main(cli) == 0


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


def test_fit_words_a_bad_base_as_its_other_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text("base: nowhere_at_all\n")
    with pytest.raises(SystemExit) as ended:
        main(["fit", "--config", "c.yaml"])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("yahtzee-lightning fit: error: ")
    assert "nowhere_at_all" in err
