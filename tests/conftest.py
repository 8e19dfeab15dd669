"""Suite-wide fixtures: solved tables go to one temporary cache shared by the whole session."""

import os
import tempfile

import pytest

_CACHE = tempfile.mkdtemp(prefix="yahtzee_lightning_cache_")
os.environ.setdefault("YAHTZEE_LIGHTNING_CACHE", _CACHE)


@pytest.fixture(scope="session")
def default_table():
    from yahtzee_lightning.solver import load_or_solve

    return load_or_solve(progress=False)
