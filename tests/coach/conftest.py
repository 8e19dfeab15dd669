"""A coach server on a free port of 127.0.0.1, in a thread, for the API and browser tests."""

import threading

import pytest

from yahtzee_lightning.coach.game import CoachedGame
from yahtzee_lightning.coach.server import CoachServer
from yahtzee_lightning.game import Rules
from yahtzee_lightning.players import GreedyPlayer
from yahtzee_lightning.solver import load_or_solve

SMALL = Rules(boxes=(0, 5, 8, 11, 12))


@pytest.fixture
def server():
    """Games of the reduced rules against the greedy player; yields the running server."""
    table = load_or_solve(SMALL, progress=False)
    opponent = GreedyPlayer(SMALL)
    srv = CoachServer(lambda seed: CoachedGame(SMALL, table, opponent, seed=seed), port=0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=5)
