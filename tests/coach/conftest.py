"""A coach server on a free port of 127.0.0.1, in a thread, for the API and browser tests."""

import threading

import pytest

from yahtzee_lightning.coach.game import CoachedGame
from yahtzee_lightning.coach.server import CoachServer
from yahtzee_lightning.game import Rules
from yahtzee_lightning.players import GreedyPlayer
from yahtzee_lightning.solver import load_or_solve

SMALL = Rules(boxes=(0, 5, 8, 11, 12))


def make_server() -> CoachServer:
    """Games of the reduced rules against the greedy player, listening but not yet answering."""
    table = load_or_solve(SMALL, progress=False)
    opponent = GreedyPlayer(SMALL)
    return CoachServer(lambda seed: CoachedGame(SMALL, table, opponent, seed=seed), port=0)


@pytest.fixture
def idle_server():
    """A server that answers only once the test calls ``serve()`` on it."""
    srv = make_server()
    yield from _serving(srv, start=False)


@pytest.fixture
def server():
    """The running server."""
    yield from _serving(make_server(), start=True)


def _serving(srv: CoachServer, start: bool):
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    srv.serve = thread.start
    if start:
        thread.start()
    yield srv
    if thread.ident is not None:  # started
        srv.shutdown()
        thread.join(timeout=5)
    srv.server_close()
