"""A download's bounds, decided here and not by the server: its bytes (no more than the checked
listing says) and its time (one overall deadline that every socket wait of the hub client keeps),
with the partial files of a stopped download removed.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..untrusted import UntrustedError, printable
from .layout import AgentError, AgentFormatError

T = TypeVar("T")

#: A download's overall deadline in seconds (a hub that drips one byte a second never trips the
#: library's per-read timeout): the default, and the environment variable that sets another.
DEFAULT_DEADLINE_S = 600.0
DEADLINE_ENV = "YAHTZEE_LIGHTNING_HUB_DEADLINE"


class HubDeadlineError(AgentError):
    """A download that did not finish within its deadline (``hub_deadline``); the message says how far it got."""


def hub_deadline() -> float:
    """The deadline a download of an agent has, in seconds: ``$YAHTZEE_LIGHTNING_HUB_DEADLINE`` or
    ``DEFAULT_DEADLINE_S``; a value that is not a number of seconds is refused in one line."""
    raw = os.environ.get(DEADLINE_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_DEADLINE_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 86400):
        raise UntrustedError(f"{DEADLINE_ENV}={printable(repr(raw))}: a number of seconds in (0, 86400] is expected")
    return value


class Transfer:
    """What one download may still do, checked on every chunk the library writes: at most ``limit``
    bytes (what the hub's checked listing names, not what a response header says), until its
    deadline. Once it trips, every later chunk of every file trips too."""

    def __init__(self, repo_id: str, deadline_s: float, repo_type: str = "model") -> None:
        self.repo_id, self.deadline_s, self.repo_type = repo_id, deadline_s, repo_type
        self.ends = time.monotonic() + deadline_s
        self.limit: int | None = None
        self.received = 0
        self.failure: AgentError | None = None
        self._lock = threading.Lock()

    def progress(self) -> str:
        """How far the download got, for a failure line."""
        of = f" of the {self.limit:,} listed" if self.limit is not None else ""
        return f"{self.received:,} bytes received{of}"

    def stop(self, failure: AgentError) -> None:
        """Make every later chunk raise ``failure`` (the first one given stays)."""
        with self._lock:
            self.failure = self.failure or failure

    def add(self, n: int) -> None:
        """Count ``n`` bytes written; raise once the listing's bytes are exceeded or the deadline passed."""
        with self._lock:
            self.received += n
            over = self.limit is not None and self.received > self.limit
        if over:
            self.stop(
                AgentFormatError(
                    f"{self.repo_id}: the hub sent more than the {self.limit:,} bytes its listing names for the "
                    "agent's files; the download was stopped and its partial files removed"
                )
            )
        self.check()

    def check(self) -> None:
        """Raise the failure this download stopped on, or a deadline error once its time is up."""
        if self.failure is None and time.monotonic() > self.ends:
            self.stop(self.deadline_error())
        if self.failure is not None:
            raise self.failure

    def __enter__(self) -> Transfer:
        """While open, every socket read and write of the hub client is bounded by this deadline."""
        bound_hub_sockets()
        with _ACTIVE_LOCK:
            _ACTIVE.add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        with _ACTIVE_LOCK:
            _ACTIVE.discard(self)

    def deadline_error(self) -> HubDeadlineError:
        """The one line for a download that ran out of time."""
        return HubDeadlineError(
            f"{self.repo_id}: the download did not finish within {self.deadline_s:g} s ({self.progress()}); "
            f"stopped, its partial files removed (${DEADLINE_ENV} sets another deadline)"
        )

    def bars(self) -> type:
        """A progress-bar class for ``snapshot_download``: the library reports each chunk it writes to
        it (the snapshot's byte bar), so every chunk is counted and checked here."""
        from huggingface_hub.utils import tqdm as hf_tqdm

        transfer = self

        class Bars(hf_tqdm):  # type: ignore[misc, valid-type]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                self._bytes = kwargs.get("name") == "huggingface_hub.snapshot_download"
                super().__init__(*args, **kwargs)

            def update(self, n: float | None = 1) -> bool | None:
                if self._bytes and n and n > 0:
                    transfer.add(int(n))
                else:
                    transfer.check()
                return super().update(n)

        return Bars


#: The most an agent's downloaded files may weigh in all (the hub's listing says, before any download).
MAX_DOWNLOAD_BYTES = 2 << 30


_ACTIVE: set[Transfer] = set()
_ACTIVE_LOCK = threading.Lock()


def _bounded(timeout: float | None) -> float | None:
    """A socket operation's timeout, cut to the earliest deadline of the downloads under way (each
    read of a server that drips a byte a second waits no longer than the time left); past it, the
    download's failure is raised."""
    with _ACTIVE_LOCK:
        active = min(_ACTIVE, key=lambda t: t.ends, default=None)
    if active is None:
        return timeout
    active.check()
    left = max(active.ends - time.monotonic(), 0.001)
    return left if timeout is None else min(timeout, left)


def _bounded_io(op: Callable[[float | None], T], timeout: float | None) -> T:
    """``op(timeout)`` (a socket operation) with ``_bounded``'s timeout; one that timed out at the
    deadline raises the download's failure (not a timeout the library would retry, with a warning)."""
    try:
        return op(_bounded(timeout))
    except Exception:
        _bounded(None)  # past the deadline: its failure
        raise


def bound_hub_sockets() -> None:
    """Wrap the network backend of ``huggingface_hub``'s HTTP client (its connection pools) so that
    every connect, read and write is bounded by ``_bounded``: headers and bodies alike. Where the
    client is not built as expected, nothing is wrapped (the caller's thread still returns at the
    deadline: ``within_deadline``)."""
    from huggingface_hub.utils import get_session

    session = get_session()
    transports = [getattr(session, "_transport", None), *getattr(session, "_mounts", {}).values()]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is not None and not isinstance(backend, _BoundedBackend):
            pool._network_backend = _BoundedBackend(backend)  # type: ignore[union-attr]


class _BoundedStream:
    """A connection's stream whose every read and write waits no longer than the deadline left."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return _bounded_io(lambda left: self._inner.read(max_bytes, left), timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        _bounded_io(lambda left: self._inner.write(buffer, left), timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, *args: Any, **kwargs: Any) -> _BoundedStream:
        return _BoundedStream(self._inner.start_tls(*args, **kwargs))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _BoundedBackend:
    """A network backend whose connections are ``_BoundedStream`` s."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, *args: Any, **kwargs: Any) -> Any:
        return _BoundedStream(
            _bounded_io(lambda left: self._inner.connect_tcp(host, port, left, *args, **kwargs), timeout)
        )

    def connect_unix_socket(self, path: str, timeout: float | None = None, *args: Any, **kwargs: Any) -> Any:
        return _BoundedStream(
            _bounded_io(lambda left: self._inner.connect_unix_socket(path, left, *args, **kwargs), timeout)
        )

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def within_deadline(transfer: Transfer, work: Callable[[], T], cache_dir: str | Path | None) -> T:
    """``work()`` (a download) run until ``transfer``'s deadline: past it, the caller gets the
    deadline's one line at once (however slowly the server drips, in its headers too) and the
    download stops at its next chunk. On any failure the partial (``.incomplete``) files of the
    repo are removed from the cache."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            with transfer:  # until the work ends, past the deadline too: its sockets stay bounded
                box["value"] = work()
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e

    worker = threading.Thread(target=run, name=f"download {transfer.repo_id}", daemon=True)
    worker.start()
    worker.join(max(0.0, transfer.ends - time.monotonic()))
    if worker.is_alive():
        transfer.stop(transfer.deadline_error())
        box["error"] = transfer.failure
    if "error" in box:
        remove_partial_files(transfer.repo_id, cache_dir, transfer.repo_type)
        raise box["error"]
    return box["value"]


def remove_partial_files(repo_id: str, cache_dir: str | Path | None, repo_type: str = "model") -> None:
    """The ``.incomplete`` blobs a stopped download of ``repo_id`` left in the cache, removed."""
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    try:
        repo = Path(cache_dir or constants.HF_HUB_CACHE) / repo_folder_name(repo_id=repo_id, repo_type=repo_type)
        for partial in (repo / "blobs").glob("*.incomplete"):
            partial.unlink(missing_ok=True)
    except (OSError, ValueError):
        pass  # a cache that cannot be listed: the library resumes or replaces the file next time
