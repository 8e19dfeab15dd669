"""A study's progress between a trial's start and end: a line an interval, from its evaluations."""

from yahtzee_lightning.study.running import runner


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_trials_evaluations_give_a_line_every_interval(monkeypatch, capsys):
    monkeypatch.setenv("YAHTZEE_LIGHTNING_PROGRESS_SECONDS", "60")
    clock = Clock()
    progress = runner.Progress(4, {"ppo_0": "lr=3e-4"}, clock=clock)
    for games in range(1000, 6000, 1000):  # an evaluation every 20 s
        clock.now += 20
        progress.result("ppo_0", {"games": games, "eval/mean_score": 150.25, "time_total_s": clock.now})
    progress.result("ppo_0", {"done": True})  # Tune's last result, without games: no line
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["[0/4] ppo_0 lr=3e-4: 3,000 games, eval score 150.2, 50 games/s"]  # at 60 s, then not before 120 s


def test_a_resumed_study_counts_each_run_once_and_says_which_were_finished_before(capsys):
    """Tune restores a resumed experiment's finished trials with it: they start and end again
    (reading their final.json). The count starts at the finished runs and does not count them twice."""
    progress = runner.Progress(3, {}, finished=frozenset({"reinforce_0"}))
    progress.say("reinforce_0", "started")
    progress.say("a2c_0", "started")
    progress.say("reinforce_0", "done: final mean score 185.9", True)
    progress.say("a2c_0", "done: final mean score 201.8", True)
    progress.say("ppo_0", "FAILED", True)
    assert capsys.readouterr().err.splitlines() == [
        "[1/3] a2c_0: started",
        "[1/3] reinforce_0: finished in an earlier session (its final evaluation read, not trained again)",
        "[2/3] a2c_0: done: final mean score 201.8",
        "[3/3] ppo_0: FAILED",
    ]
