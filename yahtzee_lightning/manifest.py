"""What a command owns in a folder it writes into, and who is writing there now.

A folder the user names (an agent folder, a study folder, a study's report) may hold the user's own
files too. So every command that writes into one records what it wrote in the folder's
``manifest.json``: each file's path and sha256. ``--force`` deletes exactly the files whose content
still matches their entry; anything else (a user's notes, a file edited since it was written, a
file of a folder written before manifests) stays where it is, and a line on stderr says so.

Commands that write files themselves ``Manifest.add`` them. A study's files are written by
many processes (trials, Ray, Lightning), so a study session ``Manifest.sweep`` s instead: every
file that appeared or changed in the folder while the session held it, the files that were there
before it started (the user's) left out. The session's start and its last heartbeat are kept in
the manifest, so that a session killed outright is swept by the next one, up to its last heartbeat.

One writer at a time: ``folder_lock`` holds an OS lock on ``.yahtzee-lightning.lock`` (released
by the OS when the process dies, so a killed writer never blocks the next one) and names the holder
(pid, host, command) in ``.yahtzee-lightning.owner`` for the process it refuses.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .atomic import write_text_whole
from .digest import DIGEST_KEY, record_sha256
from .untrusted import read_json

MANIFEST = "manifest.json"
LOCK = ".yahtzee-lightning.lock"
OWNER = ".yahtzee-lightning.owner"
#: Files about the folder rather than in it: never swept, never counted as the user's.
META = frozenset({MANIFEST, LOCK, OWNER})
#: A killed session's files are swept up to this long after its last heartbeat (a clock's coarseness):
#: a file the user put there later stays the user's.
BEAT_SLACK_S = 5.0
#: At most this many "kept" lines; the rest are counted in one more line.
KEPT_LINES = 10

log = logging.getLogger(__name__)


class FolderBusy(RuntimeError):
    """Another live process writes into the folder; the message names it and the folder."""


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes (read in chunks: checkpoints can be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _files(folder: Path, under: Iterable[str] | None = None, skip: Iterable[str] = ()) -> Iterator[str]:
    """The plain files below ``folder`` (or its subpaths ``under``) as posix paths relative to it, links
    neither followed nor listed, the folder's own meta files and the subfolders ``skip`` left out."""
    skipped = {s.rstrip("/") for s in skip}
    roots = [folder / u for u in under] if under is not None else [folder]
    for root in roots:
        if root.is_symlink() or not root.exists():
            continue
        if root.is_file():
            yield root.relative_to(folder).as_posix()
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            here = Path(dirpath)
            dirnames[:] = [d for d in dirnames if (here / d).relative_to(folder).as_posix() not in skipped]
            for name in filenames:
                p = here / name
                rel = p.relative_to(folder).as_posix()
                if not p.is_symlink() and p.is_file() and rel not in META and not rel.startswith(f".{MANIFEST}."):
                    yield rel  # (a manifest being saved, or left half-saved by a kill, is ours too)


class Manifest:
    """A folder's ``manifest.json``: the files a command of ours wrote there, by sha256."""

    def __init__(self, folder: Path, files: dict[str, str] | None = None, session: dict | None = None) -> None:
        self.folder = Path(folder)
        self.valid = False  # read from a file that matched its sha256
        self.files: dict[str, str] = dict(files or {})
        self.session = session  # {"since", "beat", "before": [names there when it started]} while one runs
        self._seen: dict[str, tuple[int, int]] = {}  # (size, mtime_ns) hashed this session: not hashed again
        self._last_beat = 0.0
        self._beating = threading.Lock()  # a session beats from its callbacks and from a timer thread

    @classmethod
    def read(cls, folder: str | Path) -> Manifest:
        """The folder's manifest; an empty one where there is none. One that is damaged or edited
        (its sha256 does not match) proves nothing: it reads as empty, with a warning."""
        folder = Path(folder)
        path = folder / MANIFEST
        if not path.is_file() or path.is_symlink():
            return cls(folder)
        try:
            record = read_json(path)
        except (OSError, ValueError) as e:
            log.warning("warning: %s: unreadable (%s); nothing in %s counts as ours", path, type(e).__name__, folder)
            return cls(folder)
        ok = isinstance(record, dict) and record.get(DIGEST_KEY) == record_sha256(record)
        if not ok or not isinstance(record.get("files"), dict):
            log.warning("warning: %s: does not match its sha256 (damaged or edited); nothing in %s counts as ours",
                        path, folder)  # fmt: skip
            return cls(folder)
        manifest = cls(folder, record["files"], record.get("session"))
        manifest.valid = True
        return manifest

    def save(self) -> None:
        """Write the manifest (atomically: a kill leaves the old one or the new one)."""
        record: dict[str, Any] = {"format": 1, "files": dict(sorted(self.files.items())), "session": self.session}
        record[DIGEST_KEY] = record_sha256(record)
        write_text_whole(self.folder / MANIFEST, json.dumps(record, indent=1))

    def owns(self, name: str) -> bool:
        """Whether ``name`` (relative to the folder) is a file we wrote, unchanged since."""
        p = self.folder / name
        return name in self.files and p.is_file() and not p.is_symlink() and file_sha256(p) == self.files[name]

    def add(self, names: Iterable[str]) -> None:
        """Record the files ``names`` (relative to the folder) as ours, as they are now; a name that is
        not there is dropped. Saved."""
        for name in names:
            p = self.folder / name
            if p.is_file() and not p.is_symlink():
                self.files[name] = file_sha256(p)
            else:
                self.files.pop(name, None)
        self.files = {k: v for k, v in self.files.items() if (self.folder / k).is_file()}  # (removed since)
        self.save()

    def sweep(self, since: float, until: float | None = None, skip: Iterable[str] = ()) -> None:
        """Record as ours every file that was written in ``[since, until]`` (mtime) and was not there
        when the session started (``session["before"]``), the subfolders ``skip`` left out."""
        before = set((self.session or {}).get("before", ()))
        for rel in _files(self.folder, skip=skip):
            if rel in before and rel not in self.files:
                continue
            st = (self.folder / rel).stat()
            if st.st_mtime < since - 2 or (until is not None and st.st_mtime > until):
                continue
            if self._seen.get(rel) != (st.st_size, st.st_mtime_ns) or rel not in self.files:
                self.files[rel] = file_sha256(self.folder / rel)
                self._seen[rel] = (st.st_size, st.st_mtime_ns)
        self.files = {k: v for k, v in self.files.items() if (self.folder / k).is_file()}

    def remove_owned(
        self,
        under: Iterable[str] | None = None,
        say: Callable[[str], None] | None = None,
        spare: Iterable[str] = (),
    ) -> list[str]:
        """Delete the files of ours below ``under`` (subpaths of the folder; all of it by default),
        unchanged since we wrote them, and the folders that leaves empty; return (and say, one line
        each) the files kept. ``spare``: names about to be written anew, neither deleted nor named. Saved."""
        say = say or (lambda line: print(line, file=sys.stderr))
        under = None if under is None else list(under)
        names = [n for n in _files(self.folder, under) if n not in set(spare)]
        nested: dict[Path, Manifest] = {}
        kept = [n for n in names if not (self.owns(n) or self._nested_owns(n, nested))]
        emptied: set[Path] = set()
        for name in names:
            if name not in kept:
                (self.folder / name).unlink()
                self.files.pop(name, None)
                emptied.update(p for p in (self.folder / name).parents if self.folder in p.parents)
        for d in sorted(emptied, key=lambda p: len(p.parts), reverse=True):  # deepest first; never the folder
            with contextlib.suppress(OSError):
                d.rmdir()  # only where nothing else is left
        for name in kept[:KEPT_LINES]:
            say(f"kept {self.folder / name}: not written by yahtzee-lightning, or changed since")
        if len(kept) > KEPT_LINES:
            say(f"kept {len(kept) - KEPT_LINES} more files in {self.folder} (not ours, or changed since)")
        # what is gone, and what was kept (changed since: no longer provably ours), leave the list
        self.files = {k: v for k, v in self.files.items() if (self.folder / k).is_file() and k not in kept}
        self.save()
        return kept

    def _nested_owns(self, name: str, nested: dict[Path, Manifest]) -> bool:
        """Whether a subfolder's own manifest proves ``name`` ours (a run folder's: its checkpoints and
        records, written by the process that trained there, which a killed study could not sweep); a
        subfolder's manifest, lock and owner files are ours where that manifest is whole."""
        path = self.folder / name
        for parent in path.parents:
            if parent == self.folder or self.folder not in parent.parents:
                return False
            if (parent / MANIFEST).is_file():
                manifest = nested.setdefault(parent, Manifest.read(parent))
                inside = path.relative_to(parent).as_posix()
                if manifest.valid and (inside in META or manifest.owns(inside)):
                    return True
        return False

    def start_session(self, skip: Iterable[str] = ()) -> None:
        """Open a session: first sweep one that was killed (up to its last heartbeat), then note which
        files are here now (not ours unless listed) and when it started. Saved."""
        if self.session:
            beat = float(self.session.get("beat", self.session.get("since", 0)))
            self.sweep(float(self.session.get("since", 0)), beat + BEAT_SLACK_S, skip)
        now = time.time()
        before = sorted(set(_files(self.folder, skip=skip)) - set(self.files))
        self.session = {"since": now, "beat": now, "before": before}
        self.save()

    def beat(self, skip: Iterable[str] = (), every_s: float = 10.0) -> None:
        """While a session runs: sweep what it wrote so far and note that it is alive (at most every ``every_s``)."""
        with self._beating:
            if self.session is None or time.monotonic() - self._last_beat < every_s:
                return
            self._last_beat = time.monotonic()
            self.sweep(self.session["since"], skip=skip)
            self.session["beat"] = time.time()
            self.save()

    @contextlib.contextmanager
    def heartbeat(self, skip: Iterable[str] = (), every_s: float = 10.0) -> Iterator[None]:
        """Beat every ``every_s`` from a thread while the block runs (a kill loses at most that much)."""
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(every_s):
                self.beat(skip, every_s=0)

        thread = threading.Thread(target=loop, name="manifest-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def end_session(self, skip: Iterable[str] = ()) -> None:
        """Close the session: sweep what it wrote, and forget it. Saved."""
        with self._beating:
            if self.session is not None:
                self.sweep(self.session["since"], skip=skip)
            self.session = None
            self.save()


def folder_holder(folder: str | Path) -> dict[str, Any] | None:
    """Who holds ``folder`` now, from its owner file (``pid``, ``host``, ``since``, ``command``), read
    without taking its lock: None where there is none or it is not readable, or where it names a
    process of this host that has ended (a killed writer's owner file stays behind)."""
    owner = _read_owner(Path(folder) / OWNER)
    if owner is None or (owner["host"] == socket.gethostname() and not _alive(owner["pid"])):
        return None
    return owner


def _read_owner(path: Path) -> dict[str, Any] | None:
    """An owner file's record (its pid an int), or None where it is missing or not one."""
    try:
        owner = read_json(path)
        return {**owner, "pid": int(owner["pid"]), "host": str(owner["host"]), "since": owner["since"]}
    except (OSError, ValueError, KeyError, TypeError):  # UntrustedError is a ValueError
        return None


def _alive(pid: int) -> bool:
    if os.name != "posix":  # signal 0 is a POSIX question; elsewhere the owner file is taken at its word
        return True
    try:
        os.kill(pid, 0)  # signal 0: asks whether the process exists, sends nothing
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def _owner_text(path: Path) -> str:
    o = _read_owner(path)
    if o is None or "command" not in o:
        return "another process (its name is not readable)"
    return f"pid {o['pid']} on {o['host']} since {o['since']} ({o['command']})"


@contextlib.contextmanager
def folder_lock(folder: str | Path, command: str, tidy: bool = False) -> Iterator[None]:
    """Hold ``folder`` for this process while it writes there; a second writer is refused at once,
    naming this one (``FolderBusy``). The OS frees the lock when the process dies, however.
    ``tidy``: a folder this left holding nothing but the lock (a run killed before its first
    checkpoint) is removed on release, so that no empty run folder stays behind."""
    from filelock import FileLock, Timeout

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder / LOCK))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise FolderBusy(
            f"{folder}: in use by {_owner_text(folder / OWNER)}; wait for it to end, or write elsewhere"
        ) from None
    owner = folder / OWNER
    try:
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        record = {"pid": os.getpid(), "host": socket.gethostname(), "since": since, "command": command}
        owner.write_text(json.dumps(record))
        yield
    finally:
        with contextlib.suppress(OSError):
            owner.unlink()
        lock.release()  # the lock file stays: one removed while another process opens it would let two in
        if tidy and all(p.name in META for p in folder.iterdir()):  # ... unless nothing else is there
            with contextlib.suppress(OSError):
                (folder / LOCK).unlink()
                folder.rmdir()
