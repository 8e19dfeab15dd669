"""One progress mechanism for long work (solving, evaluation, matches, training), on stderr.

On a terminal it is a tqdm bar. Elsewhere (a log file, a pipe: nohup, CI, SLURM, Ray) a bar's
carriage returns would fill the file, and no bar at all leaves a run silent for hours: there it
is ``ProgressLines``, a short line at a steady interval (done, total, rate, time left).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

INTERVAL_VARIABLE = "YAHTZEE_LIGHTNING_PROGRESS_SECONDS"
DEFAULT_INTERVAL = 30.0


def line_interval() -> float:
    """Seconds between two progress lines: ``$YAHTZEE_LIGHTNING_PROGRESS_SECONDS``, else 30."""
    value = os.environ.get(INTERVAL_VARIABLE)
    if value is None:
        return DEFAULT_INTERVAL
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{INTERVAL_VARIABLE} must be a number of seconds >= 0, got {value!r}")
    return seconds


def duration(seconds: float) -> str:
    """``1h02m``, ``4m05s``, ``12s``: short enough for a progress line."""
    s = max(0, round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class ProgressLines:
    """A progress bar's interface (``update``, ``set_postfix_str``, ``close``) that prints a line
    every ``interval`` seconds instead of redrawing:

    ``evaluating optimal: 5,000/10,000 games (50%), mean score 254.6, 180 games/s, 28s left``

    Nothing is printed for work shorter than one interval; once a line was printed, ``close``
    adds a last one with the total time.
    """

    disable = False  # as tqdm's attribute: this one shows progress

    def __init__(
        self,
        total: int,
        desc: str,
        unit: str = "it",
        interval: float | None = None,
        initial: int = 0,
        file: Any = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.desc, self.unit = total, desc, unit
        self.interval = line_interval() if interval is None else interval
        self.file, self.clock = file, clock
        self.n = self.initial = initial  # done before this process started (a resumed run): not in the rate
        self.postfix, self.printed = "", 0
        self.start = self.last = clock()

    def due(self) -> bool:
        """Whether the next ``update`` prints: a caller computes an expensive postfix only then."""
        return self.clock() - self.last >= self.interval

    def update(self, n: int = 1) -> None:
        self.n += n
        now = self.clock()
        if now - self.last >= self.interval and (self.n < self.total or self.total <= 0):
            self.last = now
            self._print(self.line(now))

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        """Something to show after the count (a score so far), as tqdm's method of that name."""
        self.postfix = text

    def line(self, now: float) -> str:
        elapsed = now - self.start
        rate = (self.n - self.initial) / elapsed if elapsed > 0 else 0.0
        known = self.total > 0  # a total of 0: not known (a loop without a length), no share or time left
        count = (
            f"{self.n:,}/{self.total:,} {self.unit}s ({100 * self.n // self.total}%)"
            if known
            else f"{self.n:,} {self.unit}s"
        )
        parts = [f"{self.desc}: {count}"]
        if self.postfix:
            parts.append(self.postfix)
        parts.append(f"{rate:,.0f} {self.unit}s/s" if rate >= 10 else f"{rate:.2g} {self.unit}s/s")
        if rate > 0 and known:
            parts.append(f"{duration((self.total - self.n) / rate)} left")
        return ", ".join(parts)

    def close(self) -> None:
        if self.printed:
            count = f"{self.n:,}/{self.total:,}" if self.total > 0 else f"{self.n:,}"
            done = f"{self.desc}: {count} {self.unit}s, {duration(self.clock() - self.start)}"
            self._print(", ".join([done, *([self.postfix] if self.postfix else [])]))
        self.printed = 0

    def _print(self, text: str) -> None:
        print(text, file=self.file or sys.stderr, flush=True)
        self.printed += 1


def progress_bar(total: int, desc: str, enabled: bool = True, unit: str = "it") -> Any:
    """A tqdm bar with a total (so it shows an ETA) on stderr when it is a terminal; elsewhere
    (logs, CI, pipes) ``ProgressLines``; nothing when ``enabled`` is False (an object with
    the same methods that does nothing, tqdm's disabled bar)."""
    from tqdm import tqdm

    if enabled and not sys.stderr.isatty():
        return ProgressLines(total, desc, unit)
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, dynamic_ncols=True)


def advance_turn(bar: Any, games: int, turn: int, n_turns: int) -> None:
    """Advance ``bar`` (counting games) after ``turn`` (1-based) of ``n_turns`` of a batch of ``games``.

    A batch of games finishes all at once, after seconds; counting its turns as whole games in
    proportion keeps the bar and its ETA moving.
    """
    bar.update(games * turn // n_turns - games * (turn - 1) // n_turns)
