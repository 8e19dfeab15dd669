"""The loop's modules moved from ``yahtzee_lightning.algorithms`` to ``yahtzee_lightning.loop``: the
old dotted paths (every recipe's ``RunCheckpoint`` callback, shipped agents' configs, pickles of
older runs) still import the moved module itself."""

from __future__ import annotations

import importlib
import pickle

import pytest

from yahtzee_lightning.algorithms import MOVED_TO_LOOP


@pytest.mark.parametrize("name", MOVED_TO_LOOP)
def test_an_old_path_is_the_moved_module(name):
    old = importlib.import_module(f"yahtzee_lightning.algorithms.{name}")
    new = importlib.import_module(f"yahtzee_lightning.loop.{name}")
    assert old is new
    assert new.__spec__.name == f"yahtzee_lightning.loop.{name}"  # the alias leaves the module's own spec


def test_a_recipe_class_path_and_a_pickle_of_the_old_path_load():
    from jsonargparse._util import import_object

    from yahtzee_lightning.loop.checkpoint import RunCheckpoint, is_run_checkpoint

    assert import_object("yahtzee_lightning.algorithms.checkpoint.RunCheckpoint") is RunCheckpoint
    assert is_run_checkpoint("yahtzee_lightning.algorithms.checkpoint.RunCheckpoint")
    from yahtzee_lightning.algorithms.launch import SameRunOnEveryRank  # a shipped agent's config names it

    old = pickle.dumps(SameRunOnEveryRank, protocol=0).replace(
        b"yahtzee_lightning.loop.", b"yahtzee_lightning.algorithms."
    )
    assert b"yahtzee_lightning.algorithms.launch" in old
    assert pickle.loads(old) is SameRunOnEveryRank


def test_the_old_module_paths_are_gone_from_the_recipes():
    from pathlib import Path

    conf = Path(__file__).parents[2] / "conf"
    old = [str(p) for p in conf.rglob("*.yaml") if "yahtzee_lightning.algorithms.checkpoint" in p.read_text()]
    assert not old, f"recipes naming the old path: {old}"
