"""A file written whole: a writer killed at any instant leaves the old file or the new one, never a
part of one under its name (a resume that reads it, a reader in another process, see one or the other).

The new content goes into a hidden sibling named by the writing process (two writers never share
one), which then takes the file's name in one ``rename``. A folder written whole is ``replace.py``'s.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def partial_path(path: Path) -> Path:
    """Where ``path``'s new content is written first: ``.NAME.PID.partial.SUFFIX`` beside it (the file's
    own suffix last, for a writer that goes by it, as matplotlib does)."""
    return path.with_name(f".{path.name}.{os.getpid()}.partial{path.suffix}")


@contextlib.contextmanager
def written_whole(path: str | Path) -> Iterator[Path]:
    """Yield the path to write ``path``'s new content into; once the block ends, it becomes ``path``
    in one step. An error in the block leaves ``path`` as it was, and no partial file behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(path)
    try:
        yield partial
        os.replace(partial, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()


def write_text_whole(path: str | Path, text: str) -> None:
    """``path``'s text replaced whole (UTF-8)."""
    with written_whole(path) as partial:
        partial.write_text(text, encoding="utf-8")
