"""A study folder's one writer and what it wrote (``yahtzee_lightning.manifest``).

``study run`` and ``study report`` hold the folder's lock while they write: a second one is refused
in one line naming the first. A ``study run`` session sweeps what its trials write (Ray, Lightning,
the trials themselves) into the folder's manifest as they write it, so that ``--force`` later
deletes exactly those files; the report keeps a manifest of its own in ``report/``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from ..manifest import FolderBusy, Manifest, folder_lock
from .model import StudyError

REPORT = "report"  # the report's folder: its own manifest (``study report`` writes it)
_SESSION: Manifest | None = None  # the running session's manifest (the progress callback sweeps it)


def owned(out: Path) -> Manifest:
    """The study folder's manifest: the running session's, else as on disk."""
    if _SESSION is not None and _SESSION.folder == out:
        return _SESSION
    return Manifest.read(out)


def beat() -> None:
    """The running session's heartbeat: what its trials wrote so far goes into the manifest."""
    if _SESSION is not None:
        _SESSION.beat(skip=[REPORT])


@contextlib.contextmanager
def locked(out: Path, command: str) -> Iterator[None]:
    """Hold the study folder while the block writes there; another writer's hold is a ``StudyError``."""
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(folder_lock(out, command))
        except FolderBusy as e:
            raise StudyError(str(e)) from None
        yield


@contextlib.contextmanager
def study_session(out: Path, command: str) -> Iterator[Manifest]:
    """A ``study run`` session: the folder held, a killed session's files swept first (they are
    ours), and what this one writes swept as it goes (a heartbeat) and when it ends."""
    global _SESSION
    with locked(out, command):
        _SESSION = Manifest.read(out)
        _SESSION.start_session(skip=[REPORT])
        try:
            with _SESSION.heartbeat(skip=[REPORT]):
                yield _SESSION
        finally:
            _SESSION.end_session(skip=[REPORT])
            _SESSION = None
