"""Fetching an agent from a hub: the commit pinned and checked, every file checked against its hub
checksum (a damaged cached file is downloaded again, never loaded), failures worded in one line.

A hub's answers are data from outside: the commit id it names becomes a folder name in the cache,
its file names paths and its sizes downloads, so each is checked (``untrusted.py``) before the
download library uses it.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import TypeVar

from ..shipped import agent as shipped_agent
from ..untrusted import UntrustedError, check_commit_id, check_relative_path, printable
from .layout import ARTEFACT_PATTERNS, AgentError, AgentFormatError, AgentNotFoundError
from .transfer import MAX_DOWNLOAD_BYTES, Transfer, hub_deadline, within_deadline

T = TypeVar("T")


def resolve_folder(
    id_or_path: str | Path,
    revision: str | None = None,
    cache_dir: str | Path | None = None,
    local_files_only: bool = False,
    token: str | None = None,
    hub_only: bool = False,
    repo_type: str = "model",
    patterns: list[str] | None = None,
) -> Path:
    """A local agent folder as is; a shipped agent's name (``distilled-128x2``: the package's own
    folder, ``yahtzee_lightning/shipped.py``, from any folder, no hub asked); a hub id downloaded
    (or found in the cache when offline).

    ``hub_only``: ``id_or_path`` is a hub id (``pull``'s argument), so a failure speaks of the hub
    repo alone, not of a local folder that was never asked for. ``repo_type`` and ``patterns`` (the
    files wanted; an agent's by default) let a study's weights (a dataset repo) come the same way.

    Every downloaded file is checked against its hub checksum (``damaged_files``): a damaged
    one, or a plain file where the cache keeps a link to a checked blob, is downloaded again with a
    warning, or, offline, is an ``AgentFormatError``. Hub failures
    that mean "no such agent" become ``AgentNotFoundError``; other network errors (a server
    error, a refused token) pass through unchanged.
    """
    path = Path(id_or_path)
    if path.is_dir():
        return path
    if path.suffix == ".ckpt" or path.is_file():  # a training checkpoint is not an agent yet
        what = "a file, not an agent folder" if path.is_file() else "no such file (nor an agent folder)"
        raise AgentFormatError(
            f"{id_or_path}: {what}; a checkpoint of fit becomes an agent folder with: "
            f"yahtzee-lightning export {id_or_path} my-agent"
        )
    if revision is None and (ours := shipped_agent(str(id_or_path))) is not None:
        return ours
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        HfHubHTTPError,
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    transfer = Transfer(str(id_or_path), hub_deadline(), repo_type)
    offline = local_files_only
    patterns = ARTEFACT_PATTERNS if patterns is None else patterns

    def download(force: bool) -> Path:
        return Path(
            snapshot_download(
                str(id_or_path),
                revision=pinned,
                cache_dir=cache_dir,
                repo_type=repo_type,
                local_files_only=offline,  # unpinned: the library may not ask the hub (its answer is unchecked)
                token=token,
                allow_patterns=patterns,
                force_download=force,
                tqdm_class=transfer.bars(),
            )
        )

    try:
        pinned, unreachable = (revision, None)
        if not local_files_only:
            pinned, unreachable = within_deadline(
                transfer,
                lambda: pin_revision(str(id_or_path), revision, token, transfer, repo_type, patterns),
                cache_dir,
            )
        offline = offline or unreachable is not None
        try:
            folder = within_deadline(transfer, lambda: download(force=False), cache_dir)
        except LocalEntryNotFoundError:
            if isinstance(unreachable, HfHubHTTPError):  # not cached: the hub's answer says more than "offline"
                raise unreachable from None
            raise
        except AgentError:
            raise
        except ValueError as e:  # the library's own guard on a path it would not write (a hostile listing)
            if isinstance(e, HFValidationError):
                raise
            raise AgentFormatError(
                f"{id_or_path}: the hub's answer names a path outside its repo ({printable(e)})"
            ) from None
        if pinned is not None and pinned != revision:
            remember_revision(folder, revision or "main", pinned)
        damaged = damaged_files(folder)
        if damaged:  # never load a damaged download: fetch it again, or say why that cannot be done
            from huggingface_hub import is_offline_mode

            if offline or is_offline_mode():
                raise AgentFormatError(
                    f"{id_or_path}: the cached {', '.join(damaged)} do not match their hub checksum (damaged, "
                    "or not a link to a checked blob); "
                    "go online to download them again"
                )
            logging.getLogger(__name__).warning(
                "warning: %s: cached %s do not match their hub checksum; downloading again", id_or_path, damaged
            )
            for name in damaged:  # a plain file is not replaced by a new download: remove it (it is the cache's)
                if not (folder / name).is_symlink():
                    (folder / name).unlink()
            transfer.received = 0  # the listing's bytes again, for the files fetched again
            folder = within_deadline(transfer, lambda: download(force=True), cache_dir)
            if damaged := damaged_files(folder, plain_ok=True):
                raise AgentFormatError(f"{id_or_path}: {', '.join(damaged)} do not match their hub checksum")
    except HFValidationError as e:
        if hub_only:
            hint = shipped_hint(id_or_path)
            raise AgentNotFoundError(f"{id_or_path}: not a hub repo id (user/name) ({e}){hint}") from e
        raise AgentNotFoundError(
            f"{id_or_path}: no such agent folder, and not a hub repo id ({e}){shipped_hint(id_or_path)}"
        ) from e
    except RevisionNotFoundError as e:
        raise AgentNotFoundError(f"{id_or_path}: the hub repo has no revision {revision!r}") from e
    except RepositoryNotFoundError as e:
        what = "no such agent folder, nor a hub repo you can read"
        if hub_only:
            what = "no hub repo by that id that you can read"
        raise AgentNotFoundError(f"{id_or_path}: {what}{shipped_hint(id_or_path)}") from e
    except LocalEntryNotFoundError as e:
        where = "" if hub_only else "no such agent folder; "
        raise AgentNotFoundError(
            f"{id_or_path}: {where}the hub is unreachable or offline, and this hub repo is not in the local cache"
            + shipped_hint(id_or_path)
        ) from e
    return folder


def shipped_hint(id_or_path: str | Path) -> str:
    """For a bare name that is nothing (no ``user/``: not a hub repo of a user), the names a user
    may have meant: the agents shipped with the package."""
    from ..shipped import agent_names

    names = agent_names() if "/" not in str(id_or_path) else []
    return f" (shipped agents, found by name: {', '.join(names)})" if names else ""


def damaged_files(folder: Path, plain_ok: bool = False) -> list[str]:
    """Files of a hub snapshot whose content does not match the name of their blob in the HF cache.

    The cache names a blob by its hub checksum: the sha256 for LFS files (the weights), the git
    blob id (sha1) for the others. A plain file where the cache keeps a link has nothing to be
    checked against: it counts as damaged, unless ``plain_ok`` (a file just downloaded again, in
    a cache that cannot make links).
    """
    damaged = []
    for f in sorted(folder.rglob("*")):
        if not f.is_file():
            continue
        if not f.is_symlink():
            if not plain_ok:
                damaged.append(f.relative_to(folder).as_posix())
            continue
        blob, data = f.resolve().name, f.read_bytes()
        if len(blob) == 64:
            actual = hashlib.sha256(data).hexdigest()
        elif len(blob) == 40:
            actual = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        else:
            continue
        if actual != blob:
            damaged.append(f.relative_to(folder).as_posix())
    return damaged


def hub_errors() -> tuple[type[BaseException], ...]:
    """What ``huggingface_hub`` raises when the hub cannot be reached or refuses a request (for CLIs to report)."""
    from huggingface_hub import errors

    # ``errors.HTTPError``: the HTTP client's base error (connection refused, timeout), as huggingface_hub exports it.
    return (errors.HfHubHTTPError, getattr(errors, "HTTPError", OSError), OSError)


def pin_revision(
    repo_id: str,
    revision: str | None,
    token: str | None,
    transfer: Transfer | None = None,
    repo_type: str = "model",
    patterns: list[str] | None = None,
) -> tuple[str | None, BaseException | None]:
    """The commit the hub names for ``revision``, checked before anything is written, and None;
    or, where the hub cannot be reached or fails, ``revision`` and the failure.

    ``huggingface_hub`` uses the commit id a server answers as a file name in its cache
    (``snapshots/{sha}/``, ``trees/{sha}.json``) without checking it: a mirror or an
    ``HF_ENDPOINT`` that answers ``../../x`` would write outside the cache. So the commit is asked
    for here, checked to be 40 hex digits, and the download pinned to it (the library then asks no
    more); the file names and sizes the hub lists for it are checked too (plain relative paths, at
    most ``MAX_DOWNLOAD_BYTES`` in all; ``transfer`` may then receive no more than their sum). Where
    the hub cannot be reached or answers an error, the download reads the cache only (whose commit
    ids were checked when they were written): the library would otherwise ask the hub again itself
    and use its answer unchecked.
    """
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError, RevisionNotFoundError
    from huggingface_hub.utils import filter_repo_objects

    api = HfApi(token=token)
    try:
        info = api.repo_info(repo_id, revision=revision, repo_type=repo_type)
    except (RepositoryNotFoundError, RevisionNotFoundError):
        raise
    except (HfHubHTTPError, OSError, *hub_errors()) as e:
        return revision, e  # unreachable or failing: the cache decides
    where = f"{repo_id}" + (f"@{revision}" if revision else "")
    try:
        sha = check_commit_id(info.sha, where)
        tree = api.list_repo_tree(repo_id, revision=sha, recursive=True, repo_type=repo_type)
        files = [f for f in tree if hasattr(f, "size")]
        for f in files:
            check_relative_path(f.path, where)
        wanted = set(filter_repo_objects([f.path for f in files], allow_patterns=patterns or ARTEFACT_PATTERNS))
        sizes = [f.size for f in files if f.path in wanted]
        if any(not isinstance(s, int) or s < 0 for s in sizes) or sum(sizes) > MAX_DOWNLOAD_BYTES:
            raise UntrustedError(
                f"{where}: the hub lists {printable(sizes)} bytes for the files wanted (at most "
                f"{MAX_DOWNLOAD_BYTES:,} in all are downloaded)"
            )
    except UntrustedError as e:
        raise AgentFormatError(str(e)) from None
    except ValueError as e:  # the library's own parsing of a malformed answer
        raise AgentFormatError(f"{where}: the hub's answer is malformed ({printable(e)})") from None
    if transfer is not None:
        transfer.limit = sum(sizes)
    return sha, None


def remember_revision(snapshot: Path, revision: str, sha: str) -> None:
    """Record in the cache that ``revision`` (a branch or tag) was ``sha``, as the library does
    when it resolves a revision itself: an offline load of the same id then finds the snapshot."""
    refs = snapshot.parent.parent / "refs"
    try:
        check_relative_path(revision, "revision")
        (refs / revision).parent.mkdir(parents=True, exist_ok=True)
        (refs / revision).write_text(sha)
    except (UntrustedError, OSError):
        pass  # the cache keeps no name for it: an offline load asks for the commit instead


def hub_failure(repo_id: str, error: BaseException) -> str:
    """One line for a hub that cannot be reached or refuses: the error's first line, not its traceback."""
    from huggingface_hub import constants

    detail = printable((str(error).strip().splitlines() or [type(error).__name__])[0])  # a server's words: as text
    return f"{repo_id}: the hub at {constants.ENDPOINT} could not be reached or refused the request ({detail})"
