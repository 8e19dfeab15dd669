"""One progress bar for long loops (solving, evaluation, matches): on stderr, and only on a terminal."""

from __future__ import annotations

from typing import Any


def progress_bar(total: int, desc: str, enabled: bool = True, unit: str = "it") -> Any:
    """A tqdm bar with a total (so it shows an ETA) on stderr.

    Off when ``enabled`` is False, and when stderr is not a terminal (logs, CI, pipes): tqdm's
    ``disable=None`` means exactly that, so redirected output never fills with carriage returns.
    """
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=None if enabled else True, dynamic_ncols=True)


def advance_turn(bar: Any, games: int, turn: int, n_turns: int) -> None:
    """Advance ``bar`` (counting games) after ``turn`` (1-based) of ``n_turns`` of a batch of ``games``.

    A batch of games finishes all at once, after seconds; counting its turns as whole games in
    proportion keeps the bar and its ETA moving.
    """
    bar.update(games * turn // n_turns - games * (turn - 1) // n_turns)
