"""The progress bar of solving and evaluation: a total and an ETA on a terminal, nothing elsewhere."""

import io

import pytest

from yahtzee_lightning.progress import advance_turn, progress_bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bar_shows_total_and_eta_on_a_terminal_only(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    bar = progress_bar(10, "evaluating", unit="game")
    bar.update(3)
    bar.refresh()
    shown = terminal.getvalue()
    assert "evaluating" in shown and "3/10" in shown and "<" in shown  # elapsed<remaining
    bar.close()
    assert progress_bar(10, "off", enabled=False).disable
    monkeypatch.setattr("sys.stderr", io.StringIO())  # a log file or a pipe: no bar
    assert progress_bar(10, "piped").disable


@pytest.mark.parametrize(("games", "n_turns"), [(2500, 13), (7, 13), (1, 13), (100, 2)])
def test_turns_advance_the_bar_by_whole_games_that_add_up(games, n_turns):
    class Counter:
        n = 0

        def update(self, k):
            assert k >= 0
            self.n += k

    bar = Counter()
    for turn in range(1, n_turns + 1):
        advance_turn(bar, games, turn, n_turns)
    assert bar.n == games
