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


def pytest_collection_modifyitems(items):
    """The Ray studies first. They are one xdist group (``-n 2 --dist loadgroup``: one worker runs them
    in turn, since a local Ray may join another test's cluster) and half the suite's time: started
    first, the other worker runs everything else beside them; started last, they would run alone."""
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)
