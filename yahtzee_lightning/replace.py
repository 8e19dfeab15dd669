"""A folder written anew in one step: a writer killed at any instant leaves the old folder or the new one.

``export``, ``pull`` and ``study report`` write a folder the user names, which may hold the user's
own files. ``replacing`` gives them an empty sibling folder to write into; when they are done,
the user's files are linked into it (the same files, not copies), and the two folders swap places
in one system call (Linux ``renameat2(RENAME_EXCHANGE)``; a new folder: one ``rename``). The old
content is then deleted. So at every instant the folder is whole: the old agent or report, or the
new one, never a mix, and a process killed outright leaves only its sibling folders, which the next
writer of the same folder deletes first (they are named ``.NAME.yl-new-*`` and ``.NAME.yl-old-*``).

One writer at a time: a second writer of the same folder is refused in one line, naming the first
(``folder_lock`` on a sibling ``.NAME.yl-writer``). Where the system
cannot swap two folders (not Linux, or a file system without it), the new files replace the old
ones one by one, as before: each file whole, but the folder mixed while it happens.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from .manifest import MANIFEST, META, Manifest, _files, folder_lock

NEW, OLD, WRITER = ".yl-new-", ".yl-old-", ".yl-writer"


def exchange(a: Path, b: Path) -> bool:
    """Swap the paths ``a`` and ``b`` in one step; False where the system cannot (then nothing moved)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(b))


def carry(old: Path, new: Path, rel: str) -> None:
    """``old/rel`` into ``new`` as the same file (a hard link; a link as a link), or a copy where links fail."""
    src, dst = old / rel, new / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
        return
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _theirs(path: Path, manifest: Manifest, written: set[str]) -> list[str]:
    """Everything in ``path`` that stays the user's: files (links too) the manifest does not prove
    ours, and empty folders; the folder's meta files and what the new content writes left out."""
    out = []
    for dirpath, dirnames, filenames in os.walk(path):
        here = Path(dirpath)
        for name in filenames + [d for d in dirnames if (here / d).is_symlink()]:
            rel = (here / name).relative_to(path).as_posix()
            if rel in META or rel.startswith(f".{MANIFEST}.") or rel in written:
                continue
            if (here / name).is_symlink() or not manifest.owns(rel):
                out.append(rel)
        if here != path and not filenames and not dirnames:
            out.append(here.relative_to(path).as_posix() + "/")
    return out


def current_umask() -> int:
    """The process's umask (read by setting it and back: the only way the system gives it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def sweep_litter(path: Path) -> None:
    """Delete what killed writers of ``path`` left beside it (call with the writer's lock held)."""
    for litter in [*path.parent.glob(f".{path.name}{NEW}*"), *path.parent.glob(f".{path.name}{OLD}*")]:
        if litter.is_dir() and not litter.is_symlink():
            shutil.rmtree(litter, ignore_errors=True)


@contextlib.contextmanager
def replacing(
    path: Path,
    command: str,
    recheck: Callable[[], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> Iterator[Path]:
    """Write the folder ``path`` anew (see the module's docstring): yields an empty sibling folder to
    write the new content into; on leaving the block without an error, it takes ``path``'s place in
    one step, with the user's files of ``path`` (those its manifest does not prove ours) carried over
    and each named in a line (``say``). ``recheck``: called once this writer holds ``path``, to refuse
    (by raising) a folder another writer changed since the caller's checks. The new folder's
    manifest names the files written in the block."""
    say = say or (lambda line: print(line, file=sys.stderr))
    path = Path(path)
    parent = path.parent
    parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(parent / f".{path.name}{WRITER}", command, tidy=True):
        sweep_litter(path)
        if recheck is not None:
            recheck()
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}{NEW}", dir=parent))
        # mkdtemp's folder is the writer's alone (0700): the new folder gets the old one's mode,
        # or a new folder's (the umask's), not a private one the user never asked for.
        os.chmod(tmp, stat.S_IMODE(path.stat().st_mode) if path.is_dir() else 0o777 & ~current_umask())
        try:
            yield tmp
            written = set(_files(tmp))
            Manifest.read(tmp).add(sorted(written))
            if not path.exists():
                os.rename(tmp, path)
                return
            theirs = _theirs(path, Manifest.read(path), written)
            for rel in theirs:
                if rel.endswith("/"):
                    (tmp / rel).mkdir(parents=True, exist_ok=True)
                else:
                    carry(path, tmp, rel)
            if exchange(tmp, path):
                old = parent / f".{path.name}{OLD}{tmp.name.rsplit(NEW, 1)[-1]}"
                os.rename(tmp, old)  # the old content, out of the way of a later writer's new folder
                shutil.rmtree(old, ignore_errors=True)
            else:
                _replace_file_by_file(tmp, path, written)
            for rel in theirs[:10]:
                say(f"kept {path / rel.rstrip('/')}: not written by yahtzee-lightning, or changed since")
            if len(theirs) > 10:
                say(f"kept {len(theirs) - 10} more files in {path} (not ours, or changed since)")
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)


def _replace_file_by_file(tmp: Path, path: Path, written: set[str]) -> None:
    """Where folders cannot be swapped: our old files go, the new ones move in one by one."""
    manifest = Manifest.read(path)
    manifest.remove_owned(spare=written, say=lambda line: None)
    for rel in sorted(written):
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp / rel, path / rel)
    manifest.add(sorted(written))
