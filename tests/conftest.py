"""Suite-wide fixtures: solved tables go to one temporary cache shared by the whole session."""

import atexit
import os
import shutil
import tempfile

import pytest

# One cache for the session, made by the first process (the xdist controller: its workers and the
# processes tests start inherit it) and removed when that process exits: a run leaves no solved
# table (about 70 MB) behind. Stable-Baselines3's loggers write under it too, not in /tmp.
if "YAHTZEE_LIGHTNING_CACHE" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="yahtzee_lightning_cache_")
    os.environ["YAHTZEE_LIGHTNING_CACHE"] = _CACHE
    os.environ.setdefault("SB3_LOGDIR", os.path.join(_CACHE, "sb3"))
    atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
# One torch thread a test process (and the processes it starts): the tests' networks are too small
# to gain from a second, and a test's threads wait on cores that Ray's trials and the subprocesses
# of other steps hold.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def default_table():
    from yahtzee_lightning.solver import load_or_solve

    return load_or_solve(progress=False)


@pytest.fixture(scope="session")
def finished_study(tmp_path_factory, default_table):
    """A tiny finished study folder (``tiny_study.py``), its report written: tests copy it, never change it."""
    from tiny_study import build_study

    return build_study(tmp_path_factory.mktemp("tiny_study"))


@pytest.fixture
def no_table(monkeypatch):
    """The exact table cannot be had: loading or solving it raises (a self-taught run must not read it)."""
    from yahtzee_lightning.game import Rules
    from yahtzee_lightning.solver import cache

    def refuse(*args, **kwargs):
        raise AssertionError("the exact table was read")

    monkeypatch.setattr(cache, "_MEMORY", {})
    monkeypatch.setattr(cache, "load_trusted", refuse)
    monkeypatch.setattr(cache, "solve", refuse)
    with pytest.raises(AssertionError, match="exact table"):
        cache.load_or_solve(Rules())
