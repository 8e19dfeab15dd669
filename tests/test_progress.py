"""The one progress mechanism: a bar with a total and an ETA on a terminal, a line every interval
elsewhere (logs, pipes), nothing when turned off."""

import io
import re

import pytest

from yahtzee_lightning.progress import INTERVAL_VARIABLE, ProgressLines, advance_turn, line_interval, progress_bar


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
    monkeypatch.setattr("sys.stderr", io.StringIO())  # a log file or a pipe: lines, not a bar
    assert isinstance(progress_bar(10, "piped"), ProgressLines)
    assert progress_bar(10, "piped and off", enabled=False).disable


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lines_come_at_a_steady_interval_with_rate_and_time_left():
    out, clock = io.StringIO(), Clock()
    lines = ProgressLines(1000, "evaluating optimal", "game", interval=30, file=out, clock=clock)
    for _ in range(9):  # 100 games every 10 s: a line every third update
        clock.now += 10
        lines.set_postfix_str("mean score 254.6")
        lines.update(100)
    lines.update(100)
    lines.close()
    printed = out.getvalue().splitlines()
    assert printed[0] == "evaluating optimal: 300/1,000 games (30%), mean score 254.6, 10 games/s, 1m10s left"
    assert [re.match(r"[^:]*: ([\d,]+)/", line)[1] for line in printed[:3]] == ["300", "600", "900"]
    assert printed[-1] == "evaluating optimal: 1,000/1,000 games, 1m30s, mean score 254.6"


def test_short_work_prints_nothing_and_a_resumed_count_is_not_in_the_rate():
    out, clock = io.StringIO(), Clock()
    quick = ProgressLines(10, "solving", "state", interval=30, file=out, clock=clock)
    quick.update(10)
    quick.close()
    assert out.getvalue() == ""
    resumed = ProgressLines(100, "fit", "game", interval=1, initial=50, file=out, clock=clock)
    clock.now += 5
    resumed.update(10)  # 10 games in 5 s since the resume, not 60
    assert "fit: 60/100 games (60%), 2 games/s, 20s left" in out.getvalue()


def test_the_interval_is_a_setting_named_when_bad(monkeypatch):
    monkeypatch.setenv(INTERVAL_VARIABLE, "5")
    assert line_interval() == 5
    monkeypatch.setenv(INTERVAL_VARIABLE, "soon")
    with pytest.raises(ValueError, match=INTERVAL_VARIABLE):
        line_interval()


def test_a_bad_interval_stops_every_verb_in_one_line_before_any_work(monkeypatch, capsys):
    from yahtzee_lightning.cli import main

    monkeypatch.setenv(INTERVAL_VARIABLE, "-1")
    assert main(["solve", "--boxes", "0"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == f"yahtzee-lightning: {INTERVAL_VARIABLE} must be a number of seconds >= 0, got '-1'"


def test_evaluation_prints_lines_with_its_score_when_piped(monkeypatch, capsys):
    from yahtzee_lightning.evaluation.protocol import play_games
    from yahtzee_lightning.game import Rules
    from yahtzee_lightning.players import make_player

    monkeypatch.setenv(INTERVAL_VARIABLE, "0")
    rules = Rules()
    play_games(make_player("random", rules), 40, 0, rules, batch_size=20, progress=True)
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("evaluating random: ") for line in err)
    second_batch = [line for line in err[:-1] if int(re.search(r"(\d+)/40", line)[1]) > 20]
    assert second_batch and all("mean score" in line for line in second_batch)  # the first batch's score
    assert re.search(r"40/40 games, \d+s, mean score \d+\.\d", err[-1])


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


def test_solving_prints_lines_in_states_when_piped(monkeypatch, capsys):
    from yahtzee_lightning.game import Rules
    from yahtzee_lightning.solver import solve

    monkeypatch.setenv(INTERVAL_VARIABLE, "0")
    solve(Rules(boxes=(0, 5, 12)), progress=True)
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("solving ") and " states" in line for line in err)
    assert re.search(r": ([\d,]+)/\1 states, \d+s$", err[-1])  # the last line: all of them, and the time


def test_a_loop_of_unknown_length_counts_without_a_share_or_time_left():
    out, clock = io.StringIO(), Clock()
    lines = ProgressLines(0, "fit", "step", interval=1, file=out, clock=clock)
    clock.now += 2
    lines.update(4)
    lines.close()
    assert out.getvalue().splitlines() == ["fit: 4 steps, 2 steps/s", "fit: 4 steps, 2s"]


def test_fit_lines_for_any_lightning_module_count_steps(monkeypatch, capsys):
    """A module without the project's budget (a user's, TabularSARSA) and a loader without a length."""
    import lightning as L
    import torch

    from yahtzee_lightning.loop.progress_lines import FitProgressLines

    class NoLength(torch.utils.data.IterableDataset):
        def __iter__(self):
            yield from (torch.zeros(1) for _ in range(5))

    class Tiny(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def training_step(self, batch, batch_idx):
            return (self.w - 1).pow(2).sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def train_dataloader(self):
            return torch.utils.data.DataLoader(NoLength(), batch_size=None)

    trainer = L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False)
    trainer.callbacks.append(FitProgressLines(interval=0))
    trainer.fit(Tiny())
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("fit: ")]
    assert lines[0].startswith("fit: 1 steps, ") and lines[-1].startswith("fit: 5 steps, "), lines
