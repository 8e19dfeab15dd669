"""A running study's progress lines: one per trial that starts, ends or fails, and in between at
most one a progress interval, so that a study of hours is never silent."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from ...progress import line_interval
from ..ownership import beat


class Progress:
    """One line per trial that starts, finishes or fails, with the count ended (on stderr); between
    them, at most one line every progress interval (``progress.line_interval``) for a trial that
    reported an evaluation: its games, score and rate, so a study of hours is never silent."""

    def __init__(
        self,
        total: int,
        labels: dict[str, str],
        finished: frozenset[str] = frozenset(),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.labels = total, labels
        self.finished = set(finished)  # runs that have ended: those a resumed study had finished, then each that ends
        self.earlier = frozenset(finished)  # Tune restores them with their experiment: they start and end again
        self.clock, self.interval = clock, None  # read when a trial reports (not at import: see _PROGRESS)
        self.last = clock()

    @property
    def ended(self) -> int:
        return len(self.finished)

    def say(self, trial: Any, what: str, ended: bool = False) -> None:
        beat()
        name = str(trial)
        if name in self.earlier:  # its final.json is read again, nothing trains: one line, counted once
            if ended:
                self.line(trial, "finished in an earlier session (its final evaluation read, not trained again)")
            return
        if ended:
            self.finished.add(name)
        self.line(trial, what)

    def line(self, trial: Any, what: str) -> None:
        name = str(trial)
        label = f" {self.labels[name]}" if self.labels.get(name) else ""
        print(f"[{self.ended}/{self.total}] {name}{label}: {what}", file=sys.stderr, flush=True)

    def result(self, trial: Any, result: dict[str, Any]) -> None:
        """A trial's evaluation: a line when the interval has passed since the last line of this kind."""
        now = self.clock()
        if self.interval is None:
            self.interval = line_interval()
        if now - self.last < self.interval or result.get("games") is None:
            return
        self.last = now
        games, seconds = float(result["games"]), float(result.get("time_total_s") or 0.0)
        what = [f"{games:,.0f} games"]
        if result.get("eval/mean_score") is not None:
            what.append(f"eval score {float(result['eval/mean_score']):.1f}")
        if seconds > 0:
            what.append(f"{games / seconds:,.0f} games/s")
        self.line(trial, ", ".join(what))
