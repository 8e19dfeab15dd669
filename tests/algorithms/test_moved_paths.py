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


def test_the_recipes_keep_the_callbacks_public_path_so_committed_studies_keep_their_cell_ids():
    """A study's cell id hashes its composed config, callbacks included: a recipe that renamed its
    ``RunCheckpoint`` path would give every cell of a committed study a new id, and ``study run``
    would train its finished runs again. The recipes name the public path, which the alias keeps."""
    from pathlib import Path

    conf = Path(__file__).parents[2] / "conf"
    moved = [str(p) for p in conf.rglob("*.yaml") if "yahtzee_lightning.loop." in p.read_text()]
    assert not moved, f"recipes naming the loop's own path: {moved}"
