"""What Lightning prints on every run that says nothing about the user's run, kept off the screen:
its cloud logger's advertisement, its inventory of accelerators not used, its "max_epochs reached",
a deprecation inside its own helpers; and a logger silenced for a block."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from typing import Any

#: Lightning's logger of the notices its first process prints.
RANK_ZERO = "lightning.pytorch.utilities.rank_zero"


@contextlib.contextmanager
def quiet(logger_name: str) -> Iterator[None]:
    """Drop a logger's notices (below warnings) for the duration of the block."""
    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


class _NoCloudTip:
    """A logging filter: drops Lightning's advertisement for its cloud logger, its inventory of
    accelerators it does not use (``GPU available: False, used: False``, TPU, HPU) and its
    "``max_epochs=N`` reached" at the end (epochs are evaluation intervals here: the run's own lines
    say where it stopped)."""

    DROPPED = ("litlogger", "GPU available:", "TPU available:", "HPU available:", "stopped: `max_epochs=")

    @staticmethod
    def filter(record: Any) -> bool:
        message = record.getMessage()
        return not any(d in message for d in _NoCloudTip.DROPPED)


def quiet_library_notices() -> None:
    """Hide, for this process, the notices ``_NoCloudTip`` drops and the deprecation warning of
    Lightning's own pytree helper."""
    warnings.filterwarnings("ignore", message=r".*LeafSpec.* is deprecated")
    for name in (RANK_ZERO, "lightning.pytorch"):
        logging.getLogger(name).addFilter(_NoCloudTip)  # the same object: added once however often called
